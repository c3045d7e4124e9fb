"""What the agent loop needs from a model: one streamed response per request."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

from codingcode.agent.transcript import Message, StreamEvent, ToolCall
from codingcode.tools.definition import ToolDefinition


class ModelProvider(Protocol):
    name: str
    model: str

    def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[StreamEvent]:
        """Stream one response: text deltas, then exactly one TurnComplete."""
        ...

    async def aclose(self) -> None: ...


def parse_arguments(call_id: str, name: str, raw: str) -> ToolCall:
    """A tool call from the raw JSON text of its arguments (None when it is not an object)."""
    text = raw.strip()
    if not text:
        return ToolCall(call_id, name, {}, raw)
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError:
        return ToolCall(call_id, name, None, raw)
    return ToolCall(call_id, name, value if isinstance(value, dict) else None, raw)


def error_message(exc: Any) -> str:
    """The human part of an SDK's API error (its JSON ``error.message`` when there is one)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", exc))
