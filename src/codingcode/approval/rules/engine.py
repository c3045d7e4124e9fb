"""The RuleEngine: the preset rules, then the user's rules, as the pipeline's rules layer."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from codingcode import shell
from codingcode.approval import presets
from codingcode.approval.call import RULES, LayerResult, ToolCall
from codingcode.approval.roles import call_roles, first_with
from codingcode.approval.rules.matching import (
    _command_regex,
    _compile,
    _Compiled,
    _earliest,
    _RuleSet,
)
from codingcode.approval.rules.suggest import suggest_rule
from codingcode.approval.rules.syntax import Rule, split_rule
from codingcode.paths import begin_decision, end_decision, lexical, spellings
from codingcode.shell.cache import BoundedLRU
from codingcode.tools.declarations import Declaration, Lookup, builtin_declaration
from codingcode.tools.definition import ArgRole

_STRICTNESS = {"deny": 0, "ask": 1, "allow": 2}


@dataclass
class _ToolPlan:
    """The rules that can apply to one tool name."""

    all: _RuleSet
    file_restrict: _RuleSet  # file-tool deny/ask rules, for the paths a command names


class RuleEngine:
    """The preset rules, then the user's rules: compiled once, decided in microseconds.

    ``declared`` says what each tool a rule names declares (its argument roles decide what
    the rule's SPEC means); by default the built-ins' declarations."""

    def __init__(
        self, rules: Iterable[Rule], project: Path, declared: Lookup = builtin_declaration
    ) -> None:
        self.project = Path(project)
        self.declared = declared
        ordered = sorted(
            enumerate(rules), key=lambda p: (-p[1].priority, _STRICTNESS[p[1].action], p[0])
        )
        self.rules: list[Rule] = [r for _, r in ordered]
        # Start-up is linear and cheap: rules are grouped by tool name here and compiled
        # only when a call of their tool first needs them (20,000 rules: bench_rules.py).
        self._by_tool: dict[str, list[int]] = {}
        self._glob_tools: list[tuple[int, re.Pattern[str]]] = []
        for i, r in enumerate(self.rules):
            tool = split_rule(r.text)[0]
            if any(c in tool for c in "*?["):
                self._glob_tools.append((i, re.compile(fnmatch.translate(tool))))
            else:
                self._by_tool.setdefault(tool, []).append(i)
        self._compiled_cache: dict[int, _Compiled] = {}
        self._plans: dict[str, _ToolPlan] = {}
        self._place_rule_indices: list[int] | None = None
        #: What the rules say of each command line, but for what its words name on disk
        #: (see ``_evaluate_command``): bounded by entries and size.
        self._lines: BoundedLRU[tuple[str, str, str], _LineVerdict] = BoundedLRU(1024, 200_000)

    def _compiled(self, i: int) -> _Compiled:
        found = self._compiled_cache.get(i)
        if found is None:
            found = _compile(self.rules[i], i, self.project, self.declared)
            self._compiled_cache[i] = found
        return found

    def _plan(self, tool: str, *, runs_commands: bool = False) -> _ToolPlan:
        key = f"{tool}\0{runs_commands}"
        plan = self._plans.get(key)
        if plan is None:
            indices = list(self._by_tool.get(tool, ()))
            indices += [i for i, pattern in self._glob_tools if pattern.fullmatch(tool)]
            mine = [self._compiled(i) for i in sorted(indices)]
            if runs_commands:
                # The SPEC of a rule for a tool that runs a command line (its argument role
                # is ``command``) is a command pattern, as for execute_command.
                mine = [
                    replace(c, kind="command", regex=_command_regex(c.spec))
                    if c.kind == "value" and c.tool_is_literal
                    else c
                    for c in mine
                ]
            files = []
            if runs_commands:
                literal_file_rules = self._place_rules()
                files = [
                    replace(c, kind="shellpath")
                    for c in map(self._compiled, literal_file_rules)
                    if c.kind == "path" and c.rule.action != "allow" and c.tool_is_literal
                ]
            plan = _ToolPlan(_RuleSet(mine), _RuleSet(files))
            if len(self._plans) < 4096:
                self._plans[key] = plan
        return plan

    def _place_rules(self) -> list[int]:
        """The literal rules of tools whose arguments name places on disk (by their
        declarations), in order; found once."""
        if self._place_rule_indices is None:
            found = []
            for tool, indices in self._by_tool.items():
                d = self.declared(tool)
                if d is not None and d.origin.kind != "mcp" and d.names_places:
                    found.extend(indices)
            self._place_rule_indices = sorted(found)
        return self._place_rule_indices

    # -- the layer ------------------------------------------------------------------
    def evaluate(self, call: ToolCall) -> LayerResult:
        begin_decision()
        try:
            return self._evaluate(call)
        finally:
            end_decision()

    def _evaluate(self, call: ToolCall) -> LayerResult:
        roles = call_roles(call.arg_roles, call.args, call.tool, call.origin.kind)
        cwd = call.cwd_for(roles)
        verdict = presets.check(call.tool, call.args, call.project_path, cwd, roles)
        user = self.evaluate_user(call, roles, cwd)
        if verdict.action == "deny":
            return LayerResult(RULES, "deny", verdict.reason, verdict.rule, preset=True)
        if user is not None and user.action == "deny":
            return user
        if verdict.action == "ask":
            return LayerResult(RULES, "ask", verdict.reason, verdict.rule, preset=True)
        if user is not None:
            return user
        return LayerResult(RULES, "continue", "no rule matches this call")

    def evaluate_user(
        self,
        call: ToolCall,
        roles: Mapping[str, ArgRole] | None = None,
        cwd: Path | None = None,
    ) -> LayerResult | None:
        """The user's rules alone (``roles`` and ``cwd``: the call's, when known)."""
        if roles is None:
            roles = call_roles(call.arg_roles, call.args, call.tool, call.origin.kind)
        command = first_with(roles, call.args, "command")
        plan = self._plan(call.tool, runs_commands=command is not None)
        if not plan.all and not plan.file_restrict:
            return None
        if command is not None:
            # any tool that runs a command line: its rules match every simple command
            if cwd is None:
                cwd = call.cwd_for(roles)
            return self._evaluate_command(call, plan, command, cwd)
        found = plan.all.best_for_call(call)
        return _result(found) if found is not None else None

    def _evaluate_command(
        self, call: ToolCall, plan: _ToolPlan, command: str, call_cwd: Path
    ) -> LayerResult | None:
        cwd = lexical(str(call_cwd), call.project_path)
        key = (call.tool, command, cwd)
        line = self._lines.get(key)
        if line is None:
            line = self._line_verdict(plan, command, cwd)
            self._lines.put(key, line, 1 + len(command) // 100 + len(line.path_words))
        if not line.path_words:
            return line.result
        # What the words name on disk is looked at afresh on every call (a name in the
        # project may have become a link to /etc/shadow since the last one): the rules
        # matched by their lexical spellings are known, those of their resolved ones not.
        resolved: list[str] = []
        for text, word_cwd in line.path_words:
            found = spellings(text, word_cwd)  # (lexical,) or (lexical, resolved)
            if len(found) > 1:
                resolved.append(found[1])
        if not resolved:
            return line.lexical_result
        hit = _earliest(line.lexical_hit, plan.file_restrict.best("shellpath", resolved))
        if hit is None:
            return line.result
        return _combine([*line.winners, hit], line.undecided)

    def _line_verdict(self, plan: _ToolPlan, command: str, cwd: str) -> _LineVerdict:
        """What the user's rules say of a command line run in ``cwd`` before its words are
        looked up on disk: a pure function of the text, ``cwd`` and the rules (cached)."""
        analysis = shell.analyze(command, cwd)
        winners: list[_Compiled] = []
        # An allow rule cannot vouch for a line that changes which program runs or what it
        # loads (PATH=..., LD_PRELOAD=..., BASH_ENV=...): deny and ask rules still apply.
        undecided = bool(analysis.opaque or analysis.risky_assignments)
        # A deny or ask rule also sees the raw line (a pattern spanning `&&` still holds).
        hit = plan.all.best("command", [command.strip()])
        if hit is not None and hit.rule.action != "allow":
            winners.append(hit)
        # An allow rule for exactly this whole line (no wildcard: what a grant of a loop or
        # a pipeline saves) vouches for each of its parts; deny and ask rules still apply.
        exact = plan.all.best("command", [command.strip()])
        whole = exact if exact is not None and exact.rule.action == "allow" else None
        if whole is not None and ("*" in whole.spec or whole.spec.strip() != command.strip()):
            whole = None
        if whole is not None:
            winners.append(whole)
        for c in analysis.commands:
            if not c.argv:
                continue
            line = [c.line()]
            if c.transparent:
                # A wrapper's own rule may refuse it; its allow is not needed.
                hit = plan.all.best("command", line)
                if hit is not None and hit.rule.action == "allow":
                    hit = None
            else:
                hit = plan.all.best("command", line)
                if hit is None and whole is None:
                    undecided = True
            if hit is not None:
                winners.append(hit)
        words = _command_words(analysis) if plan.file_restrict else ()
        result = _combine(winners, undecided)
        # The file rules the words' lexical spellings match (pure text, so known now).
        lexical_hit = (
            plan.file_restrict.best("shellpath", [lexical(t, c) for t, c in words])
            if words
            else None
        )
        lexical_result = (
            result if lexical_hit is None else _combine([*winners, lexical_hit], undecided)
        )
        return _LineVerdict(tuple(winners), undecided, words, result, lexical_hit, lexical_result)

    # -- always / never ---------------------------------------------------------------
    def suggest(self, call: ToolCall) -> str | None:
        found = self.declared(call.tool) or Declaration(call.tool, origin=call.origin)
        return suggest_rule(call, found)


@dataclass(frozen=True)
class _LineVerdict:
    """The user's rules on one command line, but for the paths its words name."""

    winners: tuple[_Compiled, ...]  # the rule each simple command (and the line) matched
    undecided: bool  # some command matched no rule, or the line is opaque or risky
    #: (word, cwd) of every word that may name a file, for the file tools' deny/ask rules:
    #: resolved on every call (empty when there are no such rules).
    path_words: tuple[tuple[str, str], ...]
    result: LayerResult | None  # the verdict when no file rule matches those paths
    #: The first file rule the words' lexical spellings match, and the verdict with it
    #: (the verdict when no word resolves to another path).
    lexical_hit: _Compiled | None = None
    lexical_result: LayerResult | None = None


def _combine(winners: Sequence[_Compiled], undecided: bool) -> LayerResult | None:
    """The verdict of the rules each part of a command line matched."""
    if not winners:
        return None
    for action in ("deny", "ask"):
        picked = [w for w in winners if w.rule.action == action]
        if picked:
            return _result(min(picked, key=lambda w: w.index))
    if undecided:
        return None
    # Every winner is an allow rule, one per simple command: the call may reach only the
    # names granted to *each* of its programs (the sandbox cannot tell them apart).
    shared = set(winners[0].rule.domains)
    for w in winners[1:]:
        shared &= set(w.rule.domains)
    return _result(min(winners, key=lambda w: w.index), frozenset(shared))


def _command_words(analysis: shell.Analysis) -> tuple[tuple[str, str], ...]:
    """The words of a line that may name files (arguments and redirect targets known
    before it runs, options left out), each with the cwd it is read in."""
    out: list[tuple[str, str]] = []
    for c in analysis.commands:
        cwd = c.cwd
        if cwd is None:
            continue
        texts = [w.text for w in c.argv[1:]]
        texts += [r.target.text for r in c.redirects if r.target is not None]
        for text in texts:
            if not text or shell.DYN in text or text.startswith("-"):
                continue
            out.append((text, cwd))
    return tuple(out)


def _result(c: _Compiled, domains: frozenset[str] | None = None) -> LayerResult:
    r = c.rule
    where = f" ({r.scope.value} settings)" if r.scope is not None else ""
    reason = r.reason or f"{r.action} rule {r.shown!r}{where}"
    if r.action != "allow":
        granted: frozenset[str] = frozenset()
    else:
        granted = frozenset(r.domains) if domains is None else domains
    return LayerResult(RULES, r.action, reason, r.shown, domains=granted)
