"""Compiling rules into indexed patterns, and the subjects of a call they match against."""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from codingcode.approval.call import ToolCall
from codingcode.approval.roles import call_roles, first_with
from codingcode.approval.rules.syntax import Rule, split_rule
from codingcode.paths import glob_to_regex, home_dir, lexical, spellings
from codingcode.tools.declarations import PATH_ROLES, Lookup, builtin_declaration


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


def _compile(
    rule: Rule, index: int, project: Path, declared: Lookup = builtin_declaration
) -> _Compiled:
    """``declared`` says what the rule's tool declares: its argument roles decide what the
    SPEC means (a command pattern, a path glob, a URL), never its name."""
    compiled = _compile_kind(rule, index, project, declared)
    return replace(compiled, spec=split_rule(rule.text)[1] or "")


def _compile_kind(rule: Rule, index: int, project: Path, declared: Lookup) -> _Compiled:
    tool, spec = split_rule(rule.text)
    literal = not any(c in tool for c in "*?[")
    tool_re = None if literal else re.compile(fnmatch.translate(tool))
    if spec is None or spec == "*":
        return _Compiled(rule, index, tool_re, literal, "all", "")
    found = declared(tool) if literal else None
    # An MCP tool's rules stay plain value globs: its server's word is not a declaration.
    if found is not None and found.origin.kind == "mcp":
        found = None
    if found is not None and found.runs_commands:
        return _Compiled(rule, index, tool_re, literal, "command", _command_regex(spec))
    if spec.startswith("domain:"):
        host = spec[len("domain:") :].lower()
        rx = re.escape(host).replace(r"\*", "[^.]+")
        if host.startswith("*."):
            rx = r"(?:[^.]+\.)+" + re.escape(host[2:])
        return _Compiled(rule, index, tool_re, literal, "domain", rx)
    param = re.match(r"^([A-Za-z_][\w-]*):(.*)$", spec)
    if param and not (found is not None and found.names_files and "/" in spec):
        return _Compiled(
            rule,
            index,
            tool_re,
            literal,
            f"param:{param.group(1)}",
            fnmatch.translate(param.group(2))[:-2],
        )
    if found is not None and found.names_places:
        return _Compiled(
            rule,
            index,
            tool_re,
            literal,
            "path",
            "",  # made from the glob when a call first needs it
            path_pattern(spec, project),
        )
    if found is not None and "url" in found.arg_roles.values():
        return _Compiled(rule, index, tool_re, literal, "url", fnmatch.translate(spec)[:-2])
    return _Compiled(rule, index, tool_re, literal, "value", fnmatch.translate(spec)[:-2])


def _rule_key(c: _Compiled) -> str | None:
    """A literal a subject must contain for the rule to match (for indexing), if any."""
    spec = c.spec
    if c.kind == "command":
        if spec.endswith(":*"):
            spec = spec[:-2] + " *"
        words = spec.split(" ", 2)
        first = words[0]
        if not first or "*" in first:
            return None
        if len(words) > 1 and words[1] and "*" not in words[1]:
            # `git push *`: only a line whose first two words are `git push` can match
            # (the pattern's spaces are literal), so it is found by both.
            return f"{first} {words[1]}"
        return first
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
        words = subject.split(" ", 2)
        if len(words) > 1:
            return (words[0], f"{words[0]} {words[1]}")
        return (words[0],)
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
        keyed = self.keyed
        for subject in subjects:
            groups = [self.unkeyed]
            # (only the keys some rule has: the intersection is made in C)
            for key in keyed.keys() & _subject_keys(self.kind, subject):
                groups.append(keyed[key])
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


def _subjects(kind: str, call: ToolCall) -> list[str]:
    args = call.args
    if kind.startswith("param:"):
        v = args.get(kind[6:])
        return [] if v is None else [v if isinstance(v, str) else json.dumps(v)]
    if kind == "path":
        roles = call_roles(call.arg_roles, args, call.tool, call.origin.kind)
        name, role = next(
            ((n, r) for want in PATH_ROLES for n, r in roles.items() if r == want and n in args),
            ("path", "path"),
        )
        v = args.get(name)
        if not isinstance(v, str):
            return []
        if role == "glob":  # a file-name pattern: matched as written, and made absolute
            return [v, lexical(v, call.project_path)]
        return list(spellings(v, call.project_path))
    if kind in ("domain", "url"):
        roles = call_roles(call.arg_roles, args, call.tool, call.origin.kind)
        v = first_with(roles, args, "url") or args.get("url")
    if kind == "domain":
        if not isinstance(v, str):
            return []
        try:
            host = urlsplit(v).hostname or ""
        except ValueError:
            return []
        return [host.lower()]
    if kind == "url":
        return [v] if isinstance(v, str) else []
    if kind == "value":
        return [v for v in args.values() if isinstance(v, str)]
    return []
