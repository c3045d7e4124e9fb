"""The hook bus: Python PreToolUse hooks, Python hooks of the other events and listeners of
approval events, registered in code (``build_runner(..., hooks=bus)``). It also carries
``tool.approval.post``: every audit record, for whoever listens."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from codingcode.hooks.settings import EVENTS

if TYPE_CHECKING:
    from codingcode.approval.pipeline import ToolCall

PRE_TOOL_USE = "tool.approval.pre_use"
POST_APPROVAL = "tool.approval.post"

HookDecision = Literal["allow", "deny", "ask", "continue"]


@dataclass(frozen=True)
class HookAnswer:
    decision: HookDecision = "continue"
    reason: str = ""
    modified_input: dict[str, Any] | None = None
    #: ``continue: false`` (with its ``stopReason``): the call does not run and the agent
    #: stops after this step. None: go on.
    stop_reason: str | None = None


PythonHook = Callable[["ToolCall"], Awaitable["HookAnswer | None"]]
#: A ``prompt`` hook's model call: the prompt in, the answer's text out.
HookModel = Callable[[str], Awaitable[str]]
Listener = Callable[[dict[str, Any]], None]


@dataclass
class HookBus:
    """Python PreToolUse hooks and listeners of approval events, registered in code."""

    pre_tool_use: list[tuple[str, PythonHook]] = field(default_factory=list)
    listeners: dict[str, list[Listener]] = field(default_factory=dict)
    #: Python hooks of the other events (codingcode.hooks.lifecycle), by event name.
    hooks: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    #: ``continue: false`` answers of any event, by session id: the message for the user.
    stops: dict[str, str] = field(default_factory=dict)
    #: One model call (the session's model, no tools) for ``prompt`` hooks; None: no
    #: model in this run (``codingcode tool``, ``check``), and prompt hooks fail.
    ask_model: HookModel | None = None

    def add_pre_tool_use(self, hook: PythonHook, *, matcher: str = "*") -> None:
        self.pre_tool_use.append((matcher, hook))

    def add_hook(self, event: str, hook: Any, *, matcher: str = "*") -> None:
        """A Python hook for ``event`` (PostToolUse, Stop, ...): an async function taking a
        ``HookEvent`` and answering with Claude Code's JSON output as a dict, or None."""
        if event not in EVENTS or event == "PreToolUse":
            raise ValueError(f"unknown hook event {event!r}; use add_pre_tool_use for PreToolUse")
        self.hooks.setdefault(event, []).append((matcher, hook))

    def request_stop(self, session_id: str, message: str) -> None:
        """A hook answered ``continue: false``: the session ``session_id`` stops after the
        step it is in (the first request's message is kept)."""
        self.stops.setdefault(session_id, message)

    def take_stop(self, session_id: str) -> str | None:
        """The stop requested for ``session_id`` (cleared), or None."""
        return self.stops.pop(session_id, None)

    def on(self, event: str, listener: Listener) -> None:
        self.listeners.setdefault(event, []).append(listener)

    def emit(self, event: str, payload: dict[str, Any]) -> None:
        for listener in self.listeners.get(event, []):
            # A listener's failure must not change a decision already made.
            with contextlib.suppress(Exception):
                listener(payload)
