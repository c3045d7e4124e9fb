"""The ``permissions`` section of the settings files: the user's rules and default mode."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codingcode.approval.rules.matching import _compile, _regex_of
from codingcode.approval.rules.syntax import (
    NoEquivalentError,
    Rule,
    RuleAction,
    RuleSyntaxError,
    check_rule,
    rule_texts,
)
from codingcode.config import (
    Scope,
    Settings,
    SettingsError,
    granting_sources,
    grants_apply,
    users_own,
)


class RuleObject(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")
    rule: str = Field(min_length=1)
    priority: int = 0
    reason: str | None = None


class ActionRuleObject(RuleObject):
    action: RuleAction


class PermissionsSettings(BaseModel):
    """The ``permissions`` section of a settings file."""

    model_config = ConfigDict(defer_build=True, extra="forbid")
    allow: list[str | RuleObject] = Field(default_factory=list)
    ask: list[str | RuleObject] = Field(default_factory=list)
    deny: list[str | RuleObject] = Field(default_factory=list)
    rules: list[ActionRuleObject] = Field(default_factory=list)
    defaultMode: Literal["default", "acceptEdits", "plan", "bypass"] | None = None


def pydantic_error(path: Path, section: str, exc: ValidationError) -> SettingsError:
    problems = []
    for err in exc.errors(include_url=False):
        loc = section
        for part in err["loc"]:
            if isinstance(part, int):
                loc += f"[{part}]"
            elif part not in ("str", "RuleObject", "ActionRuleObject"):
                loc += f".{part}"
        problems.append(f"{loc}: {err['msg']}")
    return SettingsError(f"Invalid settings in {path}: " + "; ".join(dict.fromkeys(problems)) + ".")


@dataclass
class Policy:
    """Everything approval reads from a project's settings, with each entry's scope kept."""

    rules: list[Rule] = field(default_factory=list)
    default_mode: str | None = None
    default_mode_scope: Scope | None = None
    default_mode_trusted: bool = True

    def without_untrusted_grants(self) -> Policy:
        """Drop what untrusted project files *grant* (allow rules, a looser mode).

        Deny and ask rules always stay: a project may always restrict (DESIGN "Trust").
        """
        kept = [r for r in self.rules if r.action != "allow" or grants_apply(r.scope, r.trusted)]
        mode, scope, trusted = self.default_mode, self.default_mode_scope, self.default_mode_trusted
        if mode in ("bypass", "acceptEdits") and not grants_apply(scope, trusted):
            mode, scope = None, None
        return Policy(kept, mode, scope)

    def distrusting_project(self) -> Policy:
        """The same policy with every project and local rule (and mode) untrusted: what a
        session that does not trust its project's grants applies, whatever the policy was
        read from (its deny and ask rules still apply)."""
        rules = [r if users_own(r.scope) else replace(r, trusted=False) for r in self.rules]
        trusted = self.default_mode_trusted and users_own(self.default_mode_scope)
        return Policy(rules, self.default_mode, self.default_mode_scope, trusted)

    def ignored_grants(self) -> list[str]:
        kept = self.without_untrusted_grants()
        kept_ids = {id(r) for r in kept.rules}  # identity: linear in the number of rules
        ignored = list(
            dict.fromkeys(f"allow rule {r.shown}" for r in self.rules if id(r) not in kept_ids)
        )
        if self.default_mode != kept.default_mode:
            ignored.append(f"defaultMode {self.default_mode}")
        return ignored


def rule_base(source: Path) -> Path | None:
    """Where a Claude Code rule's ``/path`` is relative to: the folder holding the
    ``.claude/`` (or ``.codingcode/``) of its settings file."""
    if source.parent.name in (".claude", ".codingcode"):
        return source.parent.parent
    return None


def rules_from_section(
    data: Any,
    scope: Scope | None,
    source: Path,
    trusted: bool = True,
    notes: list[str] | None = None,
) -> tuple[list[Rule], str | None]:
    """The rules of one file's ``permissions``. A bad entry is an error naming the file and
    the entry; with ``notes`` (a Claude Code file, read as Claude Code reads it) it is one
    line there instead, and the other rules still load."""
    if not isinstance(data, dict):
        raise SettingsError(
            f"Invalid settings in {source}: permissions must be an object with allow/ask/deny lists."
        )
    try:
        parsed = PermissionsSettings.model_validate(data)
    except ValidationError as exc:
        raise pydantic_error(source, "permissions", exc) from None
    rules: list[Rule] = []
    entries: list[tuple[str, int, RuleAction, str | RuleObject]] = []
    for action in ("allow", "ask", "deny"):
        for i, entry in enumerate(getattr(parsed, action)):
            entries.append((f"permissions.{action}[{i}]", i, action, entry))
    for i, obj in enumerate(parsed.rules):
        entries.append((f"permissions.rules[{i}]", i, obj.action, obj))
    unmapped: dict[str, int] = {}
    for where, _, action, entry in entries:
        text = entry if isinstance(entry, str) else entry.rule
        priority = 0 if isinstance(entry, str) else entry.priority
        reason = None if isinstance(entry, str) else entry.reason
        try:
            texts = rule_texts(text, rule_base(source))
            written = text.strip() if texts != (text.strip(),) else ""
            made = []
            for ours in texts:
                check_rule(ours, action)
                rule = Rule(ours, action, priority, scope, str(source), reason, trusted, written)
                if "[" in ours:  # the only way a rule's pattern can fail to compile
                    re.compile(_regex_of(_compile(rule, 0, Path("/"))))
                made.append(rule)
        except (RuleSyntaxError, re.error) as exc:
            if isinstance(exc, NoEquivalentError) and notes is not None:
                unmapped[exc.tool] = unmapped.get(exc.tool, 0) + 1
                continue
            detail = str(exc).removeprefix(f"{text!r}: ")
            message = f"Invalid settings in {source}: {where} {text!r}: {detail}."
            if notes is None:
                raise SettingsError(message) from None
            notes.append(f"codingcode: {message} The rule is ignored.")
            continue
        rules.extend(made)
    if unmapped and notes is not None:
        count = sum(unmapped.values())
        notes.append(
            f"codingcode: {source}: {count} permission rule{'s' if count != 1 else ''} for "
            f"Claude Code tools codingcode does not have ({', '.join(sorted(unmapped))}) "
            f"{'are' if count != 1 else 'is'} not used here."
        )
    return rules, parsed.defaultMode


def load_policy(settings: Settings) -> Policy:
    """The rules and default mode of every settings file (``settings``: the session's)."""
    policy = Policy()
    for f, data, _ in granting_sources(settings, "permissions"):
        notes: list[str] | None = [] if f.dialect == "claude" else None
        rules, mode = rules_from_section(data, f.scope, f.path, f.trusted, notes)
        # Reported once: the notes of the session's settings are shown when it starts.
        settings.notes.extend(n for n in notes or () if n not in settings.notes)
        policy.rules.extend(rules)
        if mode is not None:
            policy.default_mode, policy.default_mode_scope = mode, f.scope
            policy.default_mode_trusted = f.trusted
    return policy
