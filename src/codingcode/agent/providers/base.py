"""What the agent loop needs from a model: one streamed response per request."""

from __future__ import annotations

import hashlib
import json
import re
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


#: Phrases of the endpoints' "your conversation is too long" refusals (HTTP 400).
_CONTEXT_PHRASES = (
    "context_length_exceeded",
    "prompt is too long",
    "maximum context length",
    "context length",
    "context window",
    "too many tokens",
)


def is_context_overflow(exc: Any) -> bool:
    """Whether an SDK's API error says the request is longer than the model's context window
    (OpenAI: code ``context_length_exceeded``; Anthropic: "prompt is too long")."""
    if getattr(exc, "status_code", None) not in (400, 413):
        return False
    if getattr(exc, "code", None) == "context_length_exceeded":
        return True
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("code") == "context_length_exceeded":
        return True
    text = error_message(exc).lower()
    return any(p in text for p in _CONTEXT_PHRASES)


_LIMIT_PATTERNS = (
    re.compile(r"maximum context length is (\d+)"),
    re.compile(r"> ?(\d+) maximum"),
    re.compile(r"context (?:window|length|limit)[^0-9]{0,20}(\d{3,})"),
)


def context_limit(exc: Any) -> int | None:
    """The window an overflow refusal names ("maximum context length is 8192 tokens",
    "prompt is too long: 9000 tokens > 8192 maximum"), if it names one."""
    text = error_message(exc)
    for pattern in _LIMIT_PATTERNS:
        m = pattern.search(text)
        if m:
            return int(m.group(1))
    return None


_WIRE_OK = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class WireNames:
    """Tool names as the APIs accept them, and back.

    Both APIs allow only ``[A-Za-z0-9_-]{1,64}`` in a tool name, while MCP tools are named
    ``server:tool`` (SPEC L3). Each request maps every offered name to a valid one
    (``github:create_issue`` → ``github__create_issue``; a clash or an over-long name gets a
    short hash) and maps the model's calls back, so the rest of codingcode only sees real names.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self._to_wire: dict[str, str] = {}
        self._from_wire: dict[str, str] = {}
        for name in names:
            self.add(name)

    def add(self, name: str) -> str:
        if name in self._to_wire:
            return self._to_wire[name]
        wire = (
            name
            if _WIRE_OK.match(name)
            else re.sub(r"[^A-Za-z0-9_-]", "_", name.replace(":", "__"))
        )
        if len(wire) > 64 or wire in self._from_wire or not wire:
            digest = hashlib.sha1(name.encode()).hexdigest()[:8]
            wire = f"{wire[:55]}_{digest}"
        self._to_wire[name] = wire
        self._from_wire[wire] = name
        return wire

    def to_wire(self, name: str) -> str:
        return self.add(name)

    def from_wire(self, wire: str) -> str:
        return self._from_wire.get(wire, wire)
