"""The hook bus and PreToolUse hooks (SPEC A4, A6).

Two kinds of PreToolUse hooks decide a call: Python functions registered in code, and
command hooks from settings. A command hook gets the call as JSON on stdin
(``hook_event_name``, ``tool_name``, ``tool_input``, ``session_id``, ``turn_id``, ``cwd``,
``permission_mode``) and answers with JSON on stdout: ``decision`` (allow / deny / ask /
continue), ``reason``, ``modifiedInput``. Exit code 2 means deny, with stderr as the reason.
A hook that crashes, answers nonsense or runs out of time never allows: the call is asked.

The bus also carries ``tool.approval.post``: every audit record, for whoever listens.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import json
import os
import re
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

import anyio
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from codingcode.approval.pipeline import HOOK, LayerResult, ToolCall
from codingcode.config import Scope, Settings, SettingsError, granting_sources, grants_apply
from codingcode.hooks.http_hook import HookNetwork, hook_network

PRE_TOOL_USE = "tool.approval.pre_use"
POST_APPROVAL = "tool.approval.post"
HOOK_TIMEOUT_DEFAULT_S = 60.0
HOOK_TIMEOUT_MAX_S = 600.0
_MAX_HOOK_OUTPUT = 1 << 20

HookDecision = Literal["allow", "deny", "ask", "continue"]


@dataclass(frozen=True)
class HookAnswer:
    decision: HookDecision = "continue"
    reason: str = ""
    modified_input: dict[str, Any] | None = None
    #: ``continue: false`` (with its ``stopReason``): the call does not run and the agent
    #: stops after this step. None: go on.
    stop_reason: str | None = None


PythonHook = Callable[[ToolCall], Awaitable["HookAnswer | None"]]
#: A ``prompt`` hook's model call: the prompt in, the answer's text out.
HookModel = Callable[[str], Awaitable[str]]
Listener = Callable[[dict[str, Any]], None]


# -- settings ----------------------------------------------------------------------------
class CommandHookSpec(BaseModel):
    """One handler, as Claude Code's hooks reference writes it. Keys it documents that do
    not apply here (``asyncRewake``, ``rewakeMessage``, ...) are accepted and ignored, as
    Claude Code ignores what it does not know."""

    model_config = ConfigDict(defer_build=True, extra="ignore", populate_by_name=True)
    type: Literal["command", "http", "prompt", "agent"] = "command"
    command: str | None = Field(default=None, min_length=1)
    url: str | None = Field(default=None, min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)
    prompt: str | None = None
    timeout: float = Field(default=HOOK_TIMEOUT_DEFAULT_S, gt=0, le=HOOK_TIMEOUT_MAX_S)
    async_: bool = Field(default=False, alias="async")
    shell: Literal["bash", "sh", "powershell"] | None = None
    if_: str | None = Field(default=None, alias="if")
    once: bool = False
    statusMessage: str | None = None
    #: An ``http`` hook's header values may name these environment variables.
    allowedEnvVars: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _needs_its_target(self) -> CommandHookSpec:
        needed = {"command": "command", "http": "url", "prompt": "prompt", "agent": "prompt"}
        key = needed[self.type]
        if getattr(self, key) in (None, ""):
            raise ValueError(f"a {self.type} hook needs {key!r}")
        return self


class HookMatcherSpec(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="ignore")
    matcher: str = "*"
    hooks: list[CommandHookSpec] = Field(min_length=1)


#: The events of the hook lifecycle codingcode raises, named as Claude Code names them.
EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "Notification",
    "PermissionRequest",
)
#: Every other event Claude Code's hooks reference documents: accepted in a settings file,
#: listed by ``hooks list`` as inactive (codingcode never raises them), noted once.
INACTIVE_EVENTS = (
    "Setup",
    "UserPromptExpansion",
    "PermissionDenied",
    "PostToolBatch",
    "SubagentStart",
    "TaskCreated",
    "TaskCompleted",
    "StopFailure",
    "TeammateIdle",
    "InstructionsLoaded",
    "ConfigChange",
    "CwdChanged",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "PostCompact",
    "Elicitation",
    "ElicitationResult",
)
ALL_EVENTS = (*EVENTS, *INACTIVE_EVENTS)


class HooksSettings(BaseModel):
    """The ``hooks`` section: every event Claude Code documents (the reference the docs
    page is checked against; :func:`load_command_hooks` reads each event's list)."""

    model_config = ConfigDict(defer_build=True, extra="allow")
    PreToolUse: list[HookMatcherSpec] = Field(default_factory=list)
    PostToolUse: list[HookMatcherSpec] = Field(default_factory=list)
    PostToolUseFailure: list[HookMatcherSpec] = Field(default_factory=list)
    UserPromptSubmit: list[HookMatcherSpec] = Field(default_factory=list)
    SessionStart: list[HookMatcherSpec] = Field(default_factory=list)
    SessionEnd: list[HookMatcherSpec] = Field(default_factory=list)
    Stop: list[HookMatcherSpec] = Field(default_factory=list)
    SubagentStop: list[HookMatcherSpec] = Field(default_factory=list)
    PreCompact: list[HookMatcherSpec] = Field(default_factory=list)
    Notification: list[HookMatcherSpec] = Field(default_factory=list)
    PermissionRequest: list[HookMatcherSpec] = Field(default_factory=list)
    Setup: list[HookMatcherSpec] = Field(default_factory=list)
    UserPromptExpansion: list[HookMatcherSpec] = Field(default_factory=list)
    PermissionDenied: list[HookMatcherSpec] = Field(default_factory=list)
    PostToolBatch: list[HookMatcherSpec] = Field(default_factory=list)
    SubagentStart: list[HookMatcherSpec] = Field(default_factory=list)
    TaskCreated: list[HookMatcherSpec] = Field(default_factory=list)
    TaskCompleted: list[HookMatcherSpec] = Field(default_factory=list)
    StopFailure: list[HookMatcherSpec] = Field(default_factory=list)
    TeammateIdle: list[HookMatcherSpec] = Field(default_factory=list)
    InstructionsLoaded: list[HookMatcherSpec] = Field(default_factory=list)
    ConfigChange: list[HookMatcherSpec] = Field(default_factory=list)
    CwdChanged: list[HookMatcherSpec] = Field(default_factory=list)
    FileChanged: list[HookMatcherSpec] = Field(default_factory=list)
    WorktreeCreate: list[HookMatcherSpec] = Field(default_factory=list)
    WorktreeRemove: list[HookMatcherSpec] = Field(default_factory=list)
    PostCompact: list[HookMatcherSpec] = Field(default_factory=list)
    Elicitation: list[HookMatcherSpec] = Field(default_factory=list)
    ElicitationResult: list[HookMatcherSpec] = Field(default_factory=list)


def matcher_matches(matcher: str, name: str) -> bool:
    """Claude Code's matchers: empty or ``*`` match everything, else a regular expression
    that must match the whole name (``Edit|Write``, ``github:.*``). Globs (``mcp_*``, the
    form earlier versions documented) still match as globs. A tool also answers to the
    names Claude Code gives it (``Read`` for read_file, ``mcp__github__create_issue`` for
    ``github:create_issue``), so matchers written for Claude Code match unchanged."""
    matcher = matcher.strip()
    if matcher in ("", "*"):
        return True
    from codingcode.tools.claude_names import name_aliases

    names = name_aliases(name)
    with contextlib.suppress(re.error):
        if any(re.fullmatch(matcher, n) for n in names):
            return True
    return any(fnmatch.fnmatchcase(n, m.strip()) for m in matcher.split("|") for n in names)


@dataclass(frozen=True)
class CommandHook:
    command: str
    matcher: str
    timeout_s: float
    scope: Scope | None
    source: str
    #: False for a hook from a project file the user has not trusted: it never runs.
    trusted: bool = True
    event: str = "PreToolUse"
    #: ``command`` (a shell command), ``http`` (POST the event to ``url``), ``prompt`` or
    #: ``agent`` (one model call with ``prompt``).
    kind: str = "command"
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    prompt: str = ""
    #: A permission rule (Claude Code's syntax or ours): the hook runs only for a call it
    #: matches (``Bash(git *)``).
    if_rule: str | None = None
    #: Run once a session, then no more.
    once: bool = False
    #: Run without waiting for it: its answer decides nothing.
    run_async: bool = False
    #: ``bash`` runs the command with bash (default: /bin/sh).
    shell: str | None = None
    #: ``statusMessage``: shown while the hook runs (the app, stderr, stream-json).
    status_message: str = ""
    #: An ``http`` hook: the variables its header values may name (``allowedEnvVars``).
    allowed_env_vars: tuple[str, ...] = ()
    #: An ``http`` hook: the network policy its URL is decided by (None: only cloud
    #: metadata addresses are refused, as for a hook made in code).
    network: HookNetwork | None = field(default=None, compare=False)

    def matches(self, tool: str) -> bool:
        return matcher_matches(self.matcher, tool)

    @property
    def active(self) -> bool:
        """Whether codingcode raises this hook's event."""
        return self.event in EVENTS

    @property
    def label(self) -> str:
        """What the hook runs, for messages: its command, URL or prompt."""
        if self.kind == "http":
            return self.url
        if self.kind in ("prompt", "agent"):
            return f"{self.kind}: {self.prompt[:60]}"
        return self.command


@functools.cache
def _matchers() -> TypeAdapter[list[HookMatcherSpec]]:
    """The validator of one event's list, built on first use (most settings have no hooks)."""
    return TypeAdapter(list[HookMatcherSpec])


def load_command_hooks(settings: Settings) -> list[CommandHook]:
    """Every hook of the settings, of every event Claude Code documents (those codingcode
    never raises are kept, inactive). An event no one documents is one note in the
    settings' notes, not a refusal of the file."""
    from codingcode.approval.rules import pydantic_error

    hooks: list[CommandHook] = []
    network: HookNetwork | None = None
    for f, data, _ in granting_sources(settings, "hooks"):
        lenient = f.dialect == "claude"  # Claude Code skips what it cannot use, and says so
        if not isinstance(data, dict):
            problem = f"hooks must be an object of events, not {type(data).__name__}"
            if not lenient:
                raise SettingsError(f"Invalid settings in {f.path}: {problem}.")
            _note(settings, f"codingcode: {f.path}: {problem}; its hooks are ignored.")
            continue
        for event, entries in data.items():
            if event not in ALL_EVENTS:
                from codingcode.claude_settings import closest_key

                near = closest_key(event, frozenset(ALL_EVENTS))
                hint = f" (did you mean {near!r}?)" if near else ""
                note = (
                    f"codingcode: {f.path}: hooks.{event} is not a hook event{hint}; "
                    "its hooks are ignored."
                )
                if note not in settings.notes:
                    settings.notes.append(note)
                continue
            if lenient:
                entries = _clamp_timeouts(entries, event, f.path, settings)
            try:
                parsed = _matchers().validate_python(entries)
            except ValidationError as exc:
                error = pydantic_error(f.path, f"hooks.{event}", exc)
                if not lenient:
                    raise error from None
                parsed = _valid_part(entries, event, f.path, settings)
            for m in parsed:
                for h in m.hooks:
                    if h.type == "http" and network is None:
                        network = hook_network(settings)
                    hooks.append(
                        CommandHook(
                            h.command or "",
                            m.matcher,
                            h.timeout,
                            f.scope,
                            str(f.path),
                            f.trusted,
                            event,
                            kind=h.type,
                            url=h.url or "",
                            headers=tuple(h.headers.items()),
                            prompt=h.prompt or "",
                            if_rule=h.if_,
                            once=h.once,
                            run_async=h.async_,
                            shell=h.shell,
                            status_message=" ".join((h.statusMessage or "").split()),
                            allowed_env_vars=tuple(h.allowedEnvVars),
                            network=network if h.type == "http" else None,
                        )
                    )
        inactive = sorted({h.event for h in hooks if h.source == str(f.path) and not h.active})
        if inactive:
            note = (
                f"codingcode: {f.path}: the hooks of {', '.join(inactive)} are kept but never "
                "run here (codingcode does not raise these events; `codingcode hooks list`)."
            )
            if note not in settings.notes:
                settings.notes.append(note)
    return hooks


def _note(settings: Settings, line: str) -> None:
    if line not in settings.notes:
        settings.notes.append(line)


def _clamp_timeouts(entries: Any, event: str, path: Path, settings: Settings) -> Any:
    """A Claude Code file's ``timeout`` over :data:`HOOK_TIMEOUT_MAX_S` (Claude Code sets no
    ceiling; ``30000`` is a common slip for milliseconds) runs with the ceiling, noted once
    — the hook is not dropped."""
    if not isinstance(entries, list):
        return entries
    out: list[Any] = []
    for i, entry in enumerate(entries):
        hooks = entry.get("hooks") if isinstance(entry, dict) else None
        if not isinstance(hooks, list):
            out.append(entry)
            continue
        fixed: list[Any] = []
        for j, hook in enumerate(hooks):
            timeout = hook.get("timeout") if isinstance(hook, dict) else None
            number = isinstance(timeout, int | float) and not isinstance(timeout, bool)
            if number and isinstance(timeout, int | float) and timeout > HOOK_TIMEOUT_MAX_S:
                _note(
                    settings,
                    f"codingcode: {path}: hooks.{event}[{i}].hooks[{j}].timeout {timeout:g} is "
                    f"over {HOOK_TIMEOUT_MAX_S:g} seconds; it runs with {HOOK_TIMEOUT_MAX_S:g}.",
                )
                hook = {**hook, "timeout": HOOK_TIMEOUT_MAX_S}
            fixed.append(hook)
        out.append({**entry, "hooks": fixed})
    return out


def _valid_part(entries: Any, event: str, path: Path, settings: Settings) -> list[HookMatcherSpec]:
    """The hooks of one event of a Claude Code file that can be used; one note for each
    that cannot (naming the file, the entry and why), as Claude Code skips them."""
    from codingcode.approval.rules import pydantic_error

    if not isinstance(entries, list):
        _note(
            settings,
            f"codingcode: {path}: hooks.{event} must be a list of matchers, not "
            f"{type(entries).__name__}; its hooks are ignored.",
        )
        return []
    kept: list[HookMatcherSpec] = []
    for i, entry in enumerate(entries):
        raw = entry.get("hooks") if isinstance(entry, dict) else None
        good: list[CommandHookSpec] = []
        for j, hook in enumerate(raw if isinstance(raw, list) else []):
            try:
                good.append(CommandHookSpec.model_validate(hook))
            except ValidationError as exc:
                message = pydantic_error(path, f"hooks.{event}[{i}].hooks[{j}]", exc).message
                _note(settings, f"codingcode: {message.rstrip('.')}; this hook is ignored.")
        if not isinstance(raw, list):
            _note(
                settings,
                f"codingcode: {path}: hooks.{event}[{i}] has no list of `hooks`; it is ignored.",
            )
            continue
        matcher = entry.get("matcher", "*")
        if good:
            kept.append(HookMatcherSpec(matcher=str(matcher or "*"), hooks=good))
    return kept


def runnable_hooks(hooks: list[CommandHook]) -> list[CommandHook]:
    """The hooks that may run: the user's always, a project's only once trusted."""
    return [h for h in hooks if grants_apply(h.scope, h.trusted)]


# -- the bus -------------------------------------------------------------------------------
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


_ORDER = {"deny": 0, "ask": 1, "allow": 2, "continue": 3}


class PreToolUseHooks:
    """Runs every matching hook in order and combines them: deny > ask > allow > continue.

    A hook that changes the input hands the changed input to the hooks after it.
    """

    def __init__(self, command_hooks: list[CommandHook], bus: HookBus | None = None) -> None:
        self.command_hooks = [h for h in command_hooks if h.event == "PreToolUse"]
        self.bus = bus or HookBus()
        #: The ``once`` hooks that already ran this session.
        self.ran_once: set[CommandHook] = set()

    def __bool__(self) -> bool:
        return bool(self.command_hooks or self.bus.pre_tool_use)

    async def __call__(self, call: ToolCall) -> LayerResult:
        answers: list[tuple[str, HookAnswer]] = []
        current = call
        modified: dict[str, Any] | None = None
        for matcher, fn in self.bus.pre_tool_use:
            if not matcher_matches(matcher, call.tool):
                continue
            answer = await _run_python(fn, current)
            answers.append((getattr(fn, "__name__", "python hook"), answer))
            if answer.decision == "deny":
                break
            if answer.modified_input is not None:
                modified = answer.modified_input
                current = _with_args(current, modified)
        else:  # no Python hook denied: the command hooks run too
            for hook in self.command_hooks:
                if not hook.matches(call.tool) or not if_matches(hook, current):
                    continue
                if hook.once:
                    if hook in self.ran_once:
                        continue
                    self.ran_once.add(hook)
                answer = await run_command_hook(hook, current, self.bus.ask_model, self.bus)
                answers.append((f"hook `{hook.label}`", answer))
                if answer.decision == "deny":
                    break
                if answer.modified_input is not None:
                    modified = answer.modified_input
                    current = _with_args(current, modified)
        if not answers:
            return LayerResult(HOOK, "continue", "no PreToolUse hook matches")
        stopped = [a.stop_reason for _, a in answers if a.stop_reason is not None]
        if stopped:  # continue: false wins over any decision: the call does not run
            message = f"A PreToolUse hook stopped the agent: {stopped[0]}"
            self.bus.request_stop(call.session_id, message)
            return LayerResult(HOOK, "deny", message)
        name, strongest = min(answers, key=lambda a: _ORDER[a[1].decision])
        reason = strongest.reason or f"{name} answered {strongest.decision}"
        if strongest.decision == "continue":
            reason = "the PreToolUse hooks did not decide"
        return LayerResult(HOOK, strongest.decision, reason, None, modified)


def _with_args(call: ToolCall, args: dict[str, Any]) -> ToolCall:
    return replace(call, args=args)


async def _run_python(fn: PythonHook, call: ToolCall) -> HookAnswer:
    try:
        answer = await fn(call)
    except Exception as exc:
        return HookAnswer("ask", f"a PreToolUse hook failed ({type(exc).__name__}: {exc}); asking")
    if answer is None:
        return HookAnswer()
    if (
        not isinstance(answer, HookAnswer)
        or not isinstance(answer.decision, str)
        or answer.decision not in _ORDER
    ):
        return HookAnswer("ask", "a PreToolUse hook gave no valid answer; asking")
    return answer


#: Claude Code's file tools (Read, Write, Edit, ...) name the file ``file_path``; ours,
#: ``path``. Hooks written for Claude Code read ``tool_input.file_path``.
_FILE_PATH_NAMES = frozenset({"Read", "Write", "Edit", "MultiEdit", "NotebookEdit"})


def _takes_file_path(tool: str) -> bool:
    from codingcode.tools.claude_names import OURS_TO_CLAUDE

    return any(n in _FILE_PATH_NAMES for n in OURS_TO_CLAUDE.get(tool, ()))


def hook_tool_input(call: ToolCall) -> dict[str, Any]:
    """``tool_input`` as a hook sees it: the call's arguments, and for a file tool also
    Claude Code's ``file_path`` — the same file as an absolute path (``~`` and relative
    paths resolved against the call's directory, as Claude Code gives it), so a hook
    cannot be dodged by spelling the path differently. ``path`` stays, as given."""
    args = call.args
    path = args.get("path")
    if not isinstance(path, str) or "file_path" in args or not _takes_file_path(call.tool):
        return args
    full = os.path.normpath(os.path.join(call.cwd, os.path.expanduser(path)))
    return {**args, "file_path": full}


def from_hook_input(call: ToolCall, modified: dict[str, Any]) -> dict[str, Any]:
    """A hook's ``updatedInput`` in our argument names: a ``file_path`` we added becomes
    ``path`` again (a changed one is the new path; an unchanged one is dropped)."""
    if "file_path" not in modified or "file_path" in call.args or not _takes_file_path(call.tool):
        return modified
    out = dict(modified)
    new = out.pop("file_path")
    if new != hook_tool_input(call).get("file_path"):
        out["path"] = new
    return out


def hook_input(call: ToolCall) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "tool_name": call.tool,
        "tool_input": hook_tool_input(call),
        "session_id": call.session_id,
        "transcript_path": call.transcript_path,
        "tool_use_id": call.call_id,
        "turn_id": call.turn_id,
        "cwd": str(call.cwd),
        "project_path": str(call.project_path),
        "permission_mode": call.mode,
    }


@dataclass(frozen=True)
class HookRun:
    """What one command hook did: its exit code (None: it did not finish), its output."""

    code: int | None
    stdout: str
    stderr: str
    #: Why it did not finish (could not start, timed out), for messages.
    failure: str = ""


def hook_env(project: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["CODINGCODE_PROJECT_DIR"] = str(project)
    env["CLAUDE_PROJECT_DIR"] = str(project)  # hooks written for Claude Code
    return env


async def run_prompt_hook(
    hook: CommandHook, payload: dict[str, Any], ask_model: HookModel | None
) -> HookRun:
    """A ``prompt`` (or ``agent``) hook: one model call with the hook's prompt, the event's
    JSON in place of ``$ARGUMENTS`` (or after it). ``{"ok": true}`` lets the event go on;
    ``{"ok": false, "reason": ...}`` is exit code 2 with that reason."""
    if ask_model is None:
        return HookRun(None, "", "", "is a prompt hook and this run has no model to ask")
    event = json.dumps(payload)
    prompt = (
        hook.prompt.replace("$ARGUMENTS", event)
        if "$ARGUMENTS" in hook.prompt
        else f"{hook.prompt}\n\n{event}"
    )
    try:
        with anyio.fail_after(hook.timeout_s):
            text = await ask_model(prompt)
    except TimeoutError:
        return HookRun(None, "", "", f"took longer than {hook.timeout_s:g}s")
    except Exception as exc:  # the model call failed: no answer, never an allow
        return HookRun(None, "", "", f"could not ask the model ({type(exc).__name__})")
    found = re.search(r"\{.*\}", text, re.DOTALL)
    answer: Any = None
    if found is not None:
        with contextlib.suppress(ValueError):
            answer = json.loads(found.group(0))
    if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
        return HookRun(None, "", "", 'answered without {"ok": true|false}')
    if answer["ok"]:
        return HookRun(0, "", "")
    return HookRun(2, "", str(answer.get("reason") or "the prompt hook said no"))


#: The bus event of a hook with a ``statusMessage``: ``{"state": "start"|"end",
#: "message", "event", "hook"}`` when it starts and when it is done.
HOOK_STATUS = "hook.status"


async def run_hook(
    hook: CommandHook,
    payload: dict[str, Any],
    cwd: Path,
    ask_model: HookModel | None = None,
    bus: HookBus | None = None,
) -> HookRun:
    """Run one hook of any kind: a command (``/bin/sh``, or bash with ``shell: bash``;
    ``async``: started and not waited for), an HTTP hook (the event POSTed as JSON to its
    URL through the network policy, its response body read as a command's output). A
    ``statusMessage`` goes to ``bus``'s listeners while the hook runs."""
    if not hook.status_message or bus is None or hook.run_async:
        return await _run_hook(hook, payload, cwd, ask_model)
    status = {"message": hook.status_message, "event": hook.event, "hook": hook.label}
    bus.emit(HOOK_STATUS, {"state": "start", **status})
    try:
        return await _run_hook(hook, payload, cwd, ask_model)
    finally:
        bus.emit(HOOK_STATUS, {"state": "end", **status})


async def _run_hook(
    hook: CommandHook, payload: dict[str, Any], cwd: Path, ask_model: HookModel | None
) -> HookRun:
    if hook.kind == "http":
        from codingcode.hooks.http_hook import HookNetwork, expand_headers, post_event

        answer = await post_event(
            hook.url,
            expand_headers(dict(hook.headers), hook.allowed_env_vars),
            payload,
            hook.timeout_s,
            hook.network or HookNetwork(),
        )
        if answer.failure:
            return HookRun(None, "", "", answer.failure)
        return HookRun(0, answer.body, "")
    if hook.kind in ("prompt", "agent"):
        return await run_prompt_hook(hook, payload, ask_model)
    if hook.shell == "powershell":
        return HookRun(None, "", "", "asks for PowerShell, which codingcode does not run")
    shell = "/bin/bash" if hook.shell == "bash" else "/bin/sh"
    if hook.run_async:
        start_detached(hook.command, payload, cwd, hook.timeout_s, shell)
        return HookRun(0, "", "")
    return await run_hook_process(hook.command, payload, cwd, hook.timeout_s, shell=shell)


def start_detached(
    command: str, payload: dict[str, Any], cwd: Path, timeout_s: float, shell: str
) -> None:
    """An ``async`` hook: started, fed its input, never waited for (its answer decides
    nothing); its process group is killed at its timeout."""
    import subprocess
    import threading

    try:
        proc = subprocess.Popen(
            [shell, "-c", command],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=str(cwd),
            env=hook_env(cwd),
            start_new_session=True,
        )
    except OSError:
        return

    def feed_and_reap() -> None:
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(payload).encode())
            proc.stdin.close()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    threading.Thread(target=feed_and_reap, daemon=True).start()


async def run_hook_process(
    command: str, payload: dict[str, Any], cwd: Path, timeout_s: float, *, shell: str = "/bin/sh"
) -> HookRun:
    """Run ``command`` with ``payload`` as JSON on stdin; its process group never outlives it."""
    data = json.dumps(payload).encode()
    try:
        proc = await anyio.open_process(
            [shell, "-c", command],
            stdin=-1,
            stdout=-1,
            stderr=-1,
            cwd=str(cwd),
            env=hook_env(cwd),
            start_new_session=True,
        )
    except OSError as exc:
        return HookRun(None, "", "", f"could not start ({exc})")
    out = bytearray()
    err = bytearray()

    async def pump(stream: Any, sink: bytearray) -> None:
        async for chunk in stream:
            if len(sink) < _MAX_HOOK_OUTPUT:
                sink.extend(chunk[: _MAX_HOOK_OUTPUT - len(sink)])

    timed_out = False
    try:
        with anyio.move_on_after(timeout_s) as scope:
            async with anyio.create_task_group() as tg:
                assert proc.stdout is not None and proc.stderr is not None
                tg.start_soon(pump, proc.stdout, out)
                tg.start_soon(pump, proc.stderr, err)
                if proc.stdin is not None:
                    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                        await proc.stdin.send(data)
                    await proc.stdin.aclose()
                await proc.wait()
        timed_out = scope.cancelled_caught
    finally:
        # The hook's whole process group goes, whatever happened (timeout, cancellation).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            await proc.aclose()
    stdout = out.decode("utf-8", "replace")
    stderr = err.decode("utf-8", "replace").strip()
    if timed_out:
        return HookRun(None, stdout, stderr, f"took longer than {timeout_s:g}s and was killed")
    return HookRun(proc.returncode, stdout, stderr)


def if_matches(hook: CommandHook, call: ToolCall) -> bool:
    """A hook's ``if`` (a permission rule, Claude Code's syntax or ours): whether ``call``
    is one it matches. No ``if``: every call its matcher matched."""
    if not hook.if_rule:
        return True
    from codingcode.approval.rules import Rule, RuleEngine, RuleSyntaxError
    from codingcode.approval.rules.syntax import rule_texts

    try:
        rules = [Rule(t, "allow") for t in rule_texts(hook.if_rule, call.project_path)]
        hit = RuleEngine(rules, call.project_path).evaluate_user(call)
    except (RuleSyntaxError, ValueError):
        return False  # an `if` that is no rule matches nothing
    return hit is not None and hit.action == "allow"


async def run_command_hook(
    hook: CommandHook,
    call: ToolCall,
    ask_model: HookModel | None = None,
    bus: HookBus | None = None,
) -> HookAnswer:
    """Run one hook; a failure is an ask, never an allow — but an HTTP hook that does not
    answer lets the call go on (Claude Code's rule: a non-blocking error), said once."""
    run = await run_hook(hook, hook_input(call), call.project_path, ask_model, bus)
    if run.code is None:
        if hook.kind == "http":
            _say_once(f"codingcode: the PreToolUse hook {hook.url} {run.failure}; going on.")
            return HookAnswer()
        return HookAnswer("ask", f"the hook `{hook.label}` {run.failure}; asking")
    code = run.code
    stderr = run.stderr
    if code == 2:
        return HookAnswer("deny", stderr or f"the hook `{hook.label}` denied the call")
    if code != 0:
        detail = f": {stderr[:300]}" if stderr else ""
        return HookAnswer(
            "ask", f"the hook `{hook.label}` failed with exit code {code}{detail}; asking"
        )
    answer = parse_hook_output(run.stdout, hook.label)
    if answer.modified_input is not None:
        answer = replace(answer, modified_input=from_hook_input(call, answer.modified_input))
    return answer


_SAID: set[str] = set()


def _say_once(line: str) -> None:
    import sys

    if line not in _SAID:
        _SAID.add(line)
        print(line, file=sys.stderr, flush=True)


def parse_hook_output(text: str, command: str) -> HookAnswer:
    text = text.strip()
    if not text:
        return HookAnswer()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return HookAnswer("ask", f"the hook `{command}` printed something that is not JSON; asking")
    if not isinstance(data, dict):
        return HookAnswer("ask", f"the hook `{command}` did not answer with a JSON object; asking")
    stop = None
    if data.get("continue") is False:  # Claude Code's universal field
        stop = str(data.get("stopReason") or f"the hook `{command}` answered continue: false")
    specific = data.get("hookSpecificOutput")
    if isinstance(specific, dict):  # the shape other agents' hooks print
        data = {
            "decision": specific.get("permissionDecision", "continue"),
            "reason": specific.get("permissionDecisionReason", ""),
            "modifiedInput": specific.get("updatedInput"),
        }
    decision: Any = data.get("decision", "continue")
    if isinstance(decision, str):  # Claude Code's older PreToolUse answers: approve / block
        decision = {"approve": "allow", "block": "deny"}.get(decision, decision)
    if not isinstance(decision, str) or decision not in _ORDER:
        return HookAnswer(
            "ask", f"the hook `{command}` answered an unknown decision {decision!r}; asking"
        )
    modified = data.get("modifiedInput")
    if modified is not None and not isinstance(modified, dict):
        return HookAnswer(
            "ask", f"the hook `{command}` gave a modifiedInput that is not an object; asking"
        )
    reason = data.get("reason") or ""
    return HookAnswer(cast(HookDecision, decision), str(reason), modified, stop)
