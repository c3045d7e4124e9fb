"""The rule syntax: ``TOOL`` or ``TOOL(SPEC)`` with an action and a priority."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from codingcode.config import Scope
from codingcode.sandbox.network.domains import pattern_problem

RuleAction = Literal["allow", "ask", "deny"]


class RuleSyntaxError(ValueError):
    pass


class NoEquivalentError(RuleSyntaxError):
    """A rule in Claude Code's syntax for one of its tools codingcode has no equivalent of
    (``PowerShell(...)``, ``Skill(...)``): understood, and standing for nothing here."""

    def __init__(self, text: str, tool: str) -> None:
        super().__init__(f"{text!r}: Claude Code's {tool} tool has no equivalent in codingcode")
        self.tool = tool


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
    #: The rule as its author wrote it when that differs from ``text`` (a Claude Code rule,
    #: ``Bash(npm test:*)``, is kept as ``execute_command(npm test *)``): what ``check``,
    #: ``rules list`` and a denial name.
    written: str = ""

    @property
    def shown(self) -> str:
        return self.written or self.text

    @property
    def tool_glob(self) -> str:
        return split_rule(self.text)[0]

    @property
    def spec(self) -> str | None:
        return split_rule(self.text)[1]

    @property
    def domains(self) -> tuple[str, ...]:
        """The names a call this rule allows may reach (its ``network(...)`` clause)."""
        return split_network(self.text)[1]


#: ``TOOL(SPEC) network(NAME, NAME)``: the clause at the end of a rule that grants names.
_NETWORK_CLAUSE = re.compile(r"^(?P<base>.*\S)\s+network\((?P<names>[^()]*)\)$", re.DOTALL)
#: At most this many names in one clause (a grant is a few registries, not a list).
MAX_RULE_DOMAINS = 32


@functools.lru_cache(maxsize=65536)  # pure; the engine and compiler split each rule often
def split_network(text: str) -> tuple[str, tuple[str, ...]]:
    """``execute_command(npm install *) network(registry.npmjs.org)`` →
    (``execute_command(npm install *)``, (``registry.npmjs.org``,)); a rule without the
    clause → (the rule, ()). The names are exact host names or ``*.example.com``; they are
    checked here (RuleSyntaxError), lower-cased, and kept in order without repeats."""
    text = text.strip()
    if "network" not in text:
        return text, ()
    if re.match(r"^network\s*\(", text):
        raise RuleSyntaxError(
            f"{text!r}: network(NAME) goes after the rule it grants the names to, e.g. "
            "execute_command(npm install *) network(registry.npmjs.org); for every command "
            "use sandbox.network.allowedDomains"
        )
    m = _NETWORK_CLAUSE.match(text)
    if m is None or ("(" in m.group("base") and not m.group("base").endswith(")")):
        return text, ()
    names = [n.strip().lower() for n in re.split(r"[,\s]+", m.group("names")) if n.strip()]
    if not names:
        raise RuleSyntaxError(f"{text!r}: network() names no domain")
    if len(names) > MAX_RULE_DOMAINS:
        raise RuleSyntaxError(f"{text!r}: at most {MAX_RULE_DOMAINS} names in network(...)")
    for name in names:
        problem = pattern_problem(name)
        if problem is not None:
            raise RuleSyntaxError(f"{text!r}: network({name}): {problem}")
    return m.group("base").strip(), tuple(dict.fromkeys(names))


def check_rule(text: str, action: str) -> None:
    """Raises RuleSyntaxError unless ``text`` is a rule ``action`` may carry."""
    split_rule(text)
    if split_network(text)[1] and action != "allow":
        raise RuleSyntaxError(
            f"{text!r}: network(...) grants names, so it goes with allow rules only "
            "(to refuse a name, use sandbox.network.deniedDomains)"
        )


def rule_texts(text: str, base: Path | None = None) -> tuple[str, ...]:
    """The rules of ours one written rule stands for: a rule in Claude Code's syntax
    (``Bash(npm test:*)``, ``Read(./secrets/**)``, ``mcp__github``) translated
    (:mod:`codingcode.tools.claude_names`; ``base``: where its ``/path`` is relative to),
    one of ours as it is. Raises RuleSyntaxError for a rule in neither syntax."""
    from codingcode.tools.claude_names import (
        CLAUDE_ONLY_TOOLS,
        CLAUDE_TOOLS,
        is_claude_rule,
        translate_rule,
    )

    text = text.strip()
    base_text, domains = split_network(text)
    named = base_text.partition("(")[0].strip()
    if named in CLAUDE_ONLY_TOOLS:
        raise NoEquivalentError(text, named)
    if is_claude_rule(base_text):
        if "(" in base_text and not base_text.endswith(")"):
            raise RuleSyntaxError(f"{text!r} must end with ')' (Tool(specifier))")
        tool, paren, spec = base_text.partition("(")
        if paren and not spec[:-1].strip():
            raise RuleSyntaxError(f"{text!r}: the specifier between the parentheses is empty")
        clause = f" network({', '.join(domains)})" if domains else ""
        out = tuple(t + clause for t in translate_rule(base_text, base))
    else:
        tool = split_rule(text)[0]
        if tool[:1].isupper() and not any(c in tool for c in "*?[:"):
            import difflib

            near = difflib.get_close_matches(tool, sorted(CLAUDE_TOOLS), n=1, cutoff=0.6)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise RuleSyntaxError(
                f"{text!r}: {tool!r} is not a tool of codingcode or of Claude Code{hint}; "
                "write Tool(specifier) as Claude Code does (Bash(npm test:*), Read(./src/**)) "
                "or TOOL(SPEC) in ours (execute_command(npm test *))"
            )
        out = (text,)
    for t in out:
        split_rule(t)
    return out


def split_rule(text: str) -> tuple[str, str | None]:
    """``tool(spec)`` → (tool, spec); ``tool`` → (tool, None). Raises RuleSyntaxError.
    A ``network(...)`` clause at the end is not part of the SPEC (:func:`split_network`)."""
    text = split_network(text)[0]
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


def split_rule_list(values: Iterable[str]) -> list[str]:
    """Rules (or tool names) from one or more strings, each split on commas and white space
    outside parentheses: ``"read_file,execute_command(git log *)"`` is two rules."""
    out: list[str] = []
    for value in values:
        depth = 0
        current = ""
        for ch in value:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            if ch in ", \t\n" and depth == 0:
                if current.strip():
                    out.append(current.strip())
                current = ""
            else:
                current += ch
        if current.strip():
            out.append(current.strip())
    return out
