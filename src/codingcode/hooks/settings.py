"""The ``hooks`` settings section: every event's command, http, prompt and agent hooks as
Claude Code writes them (SPEC A4, A6), read into :class:`CommandHook` s.

What a hook does when it runs is :mod:`codingcode.hooks.pre_tool_use` (PreToolUse, a layer
of approval) and :mod:`codingcode.hooks.lifecycle` (every other event); the bus that Python
hooks and listeners join is :mod:`codingcode.hooks.bus`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from codingcode.config import Scope, Settings, SettingsError, granting_sources, grants_apply
from codingcode.hooks.http_hook import HookNetwork, hook_network

HOOK_TIMEOUT_DEFAULT_S = 60.0
HOOK_TIMEOUT_MAX_S = 600.0


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
