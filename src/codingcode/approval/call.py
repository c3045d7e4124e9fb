"""One call as approval sees it, and one layer's answer about it.

The types every approval layer shares; they live apart from the pipeline so that the
layers (rules, capabilities, confirmation) and the pipeline that runs them import them
from below, never each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from codingcode.approval.roles import call_roles, first_with
from codingcode.tools.declarations import Declaration, builtin_declaration
from codingcode.tools.definition import ArgRole, Effect, ToolOrigin

Action = Literal["allow", "deny", "ask", "continue"]
Final = Literal["allow", "deny", "ask"]

RULES = "RuleEngine"
WHITELIST = "ReadonlyWhitelist"
MODE = "PermissionMode"
HOOK = "HookPreToolUse"
PERMISSION_HOOK = "HookPermissionRequest"
CONFIRM = "UserConfirmation"


@dataclass(frozen=True)
class ToolCall:
    """One call as approval sees it: validated arguments and where they came from."""

    tool: str
    args: dict[str, Any]
    project_path: Path
    session_id: str = "default"
    turn_id: int = 0
    mode: str = "default"
    #: A trusted MCP server says this tool only reads: plan mode keeps it (it still needs
    #: the usual approval), where it refuses every other tool outside the read-only list.
    read_only_hint: bool = False
    #: What the tool declares about its arguments and effects (ToolDefinition), so that
    #: approval reads declarations instead of tool names. Empty roles / ``None`` effects:
    #: nothing declared.
    arg_roles: dict[str, ArgRole] = field(default_factory=dict)
    effects: frozenset[Effect] | None = None
    origin: ToolOrigin = field(default_factory=ToolOrigin)
    #: Links this call's audit records (one per layer) to its outcome; "" when not run.
    call_id: str = ""
    #: The session's transcript file, for hooks ("" when the session is not saved).
    transcript_path: str = ""

    def __post_init__(self) -> None:
        # A call made by hand (a library caller, a test) that declares nothing, of a built-in
        # tool's name: judged as that tool's call, with the tool's own declaration.
        if not self.arg_roles and self.effects is None and self.origin == ToolOrigin():
            found = builtin_declaration(self.tool)
            if found is not None:
                object.__setattr__(self, "arg_roles", dict(found.arg_roles))
                object.__setattr__(self, "effects", found.effects)
                object.__setattr__(self, "origin", found.origin)

    @property
    def declaration(self) -> Declaration:
        """What the tool declares, with roles inferred from the argument names for a tool
        that declares none."""
        roles = call_roles(self.arg_roles, self.args, self.tool, self.origin.kind)
        return Declaration(self.tool, roles, self.effects, self.origin)

    @property
    def cwd(self) -> Path:
        """The directory relative paths of this call resolve against."""
        return self.cwd_for(call_roles(self.arg_roles, self.args, self.tool, self.origin.kind))

    def cwd_for(self, roles: Mapping[str, ArgRole]) -> Path:
        """``cwd``, given the call's argument roles (when the caller has them already)."""
        cwd = first_with(roles, self.args, "cwd")
        if isinstance(cwd, str) and cwd:
            p = Path(cwd).expanduser()
            return p if p.is_absolute() else self.project_path / p
        return self.project_path


@dataclass(frozen=True)
class LayerResult:
    layer: str
    action: Action
    reason: str
    rule: str | None = None
    #: Set by a hook that changed the arguments (already validated and re-checked).
    modified_args: dict[str, Any] | None = None
    #: True when one of the nine preset rules decided (they cannot be overridden).
    preset: bool = False
    #: The user's answer (once, session, always (project), always (user), no, never) and
    #: the rule it granted, when the user decided (for the audit log).
    answer: str | None = None
    grant: str | None = None
    #: Names an allow rule's ``network(...)`` clause grants the call (issue 16).
    domains: frozenset[str] = frozenset()
