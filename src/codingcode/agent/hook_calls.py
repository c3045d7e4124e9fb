"""The session's calls of lifecycle hooks (issue 17): kept here so the loop stays small."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from codingcode.agent.sessions.store import SessionStore
    from codingcode.approval.lifecycle import LifecycleHooks


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
    hooks.transcript_path = _transcript(session)
    extra: list[str] = []
    if session.hook_source is not None:
        source, session.hook_source = session.hook_source, None
        session._hooks_started = True
        started = await hooks.fire(
            "SessionStart", {"source": source}, session_id=session.session_id
        )
        extra += started.context
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
