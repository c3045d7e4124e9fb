"""The conversation in a provider-neutral form, and the events a running agent emits.

Providers translate :class:`Message` lists to and from their own wire formats (Chat
Completions, Messages); front ends (the terminal app, ``codingcode run --json``) only ever
see these types.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal


@dataclass
class ToolCall:
    """One call the model asked for. ``arguments`` is None when its JSON did not parse."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    #: The arguments exactly as the model sent them (for the error message when invalid).
    raw_arguments: str = ""


@dataclass
class ToolResult:
    call_id: str
    name: str
    content: str
    is_error: bool = False
    #: The AgentError kind when the call failed (``denied``, ``cancelled``, ...).
    error_kind: str | None = None


@dataclass
class Message:
    role: Literal["user", "assistant", "tool"]
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    #: For role ``tool``: the results of the previous assistant message's calls, in order.
    results: list[ToolResult] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


# -- streaming from a provider ------------------------------------------------------------
@dataclass
class TextDelta:
    text: str


@dataclass
class TurnComplete:
    message: Message
    stop_reason: str = ""
    usage: Usage = field(default_factory=Usage)


StreamEvent = TextDelta | TurnComplete


# -- events of a running agent (for front ends) -------------------------------------------
@dataclass
class ModelRequestStarted:
    """A request went to the model; its answer is awaited (front ends show they wait)."""

    session_id: str


@dataclass
class AgentTextDelta:
    session_id: str
    text: str


@dataclass
class AgentMessage:
    """The model finished one response (text and the calls it asked for)."""

    session_id: str
    message: Message


@dataclass
class ToolCallStarted:
    session_id: str
    call: ToolCall


@dataclass
class ToolCallFinished:
    session_id: str
    call: ToolCall
    result: ToolResult


@dataclass
class TodosChanged:
    session_id: str
    todos: list[dict[str, str]]


@dataclass
class SubAgentStarted:
    session_id: str
    agent: str
    prompt: str


@dataclass
class SubAgentFinished:
    session_id: str
    agent: str
    answer: str
    ok: bool


AgentEvent = (
    ModelRequestStarted
    | AgentTextDelta
    | AgentMessage
    | ToolCallStarted
    | ToolCallFinished
    | TodosChanged
    | SubAgentStarted
    | SubAgentFinished
)


def event_to_json(event: AgentEvent) -> dict[str, Any]:
    """A JSON-ready record of an event (``type`` is the event's snake_case name)."""
    name = type(event).__name__
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
    return {"type": snake, **asdict(event)}
