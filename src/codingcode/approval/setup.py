"""Assembling a project's pipeline from its settings (used by ``build_runner`` and ``check``)."""

from __future__ import annotations

from pathlib import Path

from codingcode.approval.audit import AuditLog
from codingcode.approval.confirm import Confirmer
from codingcode.approval.hooks import POST_APPROVAL, HookBus, PreToolUseHooks, load_command_hooks
from codingcode.approval.pipeline import ApprovalPipeline, Validate
from codingcode.approval.rules import Policy, RuleEngine, add_rule, load_policy, local_settings_path
from codingcode.config import (
    Scope,
    Settings,
    SettingsError,
    ignore_local_settings,
    load_settings,
)
from codingcode.modes import PERMISSION_MODES


def build_pipeline(
    project: Path,
    *,
    validate: Validate | None = None,
    mode: str | None = None,
    confirmer: Confirmer | None = None,
    bus: HookBus | None = None,
    audit: bool | AuditLog = True,
    trust_project_grants: bool = True,
    policy: Policy | None = None,
    settings: Settings | None = None,
    assume_trusted: bool = False,
) -> tuple[ApprovalPipeline, str, list[str]]:
    """The pipeline for ``project``, the mode it runs in, and the project grants ignored.

    ``assume_trusted`` (for ``check``'s comparison) applies untrusted allow rules and modes
    as if trusted, but still never runs an untrusted hook: a dry run executes no one's code.
    """
    settings = settings or load_settings(project)
    policy = policy or load_policy(project, settings)
    all_hooks = load_command_hooks(settings)
    distrust = not trust_project_grants
    ignored = policy.ignored_grants(distrust_project=distrust)
    if not assume_trusted:
        policy = policy.without_untrusted_grants(distrust_project=distrust)
    command_hooks = [h for h in all_hooks if h.scope is Scope.USER or (h.trusted and not distrust)]
    ignored += [f"hook {h.command}" for h in all_hooks if h not in command_hooks]
    effective = mode or policy.default_mode or "default"
    if effective not in PERMISSION_MODES:
        raise SettingsError(
            f"Unknown permission mode {effective!r}; choose one of: {', '.join(PERMISSION_MODES)}."
        )
    engine = RuleEngine(policy.rules, project)
    bus = bus or HookBus()
    hooks = PreToolUseHooks(command_hooks, bus)
    log: AuditLog | None
    if isinstance(audit, AuditLog):
        log = audit
    elif audit:
        log = AuditLog(emit=lambda rec: bus.emit(POST_APPROVAL, rec))
    else:
        log = None
    state = {"engine": engine}

    def persist(action: str, text: str) -> None:
        path = local_settings_path(project)
        created = not path.exists()
        add_rule(path, action, text, project=project)  # type: ignore[arg-type]
        if created:
            ignore_local_settings(path)  # personal answers stay out of git
        fresh = load_policy(project).without_untrusted_grants(distrust_project=distrust)
        state["engine"] = RuleEngine(fresh.rules, project)  # applies from the next call on

    pipeline = ApprovalPipeline(
        lambda call: state["engine"].evaluate(call),
        suggest=lambda call: state["engine"].suggest(call),
        pre_hooks=hooks if hooks else None,
        confirmer=confirmer,
        validate=validate,
        persist=persist,
        record=log.record if log is not None else None,
    )
    return pipeline, effective, ignored
