"""The hook lifecycle beyond PreToolUse (issue 17), in Claude Code's shapes.

Every event's command hooks get JSON on stdin (``session_id``, ``transcript_path``,
``cwd``, ``hook_event_name`` and the event's fields) and answer with an exit code and,
optionally, JSON on stdout (``continue``, ``stopReason``, ``suppressOutput``,
``systemMessage``, ``decision``, ``reason``, ``hookSpecificOutput``). Exit 2 blocks where
the event can block (its stderr is the reason); any other failure — another exit code, a
timeout, a crash, an answer that is not JSON — is reported to the user once per hook and
never allows anything: for PermissionRequest it is no answer (the user is asked, or a
headless run denies).

The matching hooks of one event run in parallel; the same command twice runs once.
Python hooks on the :class:`HookBus` (``bus.add_hook(event, fn)``) get a :class:`HookEvent`
and answer with the same JSON shape as a dict (or None).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

import anyio

from codingcode.approval.confirm import Answer, Confirmer, ConfirmRequest, Reply
from codingcode.approval.pipeline import PERMISSION_HOOK, LayerResult, PermissionHooks, ToolCall
from codingcode.errors import AgentError, ErrorKind
from codingcode.hooks.bus import HookBus
from codingcode.hooks.pre_tool_use import hook_tool_input, if_matches, run_hook
from codingcode.hooks.settings import CommandHook, matcher_matches

#: Events whose exit code 2 / ``decision: block`` means something (the rest only report).
BLOCKING = frozenset({"PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop"})
#: Events whose ``continue: false`` stops the agent after the step it fired in (Stop and
#: SubagentStop stop it anyway; SessionEnd comes after the end).
STOPPING = frozenset(
    {
        "PostToolUse",
        "UserPromptSubmit",
        "SessionStart",
        "PreCompact",
        "Notification",
        "PermissionRequest",
    }
)
#: Events whose matcher is matched against something: the tool name, or the source.
_MATCHED_ON = {
    "PreToolUse": "tool_name",
    "PostToolUse": "tool_name",
    "PostToolUseFailure": "tool_name",
    "PermissionRequest": "tool_name",
    "SessionStart": "source",
    "SessionEnd": "reason",
    "PreCompact": "trigger",
    "Notification": "notification_type",
}
#: At most this many hook processes of one event run at once (the rest wait their turn).
MAX_PARALLEL = 8


class _Common(TypedDict):
    session_id: str
    transcript_path: str
    cwd: str
    hook_event_name: str


class PostToolUseInput(_Common):
    tool_name: str
    tool_input: dict[str, Any]
    #: The result, or for a call that failed the error message given to the model.
    tool_response: str
    tool_use_id: str
    permission_mode: str
    #: The call failed (it ran, or started, and raised); ``tool_response`` is the error.
    is_error: bool


class PermissionRequestInput(_Common):
    tool_name: str
    tool_input: dict[str, Any]
    permission_mode: str


class UserPromptSubmitInput(_Common):
    prompt: str
    permission_mode: str


class StopInput(_Common):
    stop_hook_active: bool
    last_assistant_message: str


class SessionStartInput(_Common):
    source: str


class SessionEndInput(_Common):
    reason: str


class PreCompactInput(_Common):
    trigger: str
    custom_instructions: str


class NotificationInput(_Common):
    message: str
    notification_type: str


#: The payload's type for each event (SubagentStop has Stop's): ``cast(PAYLOADS[...], ...)``.
PAYLOADS: dict[str, type] = {
    "PostToolUse": PostToolUseInput,
    "PermissionRequest": PermissionRequestInput,
    "UserPromptSubmit": UserPromptSubmitInput,
    "Stop": StopInput,
    "SubagentStop": StopInput,
    "SessionStart": SessionStartInput,
    "SessionEnd": SessionEndInput,
    "PreCompact": PreCompactInput,
    "Notification": NotificationInput,
}


@dataclass(frozen=True)
class HookEvent:
    """What a Python hook receives: the event's name and the same input a command gets."""

    name: str
    payload: dict[str, Any]


PythonLifecycleHook = Callable[[HookEvent], Awaitable["dict[str, Any] | None"]]
Notify = Callable[[str], None]


def _stderr_notify(line: str) -> None:
    print(f"codingcode: {line}", file=sys.stderr)


@dataclass
class HookResult:
    """The combined answer of one event's hooks."""

    #: Exit 2 or ``decision: block`` (PostToolUse: the result is an error; UserPromptSubmit:
    #: the prompt is not sent; Stop: the agent goes on).
    blocked: bool = False
    reason: str = ""
    #: ``additionalContext`` (and plain stdout of UserPromptSubmit / SessionStart hooks).
    context: list[str] = field(default_factory=list)
    #: ``continue: false``: the agent stops after this event.
    stop: bool = False
    stop_reason: str = ""
    #: PermissionRequest: "allow" / "deny" / None (no answer).
    permission: Literal["allow", "deny"] | None = None
    permission_reason: str = ""
    #: A hook failed (for PermissionRequest this withholds any allow).
    failed: bool = False


@dataclass
class _One:
    blocked: bool = False
    reason: str = ""
    context: str = ""
    stop: bool = False
    stop_reason: str = ""
    permission: Literal["allow", "deny"] | None = None
    permission_reason: str = ""
    failure: str = ""
    message: str = ""
    #: ``suppressOutput: true``: what the hook said is not echoed to the user (its
    #: ``systemMessage``, meant for the user, still is).
    quiet: bool = False


class LifecycleHooks:
    """Runs the command hooks and Python hooks of every event but PreToolUse."""

    def __init__(
        self,
        hooks: list[CommandHook],
        bus: HookBus | None,
        project: Path,
        *,
        notify: Notify = _stderr_notify,
    ) -> None:
        self.hooks = [h for h in hooks if h.event != "PreToolUse"]
        self.bus = bus or HookBus()
        self.project = project
        self.notify = notify
        #: The session's transcript file, when it is saved (set by the session).
        self.transcript_path = ""
        self._shown: set[str] = set()
        #: The ``once`` hooks that already ran this session.
        self.ran_once: set[CommandHook] = set()

    def has(self, event: str) -> bool:
        return any(h.event == event for h in self.hooks) or bool(self.bus.hooks.get(event))

    def _say(self, line: str) -> None:
        if line not in self._shown:  # a failing hook is reported once per session
            self._shown.add(line)
            self.notify(line)

    async def fire(
        self,
        event: str,
        fields: dict[str, Any],
        *,
        session_id: str = "default",
        transcript_path: str | None = None,
        cwd: Path | None = None,
    ) -> HookResult:
        payload: dict[str, Any] = {
            "session_id": session_id,
            "transcript_path": self.transcript_path if transcript_path is None else transcript_path,
            "cwd": str(cwd or self.project),
            "hook_event_name": event,
            **fields,
        }
        self.bus.emit(event, payload)
        if not self.has(event):
            return HookResult()
        target = str(payload.get(_MATCHED_ON.get(event, ""), "")) if event in _MATCHED_ON else ""
        seen: set[str] = set()
        commands: list[CommandHook] = []
        tool_call = None
        if isinstance(payload.get("tool_name"), str) and isinstance(
            payload.get("tool_input"), dict
        ):
            tool_call = ToolCall(payload["tool_name"], payload["tool_input"], cwd or self.project)
        for h in self.hooks:
            if h.event != event or h.label in seen:
                continue
            if event in _MATCHED_ON and not matcher_matches(h.matcher, target):
                continue
            if h.if_rule and (tool_call is None or not if_matches(h, tool_call)):
                continue
            if h.once:
                if h in self.ran_once:
                    continue
                self.ran_once.add(h)
            seen.add(h.label)
            commands.append(h)
        pythons = [
            fn
            for matcher, fn in self.bus.hooks.get(event, [])
            if event not in _MATCHED_ON or matcher_matches(matcher, target)
        ]
        answers: list[_One | None] = [None] * (len(commands) + len(pythons))

        async def run_command(i: int, hook: CommandHook) -> None:
            run = await run_hook(hook, payload, cwd or self.project, self.bus.ask_model, self.bus)
            name = f"the {event} hook `{hook.label}`"
            if run.code is None:
                answers[i] = _One(failure=f"{name} {run.failure}")
            elif run.code == 2:
                answers[i] = _One(blocked=True, reason=run.stderr or f"{name} blocked")
            elif run.code != 0:
                detail = f": {run.stderr[:300]}" if run.stderr else ""
                answers[i] = _One(failure=f"{name} failed with exit code {run.code}{detail}")
            else:
                answers[i] = _interpret(event, run.stdout, name)

        async def run_python(i: int, fn: PythonLifecycleHook) -> None:
            name = f"the {event} hook {getattr(fn, '__name__', 'python hook')}"
            try:
                data: Any = await fn(HookEvent(event, payload))
            except Exception as exc:
                answers[i] = _One(failure=f"{name} failed ({type(exc).__name__}: {exc})")
                return
            if data is None:
                answers[i] = _One()
            elif not isinstance(data, dict):
                answers[i] = _One(failure=f"{name} did not answer with a dict")
            else:
                answers[i] = _interpret_data(event, data, name)

        async with anyio.create_task_group() as tg:
            for i, hook in enumerate(commands):
                tg.start_soon(run_command, i, hook)
            for j, fn in enumerate(pythons):
                tg.start_soon(run_python, len(commands) + j, fn)
        result = self._combine(event, [a for a in answers if a is not None])
        if result.stop and event in STOPPING:
            # continue: false — the agent stops after this step, whatever the event was
            # (the session takes it at the step's end and shows the reason).
            self.bus.request_stop(
                session_id, f"A {event} hook stopped the agent: {result.stop_reason}"
            )
        return result

    def _combine(self, event: str, answers: list[_One]) -> HookResult:
        result = HookResult()
        reasons: list[str] = []
        allows: list[str] = []
        denies: list[str] = []
        for a in answers:
            if a.failure:
                result.failed = True
                self._say(a.failure)
                continue
            if a.message:
                self.notify(a.message)
            if a.context:
                result.context.append(a.context)
            if a.stop:
                result.stop = True
                result.stop_reason = result.stop_reason or a.stop_reason
            if a.blocked:
                if event in BLOCKING or event == "PermissionRequest":
                    result.blocked = True
                    if a.reason:
                        reasons.append(a.reason)
                elif a.reason and not a.quiet:  # cannot block: the user sees what it said
                    self.notify(f"{event} hook: {a.reason}")
            if a.permission == "deny":
                denies.append(a.permission_reason)
            elif a.permission == "allow":
                allows.append(a.permission_reason)
        result.reason = "\n".join(reasons)
        if event == "PermissionRequest":
            if result.stop:  # continue: false wins over any decision: the call does not run
                result.permission = "deny"
                result.permission_reason = (
                    f"a PermissionRequest hook stopped the agent: {result.stop_reason}"
                )
            elif denies or result.blocked:
                result.permission = "deny"
                result.permission_reason = "; ".join(r for r in [*denies, *reasons] if r)
            elif allows and not result.failed:
                result.permission = "allow"
                result.permission_reason = "; ".join(r for r in allows if r)
        return result


def _interpret(event: str, stdout: str, name: str) -> _One:
    text = stdout.strip()
    if not text:
        return _One()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return _One(failure=f"{name} printed JSON that does not parse")
        if not isinstance(data, dict):
            return _One(failure=f"{name} did not answer with a JSON object")
        return _interpret_data(event, data, name)
    if event in ("UserPromptSubmit", "SessionStart"):
        return _One(context=text)  # plain stdout is context for these two
    if event == "PermissionRequest":
        return _One(failure=f"{name} printed something that is not JSON")
    return _One()


def _interpret_data(event: str, data: dict[str, Any], name: str) -> _One:
    one = _One(quiet=data.get("suppressOutput") is True)
    if data.get("continue") is False:
        one.stop = True
        one.stop_reason = str(data.get("stopReason") or f"{name} stopped the agent")
    message = data.get("systemMessage")
    if isinstance(message, str) and message:
        one.message = message
    decision = data.get("decision")
    if decision == "block":
        one.blocked = True
        one.reason = str(data.get("reason") or f"{name} blocked")
    elif decision not in (None, "approve", "allow", "continue", ""):
        return _One(failure=f"{name} answered an unknown decision {decision!r}")
    specific = data.get("hookSpecificOutput")
    if specific is not None and not isinstance(specific, dict):
        return _One(failure=f"{name} gave a hookSpecificOutput that is not an object")
    if isinstance(specific, dict):
        extra = specific.get("additionalContext")
        if isinstance(extra, str) and extra:
            one.context = extra
        if event == "PermissionRequest":
            answer = specific.get("decision")
            if answer is not None:
                behavior = answer.get("behavior") if isinstance(answer, dict) else None
                if behavior not in ("allow", "deny"):
                    return _One(failure=f"{name} answered no valid decision.behavior")
                if behavior == "allow" and answer.get("updatedInput") is not None:
                    # Changing the input here would skip the rules' re-check: no answer.
                    return _One(failure=f"{name} tried to change the input; not supported here")
                one.permission = behavior
                one.permission_reason = str(answer.get("message") or "")
    return one


def permission_layer(hooks: LifecycleHooks) -> PermissionHooks:
    """PermissionRequest hooks as the pipeline's answerer of an ask."""

    async def answer(call: ToolCall, reason: str) -> LayerResult | None:
        result = await hooks.fire(
            "PermissionRequest",
            {
                "tool_name": call.tool,
                "tool_input": hook_tool_input(call),
                "permission_mode": call.mode,
            },
            session_id=call.session_id,
            cwd=call.project_path,
        )
        if result.permission == "allow":
            why = result.permission_reason or "a PermissionRequest hook allowed it"
            return LayerResult(PERMISSION_HOOK, "allow", why)
        if result.permission == "deny":
            why = result.permission_reason or "a PermissionRequest hook denied it"
            return LayerResult(PERMISSION_HOOK, "deny", f"{call.tool} was denied: {why}")
        return None

    return answer


async def _fire_post(
    hooks: LifecycleHooks, call: ToolCall, output: str, is_error: bool
) -> tuple[HookResult, str]:
    result = await hooks.fire(
        "PostToolUse",
        {
            "tool_name": call.tool,
            "tool_input": hook_tool_input(call),
            "tool_response": output,
            "tool_use_id": call.call_id,
            "permission_mode": call.mode,
            "is_error": is_error,
        },
        session_id=call.session_id,
        cwd=call.project_path,
    )
    text = output
    for extra in result.context:
        text += f"\n\n[PostToolUse hook] {extra}"
    return result, text


async def post_tool_use_failed(hooks: LifecycleHooks, call: ToolCall, error: str) -> str:
    """Run the PostToolUse hooks on a call that failed (``is_error: true``, the error as
    ``tool_response``): the error message the model then sees, with what they added."""
    if hooks.has("PostToolUseFailure"):  # Claude Code's event for a call that failed
        await hooks.fire(
            "PostToolUseFailure",
            {
                "tool_name": call.tool,
                "tool_input": hook_tool_input(call),
                "tool_use_id": call.call_id,
                "error": error,
                "is_interrupt": False,
                "permission_mode": call.mode,
            },
            session_id=call.session_id,
            cwd=call.project_path,
        )
    if not hooks.has("PostToolUse"):
        return error
    result, text = await _fire_post(hooks, call, error, True)
    if result.blocked and result.reason:
        text += f"\n\nA PostToolUse hook added: {result.reason}"
    return text


async def post_tool_use(hooks: LifecycleHooks, call: ToolCall, output: str) -> str:
    """Run the PostToolUse hooks on a call's result: what the model then sees."""
    if not hooks.has("PostToolUse"):
        return output
    result, text = await _fire_post(hooks, call, output, False)
    if result.blocked:
        why = result.reason or "a PostToolUse hook flagged it"
        raise AgentError(
            f"{text}\n\nA PostToolUse hook reported a problem with this result: {why}",
            kind=ErrorKind.TOOL_FAILURE,
        )
    return text


class NotifyingConfirmer:
    """Fires the Notification hooks when an ask is about to wait for the user."""

    def __init__(self, inner: Confirmer, hooks: LifecycleHooks) -> None:
        self.inner = inner
        self.hooks = hooks

    async def confirm(self, request: ConfirmRequest) -> Answer | Reply:
        call = request.call
        await self.hooks.fire(
            "Notification",
            {
                "message": f"codingcode needs your permission to use {call.tool}",
                "notification_type": "permission_prompt",
            },
            session_id=call.session_id,
            cwd=call.project_path,
        )
        return await self.inner.confirm(request)
