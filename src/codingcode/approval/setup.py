"""Assembling a project's pipeline from its settings (used by ``build_runner`` and ``check``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codingcode.approval.confirm import Confirmer
from codingcode.approval.pipeline import ApprovalPipeline, Record, ToolCall, Validate
from codingcode.approval.rules import (
    Policy,
    Rule,
    RuleEngine,
    add_rule,
    load_policy,
    local_settings_path,
)
from codingcode.config import (
    Scope,
    Settings,
    SettingsError,
    granting_sources,
    ignore_local_settings,
)
from codingcode.hooks.bus import HookBus
from codingcode.hooks.settings import CommandHook, load_command_hooks, runnable_hooks
from codingcode.modes import PERMISSION_MODES
from codingcode.tools.declarations import Lookup, builtin_declaration

if TYPE_CHECKING:
    from codingcode.sandbox.service import SandboxService
    from codingcode.workspace import Workspace


def build_pipeline(
    workspace: Workspace,
    *,
    validate: Validate | None = None,
    mode: str | None = None,
    confirmer: Confirmer | None = None,
    bus: HookBus | None = None,
    record: Record | None = None,
    policy: Policy | None = None,
    assume_trusted: bool = False,
    declared: Lookup = builtin_declaration,
    sandbox: SandboxService | None = None,
    command_hooks: list[CommandHook] | None = None,
) -> tuple[ApprovalPipeline, str, list[str]]:
    """The pipeline for the workspace's project, the mode it runs in, and the project grants
    ignored (``workspace``: the session's settings and trust, read once by the front end).
    ``declared``: what the tools the rules name declare (the runner's registry; default the
    built-ins), which decides what each rule's SPEC means. ``record``: where each layer's
    result is written (the runner's audit log; None: nowhere). ``sandbox``: the session's
    sandbox, which ``approvals.autoAllowSandboxed`` asks (None: the workspace's, built on
    first use). ``command_hooks``: the settings' command hooks, when the caller has read them.

    ``assume_trusted`` (for ``check``'s comparison) applies untrusted allow rules and modes
    as if trusted, but still never runs an untrusted hook: a dry run executes no one's code.
    """
    project, settings = workspace.root, workspace.settings
    if policy is None:
        policy = load_policy(settings)  # (the workspace's files, as trusted as it says)
    elif not workspace.trust_project_grants:  # a caller's own: its project's rules grant nothing
        policy = policy.distrusting_project()
    # Rules made in code for this session (``--allowed-tools`` / ``--disallowed-tools``): in
    # no settings file, so the re-read after an always/never answer must keep them.
    session_rules = [r for r in policy.rules if r.scope is None]
    all_hooks = load_command_hooks(settings) if command_hooks is None else command_hooks
    ignored = policy.ignored_grants()
    if not assume_trusted:
        policy = policy.without_untrusted_grants()
    runnable = runnable_hooks(all_hooks)
    ignored += [f"hook {h.command}" for h in all_hooks if h not in runnable]
    effective = mode or policy.default_mode or "default"
    if effective not in PERMISSION_MODES:
        raise SettingsError(
            f"Unknown permission mode {effective!r}; choose one of: {', '.join(PERMISSION_MODES)}."
        )
    engine = RuleEngine(policy.rules, project, declared)
    bus = bus or HookBus()
    pre_hooks = None  # (the hook layer's module loads only where there are hooks)
    if bus.pre_tool_use or any(h.event == "PreToolUse" for h in runnable):
        from codingcode.hooks.pre_tool_use import PreToolUseHooks

        pre_hooks = PreToolUseHooks(runnable, bus)
    state = {"engine": engine}

    def persist(action: str, text: str, scope: str = "local") -> None:
        from codingcode.approval.grants import split_rules
        from codingcode.approval.rules import RuleSyntaxError, settings_path_for

        local = local_settings_path(project)
        path = settings_path_for(Scope.USER, project) if scope == "user" else local
        created = path == local and not path.exists()
        rules = split_rules(text)
        try:
            for one in rules:  # all checked before any is written
                RuleEngine([Rule(one, "allow")], project, declared)
        except RuleSyntaxError as exc:
            raise ValueError(str(exc)) from None
        for one in rules:
            add_rule(path, action, one, project=project, trust=workspace.trust)  # type: ignore[arg-type]
        if created:
            ignore_local_settings(path)  # personal answers stay out of git
        fresh = load_policy(workspace.reload().settings)
        fresh.rules.extend(session_rules)
        fresh = fresh.without_untrusted_grants()
        state["engine"] = RuleEngine(fresh.rules, project, declared)  # from the next call on

    def session_engine(texts: list[str]) -> RuleEngine:
        from codingcode.approval.grants import split_rules
        from codingcode.approval.rules import RuleSyntaxError

        try:
            rules = [Rule(one, "allow") for t in texts for one in split_rules(t)]
            return RuleEngine(rules, project, declared)
        except RuleSyntaxError as exc:
            raise ValueError(str(exc)) from None

    approvals = approvals_settings(settings)
    pipeline = ApprovalPipeline(
        lambda call: state["engine"].evaluate(call),
        suggest=lambda call: suggest_grant(call, state["engine"]),
        pre_hooks=pre_hooks,
        confirmer=confirmer,
        validate=validate,
        persist=persist,
        record=record,
        read_only=read_only_command(project, approvals),
        precheck=precheck_edit,
    )
    pipeline.make_engine = session_engine
    if approvals.get("autoAllowSandboxed") is True:
        if sandbox is None:
            from codingcode.sandbox.service import SandboxService

            pipeline.contained = sandbox_contains(lambda: SandboxService.for_workspace(workspace))
        else:
            given = sandbox
            pipeline.contained = sandbox_contains(lambda: given)
    return pipeline, effective, ignored


def sandbox_contains(sandbox: Callable[[], SandboxService]) -> Callable[[ToolCall], bool]:
    """``approvals.autoAllowSandboxed``: a command tool's call the sandbox fully contains —
    the sandbox is on and enforced, no network, writes only to the project (no extra
    writable roots), run from inside the project. ``sandbox``: the session's (asked once,
    at the first command)."""
    from codingcode.paths import is_inside

    verdict: dict[str, bool] = {}

    def sandbox_ok() -> bool:
        if "ok" not in verdict:
            try:
                verdict["ok"] = sandbox_fully_contains(sandbox())
            except Exception:  # bad settings: not contained
                verdict["ok"] = False
        return verdict["ok"]

    def check(call: ToolCall) -> bool:
        if "command" not in call.arg_roles.values() or call.origin.kind == "mcp":
            return False
        if not is_inside(str(call.cwd), call.project_path):
            return False
        return sandbox_ok()

    return check


def sandbox_fully_contains(service: SandboxService) -> bool:
    """Whether the sandbox is on, enforced here, offline, and writes only the project."""
    from codingcode.sandbox.backends import NoneBackend
    from codingcode.sandbox.policy import Network, SandboxMode

    try:
        policy = service.policy
        if not policy.contained or policy.network is not Network.NONE:
            return False
        if policy.mode is not SandboxMode.WORKSPACE_WRITE or policy.writable_roots:
            return False
        return not isinstance(service.backend(), NoneBackend)
    except Exception:  # no backend on this machine: not contained
        return False


def approvals_settings(settings: Settings) -> dict[str, Any]:
    """The ``approvals`` section: user settings always, a project's only once trusted
    (what it holds grants: more commands unasked)."""
    merged: dict[str, Any] = {}
    for _, value, applies in granting_sources(settings, "approvals"):
        if not isinstance(value, dict) or not applies:
            continue
        for key, v in value.items():
            if key == "readOnlyCommands" and isinstance(v, dict):
                merged.setdefault(key, {}).update(v)
            else:
                merged[key] = v
    return merged


def suggest_grant(call: ToolCall, engine: RuleEngine) -> str | None:
    """The narrowest useful rule for a grant (commands), else the engine's suggestion."""
    if call.effects is not None and "mode" in call.effects:
        return None  # leaving plan mode (exit_plan_mode): each plan is approved on its own
    from codingcode.approval.roles import call_roles, first_with

    roles = call_roles(call.arg_roles, call.args, call.tool, call.origin.kind)
    if "command" in roles.values() and call.origin.kind != "mcp":
        from codingcode.approval.grants import narrow_rule
        from codingcode.approval.network_scopes import with_program_network

        command = first_with(roles, call.args, "command")
        if command is None:
            return None
        # a package install's grant carries its registry's names (issue 16)
        return with_program_network(narrow_rule(call.tool, command, call.project_path, call.cwd))
    return engine.suggest(call)


def read_only_command(project: Path, approvals: dict[str, Any]) -> Callable[[ToolCall], str | None]:
    from codingcode.approval.readonly import ProgramSpec, classify, programs_with

    # The settings' own entries are read now (a bad one fails here, as it always did); the
    # built-in list (a TOML file) on the first command line there is to classify.
    extra = programs_with(approvals.get("readOnlyCommands"), builtins=False)
    programs: dict[str, ProgramSpec] | None = None

    def check(call: ToolCall) -> str | None:
        nonlocal programs
        roles = call.arg_roles
        command_arg = next((k for k, r in roles.items() if r == "command"), None)
        if command_arg is None or call.effects is None:
            return None
        command = call.args.get(command_arg)
        if not isinstance(command, str):
            return None
        if programs is None:
            programs = {**programs_with(None), **extra}
        verdict = classify(command, str(call.cwd), call.project_path, programs)
        return f"a read-only command: {verdict.reason}" if verdict.read_only else None

    return check


def precheck_edit(call: ToolCall) -> str | None:
    from codingcode.approval.preview import preview

    seen = preview(call.tool, call.args, call.project_path, call.declaration)
    return seen.error if seen is not None else None
