"""The tool system's core types: definitions, the execution context and the registry."""

from codingcode.cancel import CancelSignal
from codingcode.tools.definition import (
    ArgRole,
    Effect,
    SessionState,
    ToolAnnotations,
    ToolDefinition,
    ToolExecCtx,
    ToolOrigin,
    tool,
)
from codingcode.tools.service import ToolService

__all__ = [
    "ArgRole",
    "CancelSignal",
    "Effect",
    "SessionState",
    "ToolAnnotations",
    "ToolDefinition",
    "ToolExecCtx",
    "ToolOrigin",
    "ToolService",
    "tool",
]
