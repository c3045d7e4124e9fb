"""The tool system's core types: definitions, the execution context and the registry."""

from codingcode.cancel import CancelSignal
from codingcode.tools.definition import (
    SessionState,
    ToolAnnotations,
    ToolDefinition,
    ToolExecCtx,
    tool,
)
from codingcode.tools.service import ToolService

__all__ = [
    "CancelSignal",
    "SessionState",
    "ToolAnnotations",
    "ToolDefinition",
    "ToolExecCtx",
    "ToolService",
    "tool",
]
