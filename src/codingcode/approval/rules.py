"""Rules: the compact syntax, the user's rules from settings, and the RuleEngine (SPEC A1).

A rule is ``TOOL`` or ``TOOL(SPEC)`` with an action (allow / ask / deny) and a priority:

- ``TOOL`` is a glob over the tool name: ``execute_command``, ``*``, ``github:*``;
- for ``execute_command`` SPEC is a command pattern matched against *every simple command*
  of the line (after the shell analysis): ``git push *`` (`` *`` at the end: any
  arguments, or none), ``npm run test:*`` (the same);
- for the file tools (``read_file``, ``write_file``, ``edit_file``, ``search_files``) SPEC is
  a path glob: ``src/**`` (relative to the project), ``/abs/**``, ``~/x``, ``**/secrets/**``
  (any depth, anywhere); a deny or ask rule for a file tool also covers the paths a shell
  command names;
- ``fetch_url(domain:example.com)`` (``domain:*.example.com`` for the subdomains), or a
  URL glob;
- ``TOOL(name:glob)`` matches one top-level argument; any other SPEC is a glob matched
  against each top-level string argument.

Rules are sorted by priority (higher first); at equal priority deny beats ask beats allow.
The nine preset rules come before all of them and cannot be overridden. Every rule keeps
the scope of the file it came from (user / project / local): workspace trust filters on it.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codingcode.approval import presets, shell
from codingcode.approval.paths import begin_decision, glob_to_regex, home_dir, lexical, spellings
from codingcode.approval.pipeline import RULES, LayerResult, ToolCall
from codingcode.approval.roles import call_roles, first_with
from codingcode.config import Scope, Settings, SettingsError, load_settings

RuleAction = Literal["allow", "ask", "deny"]
_STRICTNESS = {"deny": 0, "ask": 1, "allow": 2}
FILE_TOOLS = frozenset({"read_file", "write_file", "edit_file", "search_files"})
#: The argument a bare SPEC matches, per built-in tool.
PRIMARY_ARG = {
    "read_file": "path",
    "write_file": "path",
    "edit_file": "path",
    "search_files": "path",
    "search_code": "glob",
    "fetch_url": "url",
    "web_search": "query",
    "dispatch_agent": "agent",
    "tool_search": "query",
}


class RuleSyntaxError(ValueError):
    pass


@dataclass(frozen=True)
class Rule:
    text: str
    action: RuleAction
    priority: int = 0
    scope: Scope | None = None  # None: made in code
    source: str = ""  # the file it came from
    reason: str | None = None
    #: False for a rule from a project file the user has not trusted (issue 7): such a file
    #: may restrict (deny, ask) but not grant (allow).
    trusted: bool = True

    @property
    def tool_glob(self) -> str:
        return split_rule(self.text)[0]

    @property
    def spec(self) -> str | None:
        return split_rule(self.text)[1]


def split_rule(text: str) -> tuple[str, str | None]:
    """``tool(spec)`` → (tool, spec); ``tool`` → (tool, None). Raises RuleSyntaxError."""
    text = text.strip()
    if not text:
        raise RuleSyntaxError("a rule cannot be empty")
    if "(" not in text:
        if ")" in text:
            raise RuleSyntaxError(f"{text!r} has a ')' without a '('")
        if any(c.isspace() for c in text):
            raise RuleSyntaxError(
                f"{text!r} is not a tool name; write TOOL or TOOL(SPEC), e.g. execute_command(git push *)"
            )
        return text, None
    if not text.endswith(")"):
        raise RuleSyntaxError(f"{text!r} must end with ')' (TOOL(SPEC))")
    tool, _, spec = text[:-1].partition("(")
    tool = tool.strip()
    if not tool or any(c.isspace() for c in tool):
        raise RuleSyntaxError(f"{text!r}: the tool name before '(' is missing or has spaces")
    if not spec.strip():
        raise RuleSyntaxError(f"{text!r}: the SPEC between the parentheses is empty")
    return tool, spec.strip()


# -- compiling ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _Compiled:
    rule: Rule
    index: int  # position in the sorted order
    tool_re: re.Pattern[str] | None  # None for a literal tool name (compared as text)
    tool_is_literal: bool
    kind: str  # "all" | "command" | "path" | "domain" | "param:NAME" | "value" | "url"
    #: the SPEC as a regex over the subject of its kind ("" for a path rule until needed:
    #: see :func:`_regex_of`)
    regex: str
    #: For path rules: the absolute glob (its literal components index the rule).
    glob: str = ""
    spec: str = ""


def _regex_of(c: _Compiled) -> str:
    if c.regex or c.kind not in ("path", "shellpath"):
        return c.regex
    absolute = c.glob
    if absolute.endswith("/**"):  # `dir/**` also means the directory itself
        return glob_to_regex(absolute[:-3]) + "(?:/.*)?"
    return glob_to_regex(absolute)


def _command_regex(spec: str) -> str:
    if spec.endswith(":*"):
        spec = spec[:-2] + " *"
    out = []
    tail_any = spec.endswith(" *")
    body = spec[:-2] if tail_any else spec
    for part in re.split(r"(\*)", body):
        out.append(".*" if part == "*" else re.escape(part))
    rx = "".join(out)
    return rx + "(?: .*)?" if tail_any else rx


def path_pattern(spec: str, project: Path) -> str:
    """A path rule's SPEC as an absolute glob (``**/x`` stays anchored nowhere)."""
    if spec.startswith("**"):
        return spec
    if spec.startswith("~"):
        return home_dir() + spec[1:]
    if spec.startswith("/"):
        return "/" + spec.lstrip("/")
    return str(project).rstrip("/") + "/" + (spec[2:] if spec.startswith("./") else spec)


def _compile(rule: Rule, index: int, project: Path) -> _Compiled:
    return replace(_compile_kind(rule, index, project), spec=split_rule(rule.text)[1] or "")


def _compile_kind(rule: Rule, index: int, project: Path) -> _Compiled:
    tool, spec = split_rule(rule.text)
    literal = not any(c in tool for c in "*?[")
    tool_re = None if literal else re.compile(fnmatch.translate(tool))
    if spec is None or spec == "*":
        return _Compiled(rule, index, tool_re, literal, "all", "")
    if literal and tool == "execute_command":
        return _Compiled(rule, index, tool_re, literal, "command", _command_regex(spec))
    if spec.startswith("domain:"):
        host = spec[len("domain:") :].lower()
        rx = re.escape(host).replace(r"\*", "[^.]+")
        if host.startswith("*."):
            rx = r"(?:[^.]+\.)+" + re.escape(host[2:])
        return _Compiled(rule, index, tool_re, literal, "domain", rx)
    param = re.match(r"^([A-Za-z_][\w-]*):(.*)$", spec)
    if param and not (literal and tool in FILE_TOOLS and "/" in spec):
        return _Compiled(
            rule,
            index,
            tool_re,
            literal,
            f"param:{param.group(1)}",
            fnmatch.translate(param.group(2))[:-2],
        )
    if literal and (tool in FILE_TOOLS or tool == "search_code"):
        return _Compiled(
            rule,
            index,
            tool_re,
            literal,
            "path",
            "",  # made from the glob when a call first needs it
            path_pattern(spec, project),
        )
    if literal and tool == "fetch_url":
        return _Compiled(rule, index, tool_re, literal, "url", fnmatch.translate(spec)[:-2])
    return _Compiled(rule, index, tool_re, literal, "value", fnmatch.translate(spec)[:-2])


def _rule_key(c: _Compiled) -> str | None:
    """A literal a subject must contain for the rule to match (for indexing), if any."""
    spec = c.spec
    if c.kind == "command":
        if spec.endswith(":*"):
            spec = spec[:-2] + " *"
        first = spec.split(" ", 1)[0]
        return first if first and "*" not in first else None
    if c.kind in ("path", "shellpath"):
        absolute = c.glob
        literal = [p for p in absolute.split("/") if p and not any(ch in p for ch in "*?[")]
        return literal[-1] if literal else None
    if c.kind == "domain":
        host = spec[len("domain:") :].lower()
        return host if "*" not in host else None
    return None


def _subject_keys(kind: str, subject: str) -> Iterable[str]:
    if kind == "command":
        return (subject.split(" ", 1)[0],)
    if kind in ("path", "shellpath"):
        return subject.split("/")
    if kind == "domain":
        return (subject,)
    return ()


class _KindIndex:
    """The rules of one kind of subject, indexed by a literal each needs, in rule order."""

    def __init__(self, kind: str, rules: list[_Compiled]) -> None:
        self.kind = kind
        # Patterns are compiled on first use: a call only touches the rules keyed by what
        # it names (start-up stays linear and cheap with 20,000 rules).
        self.keyed: dict[str, list[_Compiled]] = {}
        self.unkeyed: list[_Compiled] = []
        self._patterns: dict[int, re.Pattern[str]] = {}
        for c in rules:
            key = _rule_key(c)
            if key is None:
                self.unkeyed.append(c)
            else:
                self.keyed.setdefault(key, []).append(c)

    def _pattern(self, c: _Compiled) -> re.Pattern[str]:
        found = self._patterns.get(c.index)
        if found is None:
            found = re.compile(_regex_of(c), re.DOTALL)
            self._patterns[c.index] = found
        return found

    def best(self, subjects: Sequence[str]) -> _Compiled | None:
        best: _Compiled | None = None
        for subject in subjects:
            groups = [self.unkeyed]
            for key in set(_subject_keys(self.kind, subject)):
                found = self.keyed.get(key)
                if found:
                    groups.append(found)
            for group in groups:
                for c in group:  # each group is in rule order: stop at the first
                    if best is not None and c.index >= best.index:
                        break
                    if self._pattern(c).fullmatch(subject):
                        best = c
                        break
        return best


class _RuleSet:
    """Rules that can apply to one tool name, compiled and indexed."""

    def __init__(self, rules: list[_Compiled]) -> None:
        always = [c for c in rules if c.kind == "all"]
        self.always: _Compiled | None = min(always, key=lambda c: c.index) if always else None
        kinds: dict[str, list[_Compiled]] = {}
        for c in rules:
            if c.kind != "all":
                kinds.setdefault(c.kind, []).append(c)
        self.kinds = {k: _KindIndex(k, v) for k, v in kinds.items()}

    def __bool__(self) -> bool:
        return self.always is not None or bool(self.kinds)

    def best(self, kind: str, subjects: Sequence[str]) -> _Compiled | None:
        """The first rule (in order) matching one of ``subjects`` as ``kind``, or always."""
        index = self.kinds.get(kind)
        hit = index.best(subjects) if index is not None and subjects else None
        return _earliest(hit, self.always)

    def best_for_call(self, call: ToolCall) -> _Compiled | None:
        hit = self.always
        for kind, index in self.kinds.items():
            subjects = _subjects(kind, call)
            if subjects:
                hit = _earliest(hit, index.best(subjects))
        return hit


def _earliest(a: _Compiled | None, b: _Compiled | None) -> _Compiled | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if a.index <= b.index else b


@dataclass
class _ToolPlan:
    """The rules that can apply to one tool name."""

    all: _RuleSet
    file_restrict: _RuleSet  # file-tool deny/ask rules, for the paths a command names


def _subjects(kind: str, call: ToolCall) -> list[str]:
    args = call.args
    if kind.startswith("param:"):
        v = args.get(kind[6:])
        return [] if v is None else [v if isinstance(v, str) else json.dumps(v)]
    if kind == "path":
        roles = call_roles(call.arg_roles, args, call.tool, call.origin.kind)
        v = next(
            (
                args[n]
                for want in ("path", "directory", "glob")
                for n, r in roles.items()
                if r == want and n in args
            ),
            args.get(PRIMARY_ARG.get(call.tool, "path")),
        )
        if not isinstance(v, str):
            return []
        if call.tool == "search_code":
            return [v, lexical(v, call.project_path)]
        return list(spellings(v, call.project_path))
    if kind == "domain":
        v = args.get("url")
        if not isinstance(v, str):
            return []
        try:
            host = urlsplit(v).hostname or ""
        except ValueError:
            return []
        return [host.lower()]
    if kind == "url":
        v = args.get("url")
        return [v] if isinstance(v, str) else []
    if kind == "value":
        return [v for v in args.values() if isinstance(v, str)]
    return []


class RuleEngine:
    """The preset rules, then the user's rules: compiled once, decided in microseconds."""

    def __init__(self, rules: Iterable[Rule], project: Path) -> None:
        self.project = Path(project)
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

    def _compiled(self, i: int) -> _Compiled:
        found = self._compiled_cache.get(i)
        if found is None:
            found = _compile(self.rules[i], i, self.project)
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
                literal_file_rules = sorted(
                    i for t in (*FILE_TOOLS, "search_code") for i in self._by_tool.get(t, ())
                )
                files = [
                    replace(c, kind="shellpath")
                    for c in map(self._compiled, literal_file_rules)
                    if c.kind == "path" and c.rule.action != "allow" and c.tool_is_literal
                ]
            plan = _ToolPlan(_RuleSet(mine), _RuleSet(files))
            if len(self._plans) < 4096:
                self._plans[key] = plan
        return plan

    # -- the layer ------------------------------------------------------------------
    def evaluate(self, call: ToolCall) -> LayerResult:
        begin_decision()
        roles = call_roles(call.arg_roles, call.args, call.tool, call.origin.kind)
        verdict = presets.check(call.tool, call.args, call.project_path, call.cwd, roles)
        user = self.evaluate_user(call)
        if verdict.action == "deny":
            return LayerResult(RULES, "deny", verdict.reason, verdict.rule, preset=True)
        if user is not None and user.action == "deny":
            return user
        if verdict.action == "ask":
            return LayerResult(RULES, "ask", verdict.reason, verdict.rule, preset=True)
        if user is not None:
            return user
        return LayerResult(RULES, "continue", "no rule matches this call")

    def evaluate_user(self, call: ToolCall) -> LayerResult | None:
        roles = call_roles(call.arg_roles, call.args, call.tool, call.origin.kind)
        command = first_with(roles, call.args, "command")
        plan = self._plan(call.tool, runs_commands=command is not None)
        if not plan.all and not plan.file_restrict:
            return None
        if command is not None:
            # any tool that runs a command line: its rules match every simple command
            return self._evaluate_command(call, plan, command)
        found = plan.all.best_for_call(call)
        return _result(found) if found is not None else None

    def _evaluate_command(
        self, call: ToolCall, plan: _ToolPlan, command: str
    ) -> LayerResult | None:
        cwd = lexical(str(call.cwd), call.project_path)
        analysis = shell.analyze(command, cwd)
        winners: list[_Compiled] = []
        # An allow rule cannot vouch for a line that changes which program runs or what it
        # loads (PATH=..., LD_PRELOAD=..., BASH_ENV=...): deny and ask rules still apply.
        undecided = bool(analysis.opaque or analysis.risky_assignments)
        # A deny or ask rule also sees the raw line (a pattern spanning `&&` still holds).
        hit = plan.all.best("command", [command.strip()])
        if hit is not None and hit.rule.action != "allow":
            winners.append(hit)
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
                if hit is None:
                    undecided = True
            if hit is not None:
                winners.append(hit)
        if plan.file_restrict:
            paths = _command_paths(analysis)
            if paths:
                hit = plan.file_restrict.best("shellpath", paths)
                if hit is not None:
                    winners.append(hit)
        if not winners:
            return None
        for action in ("deny", "ask"):
            picked = [w for w in winners if w.rule.action == action]
            if picked:
                return _result(min(picked, key=lambda w: w.index))
        if undecided:
            return None
        return _result(min(winners, key=lambda w: w.index))

    # -- always / never ---------------------------------------------------------------
    def suggest(self, call: ToolCall) -> str | None:
        return suggest_rule(call)


def _command_paths(analysis: shell.Analysis) -> list[str]:
    out: list[str] = []
    for c in analysis.commands:
        if c.cwd is None:
            continue
        words = list(c.argv[1:]) + [r.target for r in c.redirects if r.target is not None]
        for w in words:
            if w.dynamic or not w.text or w.text.startswith("-"):
                continue
            out.extend(spellings(w.text, c.cwd))
    return out


def _result(c: _Compiled) -> LayerResult:
    r = c.rule
    where = f" ({r.scope.value} settings)" if r.scope is not None else ""
    reason = r.reason or f"{r.action} rule {r.text!r}{where}"
    return LayerResult(RULES, r.action, reason, r.text)


# -- suggesting a rule for always / never -------------------------------------------------
#: Programs whose first word(s) after the name are a sub-command worth keeping in a rule.
_SUBCOMMAND_DEPTH = {
    "git": 1,
    "npm": 1,
    "pnpm": 1,
    "yarn": 1,
    "bun": 1,
    "cargo": 1,
    "docker": 1,
    "podman": 1,
    "kubectl": 1,
    "pip": 1,
    "pip3": 1,
    "uv": 1,
    "go": 1,
    "make": 1,
    "poetry": 1,
    "gh": 2,
    "dotnet": 1,
    "mvn": 1,
    "gradle": 1,
    "./gradlew": 1,
    "just": 1,
    "brew": 1,
    "apt": 1,
    "systemctl": 1,
    "helm": 1,
    "terraform": 1,
    "npx": 1,
    "python": 0,
    "python3": 0,
}
_RUN_WORDS = frozenset({"run", "exec", "compose", "x"})


def suggest_rule(call: ToolCall) -> str | None:
    """A generalised rule for an always/never answer (shown to the user before saving)."""
    tool = call.tool
    if tool == "execute_command":
        command = call.args.get("command")
        if not isinstance(command, str):
            return None
        analysis = shell.analyze(command, lexical(str(call.cwd), call.project_path))
        if analysis.opaque:
            return None
        leaves = [c for c in analysis.commands if c.argv and not c.transparent]
        prefixes = {_command_prefix(c) for c in leaves}
        if len(prefixes) != 1 or None in prefixes:
            return None
        return f"execute_command({prefixes.pop()})"
    if tool in FILE_TOOLS:
        path = call.args.get("path")
        if not isinstance(path, str):
            return None
        absolute = Path(lexical(path, call.project_path))
        parent = absolute if tool == "search_files" else absolute.parent
        try:
            rel = parent.relative_to(call.project_path)
        except ValueError:
            return f"{tool}({parent}/**)" if str(parent) != "/" else f"{tool}({absolute})"
        if str(rel) == ".":
            return (
                f"{tool}({absolute.relative_to(call.project_path)})"
                if tool != "search_files"
                else f"{tool}(**)"
            )
        return f"{tool}({rel}/**)"
    if tool == "fetch_url":
        url = call.args.get("url")
        try:
            host = urlsplit(str(url)).hostname
        except ValueError:
            host = None
        return f"fetch_url(domain:{host})" if host else None
    return tool


def _command_prefix(c: shell.Command) -> str | None:
    prog = c.program
    if prog is None:
        return None
    depth = _SUBCOMMAND_DEPTH.get(prog, 0)
    words = [prog]
    for w in c.argv[1:]:
        if len(words) > depth:
            break
        t = w.text
        if w.dynamic or w.glob or t.startswith("-") or "/" in t or "=" in t or " " in t:
            break
        words.append(t)
        if t in _RUN_WORDS and prog in _SUBCOMMAND_DEPTH:
            depth += 1
    return " ".join(words) + " *"


# -- settings -------------------------------------------------------------------------------
class RuleObject(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rule: str = Field(min_length=1)
    priority: int = 0
    reason: str | None = None


class ActionRuleObject(RuleObject):
    action: RuleAction


class PermissionsSettings(BaseModel):
    """The ``permissions`` section of a settings file."""

    model_config = ConfigDict(extra="forbid")
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

    def without_untrusted_grants(self, *, distrust_project: bool = False) -> Policy:
        """Drop what untrusted project files *grant* (allow rules, a looser mode).

        Deny and ask rules always stay: a project may always restrict (DESIGN "Trust").
        ``distrust_project`` treats every project and local file as untrusted.
        """

        def granted(trusted: bool, scope: Scope | None) -> bool:
            if scope in (Scope.USER, None):
                return True
            return trusted and not distrust_project

        kept = [r for r in self.rules if r.action != "allow" or granted(r.trusted, r.scope)]
        mode, scope, trusted = self.default_mode, self.default_mode_scope, self.default_mode_trusted
        if mode in ("bypass", "acceptEdits") and not granted(trusted, scope):
            mode, scope = None, None
        return Policy(kept, mode, scope)

    def ignored_grants(self, *, distrust_project: bool = False) -> list[str]:
        kept = self.without_untrusted_grants(distrust_project=distrust_project)
        kept_ids = {id(r) for r in kept.rules}  # identity: linear in the number of rules
        ignored = [f"allow rule {r.text}" for r in self.rules if id(r) not in kept_ids]
        if self.default_mode != kept.default_mode:
            ignored.append(f"defaultMode {self.default_mode}")
        return ignored


def rules_from_section(
    data: Any, scope: Scope | None, source: Path, trusted: bool = True
) -> tuple[list[Rule], str | None]:
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
    for where, _, action, entry in entries:
        text = entry if isinstance(entry, str) else entry.rule
        priority = 0 if isinstance(entry, str) else entry.priority
        reason = None if isinstance(entry, str) else entry.reason
        try:
            split_rule(text)
            rule = Rule(text.strip(), action, priority, scope, str(source), reason, trusted)
            if "[" in text:  # the only way a rule's pattern can fail to compile
                re.compile(_regex_of(_compile(rule, 0, Path("/"))))
        except (RuleSyntaxError, re.error) as exc:
            raise SettingsError(f"Invalid settings in {source}: {where} {text!r}: {exc}.") from None
        rules.append(rule)
    return rules, parsed.defaultMode


def load_policy(project: Path, settings: Settings | None = None) -> Policy:
    settings = settings or load_settings(project)
    policy = Policy()
    for f, data in settings.sources("permissions"):
        rules, mode = rules_from_section(data, f.scope, f.path, f.trusted)
        policy.rules.extend(rules)
        if mode is not None:
            policy.default_mode, policy.default_mode_scope = mode, f.scope
            policy.default_mode_trusted = f.trusted
    return policy


# -- persistence: rules add / remove, always / never --------------------------------------------
def local_settings_path(project: Path) -> Path:
    return project / ".codingcode" / "settings.local.json"


def settings_path_for(scope: Scope, project: Path) -> Path:
    from codingcode.config import settings_paths

    return dict(settings_paths(project))[scope]


def _read_json_object(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"Settings file {path} is not valid JSON: {exc}.") from None
    if not isinstance(data, dict):
        raise SettingsError(f"Settings file {path} must hold a JSON object.")
    return data


def _write_json(path: Path, data: dict[str, Any], project: Path | None = None) -> None:
    """Write a settings file atomically; a project file the user trusted stays trusted."""
    from codingcode.atomic import atomic_write_bytes
    from codingcode.trust import TrustStore

    store = TrustStore() if project is not None else None
    was_trusted = True
    if store is not None and project is not None and path.exists():
        was_trusted = store.is_trusted(project, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
    if store is not None and project is not None:
        # What the user's own command or answer wrote is theirs (issue 7).
        store.refresh_file(project, path, was_trusted=was_trusted)


def add_rule(
    path: Path, action: RuleAction, text: str, priority: int = 0, *, project: Path | None = None
) -> bool:
    """Append a rule to a settings file (atomically); False if it is already there."""
    split_rule(text)
    _compile(Rule(text, action, priority), 0, Path("/"))
    data = _read_json_object(path)
    perms = data.setdefault("permissions", {})
    if not isinstance(perms, dict):
        raise SettingsError(f"Invalid settings in {path}: permissions must be an object.")
    if priority:
        lst = perms.setdefault("rules", [])
        entry: Any = {"rule": text, "action": action, "priority": priority}
    else:
        lst = perms.setdefault(action, [])
        entry = text
    if entry in lst:
        return False
    lst.append(entry)
    _write_json(path, data, project)
    return True


def remove_rule(path: Path, text: str, *, project: Path | None = None) -> int:
    """Remove every entry with this rule text from a settings file; how many were removed."""
    data = _read_json_object(path)
    perms = data.get("permissions")
    if not isinstance(perms, dict):
        return 0
    removed = 0
    for key in ("allow", "ask", "deny", "rules"):
        lst = perms.get(key)
        if not isinstance(lst, list):
            continue
        keep = [
            e for e in lst if not ((e == text) or (isinstance(e, dict) and e.get("rule") == text))
        ]
        removed += len(lst) - len(keep)
        perms[key] = keep
    if removed:
        _write_json(path, data, project)
    return removed


def presets_match(text: str) -> presets.PresetRule | None:
    """The preset rule a user names by id (``R2``) or text (``sudo``), if any."""
    t = text.strip()
    for r in presets.PRESET_RULES:
        if t.upper() == r.id or t == r.text:
            return r
    return None
