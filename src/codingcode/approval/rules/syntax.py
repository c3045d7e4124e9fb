"""The rule syntax: ``TOOL`` or ``TOOL(SPEC)`` with an action and a priority."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from codingcode.config import Scope

RuleAction = Literal["allow", "ask", "deny"]
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
