"""``allowed-tools`` of a skill or command: a limit while it is active, never a grant.

Claude Code's skills and commands name the tools they need in ``allowed-tools``. Here
that list *narrows* what the model may call while the skill (or command) is active — from
the call that loaded the skill, or the command's prompt, to the end of that prompt — and
never widens it: a call inside the list still goes through the whole approval pipeline
(the user's rules, the presets, the mode, the user's answer), so a skill someone else wrote
cannot grant itself anything (issue 17: "never grants beyond the user's rules").

Entries use our rule syntax or Claude Code's (``Bash(git diff:*)``, ``Read``,
``mcp__github``), translated by :mod:`codingcode.tools.claude_names`, and are matched by the
rule engine itself: ``execute_command(git diff *)`` admits ``git diff HEAD`` but not
``git diff; rm -rf x`` (every simple command must match, as for an allow rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from codingcode.tools.claude_names import translate_rule

if TYPE_CHECKING:
    from codingcode.approval.pipeline import ToolCall
    from codingcode.approval.rules import RuleEngine

#: Tools a limit never refuses: finding and loading tools and skills is not acting.
ALWAYS_ALLOWED = frozenset({"tool_search"})
SKILL_PREFIX = "skill_"


@dataclass
class ToolLimit:
    """The tools one active skill or command allows (its ``allowed-tools``)."""

    #: Who set it, for the message: "skill pdf", "command /commit".
    owner: str
    entries: tuple[str, ...]
    project: Path
    #: Entries that are not rules (kept out of the engine, named in the message).
    invalid: list[str] = field(default_factory=list)
    _engine: RuleEngine | None = field(default=None, init=False, repr=False)

    @classmethod
    def build(cls, owner: str, entries: Sequence[str], project: Path) -> ToolLimit:
        return cls(
            owner,
            tuple(
                dict.fromkeys(r for e in entries if e.strip() for r in translate_rule(e, project))
            ),
            project,
        )

    def engine(self) -> RuleEngine:
        if self._engine is None:
            from codingcode.approval.rules import Rule, RuleEngine, RuleSyntaxError, split_rule

            rules = []
            for text in self.entries:
                try:
                    split_rule(text)
                    rule = Rule(text, "allow", 0, None, self.owner)
                    RuleEngine([rule], self.project)  # compiles: a bad pattern fails here
                except (RuleSyntaxError, ValueError):
                    self.invalid.append(text)
                    continue
                rules.append(rule)
            self._engine = RuleEngine(rules, self.project)
        return self._engine

    def refusal(self, call: ToolCall) -> str | None:
        """None when ``call`` is inside the list, else the message for the model."""
        if call.tool in ALWAYS_ALLOWED or call.tool.startswith(SKILL_PREFIX):
            return None
        result = self.engine().evaluate_user(call)
        if result is not None and result.action == "allow":
            return None
        listed = ", ".join(e for e in self.entries if e not in self.invalid) or "(none)"
        command = call.args.get("command")
        what = f"{call.tool} `{command[:80]}`" if isinstance(command, str) else call.tool
        return (
            f"{what} is outside the tools the {self.owner} allows while it is active "
            f"(allowed-tools: {listed}). Use one of those, or finish the task and answer."
        )


def check_limits(limits: Sequence[ToolLimit], call: ToolCall) -> str | None:
    """The first refusal of the active limits (each must admit the call), or None."""
    for limit in limits:
        why = limit.refusal(call)
        if why is not None:
            return why
    return None
