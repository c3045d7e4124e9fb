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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        """The message :meth:`to_json` wrote (raises KeyError/TypeError/ValueError if not)."""
        role = data["role"]
        if role not in ("user", "assistant", "tool"):
            raise ValueError(f"unknown role {role!r}")
        calls = [
            ToolCall(
                str(c["id"]), str(c["name"]), c.get("arguments"), str(c.get("raw_arguments", ""))
            )
            for c in data.get("tool_calls") or []
        ]
        results = [
            ToolResult(
                str(r["call_id"]),
                str(r["name"]),
                str(r["content"]),
                bool(r.get("is_error", False)),
                r.get("error_kind"),
            )
            for r in data.get("results") or []
        ]
        return cls(role, str(data.get("text") or ""), calls, results)


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


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


@dataclass
class ToolDecision:
    """The approval pipeline decided a call (before it ran, or instead of running it)."""

    session_id: str
    call: ToolCall
    decision: str
    layer: str
    reason: str
    rule: str | None = None


@dataclass
class UsageReported:
    """One model response's tokens, and where the session stands."""

    session_id: str
    input_tokens: int
    output_tokens: int
    #: True when the provider sent no figures and these are estimates.
    estimated: bool
    session_input_tokens: int
    session_output_tokens: int
    #: Tokens the conversation now takes in the context window, and the window.
    context_tokens: int
    context_window: int


@dataclass
class Compacted:
    """The older part of the conversation was replaced by a summary."""

    session_id: str
    #: "auto" (threshold), "overflow" (the endpoint said the context was too long), "manual".
    reason: str
    tokens_before: int
    tokens_after: int
    messages_summarized: int


@dataclass
class ModelRetry:
    """A model request failed in a way worth another try; the next attempt starts after
    ``wait_s`` (front ends show it while it waits)."""

    session_id: str
    wait_s: float
    #: The attempt about to be made, and how many there will be at most.
    attempt: int
    attempts: int
    #: Why (one line: "connection refused", "HTTP 503", ...).
    reason: str

    def line(self) -> str:
        return (
            f"retrying in {self.wait_s:.0f} s (attempt {self.attempt} of {self.attempts}): "
            f"{self.reason}"
            if self.wait_s >= 1
            else f"retrying in {self.wait_s:.1f} s (attempt {self.attempt} of {self.attempts}): "
            f"{self.reason}"
        )


@dataclass
class ToolProgress:
    """A running call's progress: when it started (monotonic) and its last output lines
    (sent when it starts and then at most a few times a second while output arrives)."""

    session_id: str
    call: ToolCall
    started: float
    last_lines: list[str]


AgentEvent = (
    ModelRequestStarted
    | ToolProgress
    | ModelRetry
    | ToolDecision
    | UsageReported
    | Compacted
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
