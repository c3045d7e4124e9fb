"""The session's calls of lifecycle hooks (issue 17): kept here so the loop stays small."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from codingcode.agent.sessions.store import SessionStore
    from codingcode.hooks.lifecycle import LifecycleHooks

T = TypeVar("T")


class HookedSession(Protocol):
    """What the hook calls read and set of the session (an ``AgentSession``); a protocol,
    so that this module never imports the session that imports it."""

    session_id: str
    depth: int
    mode: str
    hook_source: str | None
    _hooks_started: bool

    @property
    def store(self) -> SessionStore | None: ...


def _transcript(session: HookedSession) -> str:
    return str(session.store.path) if session.store is not None else ""


async def before_prompt(
    session: HookedSession, hooks: LifecycleHooks, prompt: str
) -> tuple[str, str | None]:
    """SessionStart (once per source) then UserPromptSubmit: the prompt with the context the
    hooks added, and the message to show when a hook blocked it (then nothing is sent)."""
    if session.depth > 0:  # a sub-agent's task is not a user's prompt
        return prompt, None
    if session.store is not None:
        # The session is saved from its first prompt on: from now, so that the hooks of
        # this prompt (SessionStart, UserPromptSubmit) find the transcript they are given.
        session.store.begin()
    hooks.transcript_path = _transcript(session)
    extra: list[str] = []
    if session.hook_source is not None:
        source, session.hook_source = session.hook_source, None
        session._hooks_started = True
        started = await hooks.fire(
            "SessionStart", {"source": source}, session_id=session.session_id
        )
        extra += started.context
        if started.stop:
            return prompt, f"A SessionStart hook stopped the agent: {started.stop_reason}"
    submitted = await hooks.fire(
        "UserPromptSubmit",
        {"prompt": prompt, "permission_mode": session.mode},
        session_id=session.session_id,
    )
    if submitted.blocked:
        why = submitted.reason or "no reason given"
        return prompt, f"The prompt was blocked by a UserPromptSubmit hook: {why}"
    if submitted.stop:
        return prompt, f"A UserPromptSubmit hook stopped the agent: {submitted.stop_reason}"
    extra += submitted.context
    if extra:
        prompt += "\n\n" + "\n".join(f"[hook context] {c}" for c in extra)
    return prompt, None


def _bus(session: Any) -> Any:
    return getattr(getattr(session, "runner", None), "hook_bus", None)


def stop_pending(session: Any) -> bool:
    """A hook of this session answered ``continue: false`` and the step is not over yet."""
    bus = _bus(session)
    return bus is not None and session.session_id in bus.stops


def take_stop(session: Any) -> str | None:
    """The message of a ``continue: false`` answer for this session (cleared), or None."""
    bus = _bus(session)
    return bus.take_stop(session.session_id) if bus is not None else None


async def stop_hook(
    session: HookedSession, hooks: LifecycleHooks, answer: str, active: bool
) -> str | None:
    """Stop (SubagentStop in a sub-agent): the message that makes the agent go on, or None."""
    event = "SubagentStop" if session.depth > 0 else "Stop"
    if not hooks.has(event):
        return None
    result = await hooks.fire(
        event,
        {"stop_hook_active": active, "last_assistant_message": answer},
        session_id=session.session_id,
    )
    if not result.blocked or result.stop:
        return None
    why = result.reason or "a Stop hook asked you to continue"
    return f"A {event} hook did not let you stop yet: {why}"


#: How long the app waits for the user's next prompt before Notification hooks fire
#: (``idle_prompt``, as Claude Code after 60 s); ``CODINGCODE_IDLE_NOTIFICATION_S`` overrides.
IDLE_NOTIFICATION_S = 60.0


def idle_delay() -> float:
    import os

    try:
        return max(0.0, float(os.environ.get("CODINGCODE_IDLE_NOTIFICATION_S", "")))
    except ValueError:
        return IDLE_NOTIFICATION_S


async def wait_for_user(session: Any, ask: Callable[[], Awaitable[T]]) -> T:
    """``await ask()`` (the app's input prompt); if the user takes longer than
    :func:`idle_delay`, the Notification hooks fire once (``idle_prompt``). Typing cancels a
    notification still running; exceptions of ``ask`` (Ctrl-C, Ctrl-D) pass through as
    they are."""
    import anyio

    from codingcode.cancel import first_error

    hooks = session.runner.lifecycle
    if hooks is None or not hooks.has("Notification"):
        return await ask()

    async def notify() -> None:
        await anyio.sleep(idle_delay())
        await hooks.fire(
            "Notification",
            {
                "message": "codingcode is waiting for your input",
                "notification_type": "idle_prompt",
            },
            session_id=session.session_id,
        )

    got: list[T] = []
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(notify)
            try:
                got.append(await ask())
            finally:
                tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise first_error(group) from None
    return got[0]
