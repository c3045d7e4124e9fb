"""The rule a "yes, always" or "yes, this session" saves: the narrowest useful one.

Approving ``python3 -m pytest -q`` should not allow every ``python3`` program, nor
``rm -rf build`` every ``rm``. :func:`narrow_rule` keeps the program *and what it does*:
a module run (``python3 -m pytest *``), a sub-command and its first target
(``git push origin *``, ``npm run test``), and the exact text of everything else
(``rm -rf build``). Parts of a command line that are read-only commands need no rule.
Several rules (a pipeline of two programs) are joined by ``, `` (:func:`split_rules`).
"""

from __future__ import annotations

import re
from pathlib import Path

from codingcode import shell
from codingcode.paths import lexical

#: Programs whose sub-command names what they do; how many words to keep after the program,
#: and whether what follows may vary (``*``). Everything not here is granted exactly.
SUBCOMMAND_TOOLS: dict[str, int] = {
    "cargo": 1,
    "go": 1,
    "make": 1,
    "just": 1,
    "npm": 1,
    "pnpm": 1,
    "yarn": 1,
    "bun": 1,
    "uv": 1,
    "poetry": 1,
    "ruff": 1,
    "dotnet": 1,
    "mvn": 1,
    "gradle": 1,
    "./gradlew": 1,
    "docker": 1,
    "kubectl": 1,
    "gh": 2,
    "pytest": 0,
    "mypy": 0,
    "tox": 0,
    "black": 0,
    "eslint": 0,
    "tsc": 0,
    "prettier": 0,
    "jest": 0,
    "vitest": 0,
    "node": 1,
}
#: Sub-commands that run a named script or tool: keep the name (``npm run test``).
RUN_WORDS = frozenset({"run", "exec", "x", "test"})
#: git sub-commands safe to repeat with other arguments; the rest (reset, clean, checkout,
#: restore, rm, rebase, push --force ...) are granted exactly.
GIT_REPEATABLE = frozenset(
    {
        "add",
        "commit",
        "fetch",
        "pull",
        "push",
        "stash",
        "switch",
        "merge",
        "tag",
        "status",
        "log",
        "diff",
        "show",
        "branch",
        "blame",
        "grep",
        "ls-files",
        "rev-parse",
    }
)
_FORCE = frozenset({"-f", "--force", "--force-with-lease", "--delete", "-d", "--mirror"})
_INTERPRETERS = re.compile(r"^(python[0-9.]*|pypy[0-9.]*)$")


def _safe_word(w: shell.Word) -> bool:
    t = w.text
    return bool(t) and not (w.dynamic or w.glob) and not any(c in t for c in "()*?[] \t\n,")


def _exact(c: shell.Command) -> str | None:
    if any(w.dynamic for w in c.argv) or any(ch in c.line() for ch in "(),"):
        return None
    return c.line()


def command_rule(c: shell.Command) -> str | None:
    """The narrowest useful pattern for one simple command (None: cannot be expressed)."""
    prog = c.program
    if prog is None:
        return None
    args = list(c.argv[1:])
    if not args:
        return prog
    # python3 -m pytest -q → python3 -m pytest *
    if _INTERPRETERS.match(prog) and args[0].text == "-m" and len(args) > 1:
        if _safe_word(args[1]):
            return f"{prog} -m {args[1].text}" + (" *" if len(args) > 2 else "")
        return None
    if prog == "git":
        sub = args[0]
        if not _safe_word(sub) or sub.text.startswith("-") or sub.text not in GIT_REPEATABLE:
            return _exact(c)
        rest = args[1:]
        if any(w.text in _FORCE or w.text.startswith("+") for w in rest):
            return _exact(c)
        if (
            sub.text in ("push", "pull", "fetch")
            and rest
            and _safe_word(rest[0])
            and not rest[0].text.startswith("-")
        ):
            tail = " *" if len(rest) > 1 else ""
            return f"git {sub.text} {rest[0].text}{tail}"
        return f"git {sub.text}" + (" *" if rest else "")
    depth = SUBCOMMAND_TOOLS.get(prog)
    if depth is None:
        return _exact(c)
    words = [prog]
    i = 0
    while i < len(args) and len(words) <= depth:
        w = args[i]
        if not _safe_word(w) or w.text.startswith("-") or "/" in w.text or "=" in w.text:
            break
        words.append(w.text)
        if w.text in RUN_WORDS and prog != "node":
            depth += 1
        i += 1
    if len(words) == 1 and depth > 0:
        return _exact(c)  # no sub-command recognised: exactly this
    return " ".join(words) + (" *" if i < len(args) else "")


#: Outside quotes, these make a line more than one simple command (a list, a pipeline, a
#: redirection, a subshell or group, a substitution, a second line).
_COMPOUND = frozenset(";&|<>()`\n{}")
_KEYWORDS = frozenset(
    {"for", "while", "until", "if", "case", "select", "function", "[[", "((", "!", "time"}
)


def single_simple(command: str) -> bool:
    """Whether a command line is one simple command: words only, no operator, redirection,
    substitution or compound keyword (quotes are read; anything unsure is not simple)."""
    text = command.strip()
    if not text or text.split(None, 1)[0] in _KEYWORDS:
        return False
    quote = ""
    escaped = False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
            continue
        if ch == "\\" and quote != "'":
            escaped = True
            continue
        if quote:
            if ch == quote:
                quote = ""
            elif quote == '"' and (ch == "`" or text.startswith("$(", i)):
                return False
            continue
        if ch in "'\"":
            quote = ch
        elif ch in _COMPOUND or text.startswith("$(", i):
            return False
    return not quote


def exact_rule(tool: str, command: str) -> str | None:
    """A rule allowing exactly this line (None: its text cannot be a rule: a ``*`` would be a
    wildcard, parentheses or a comma would end the pattern, a newline the rule)."""
    text = command.strip()
    if not text or len(text) > 300 or any(ch in text for ch in "*(),\n"):
        return None
    return f"{tool}({text})"


def narrow_rule(tool: str, command: str, project: Path, cwd: Path) -> str | None:
    """The rule(s) a grant for this call of a tool that runs ``command`` (the argument its
    declaration marks as the command line) saves; None: none can be made.

    Only a single simple command gets a pattern (``git push origin *``); any other line (a
    loop, a list, a pipeline, a redirection) gets a rule for exactly its text, so the rule
    shown is what the user approves (``for ...; do sleep 1; done`` is never offered as
    ``sleep 1``, nor ``echo gen > gen.txt`` as ``echo gen``)."""
    from codingcode.approval.readonly import command_read_only

    at = lexical(str(cwd), project)
    analysis = shell.analyze(command, at)
    if analysis.opaque or analysis.parse_error or analysis.risky_assignments:
        return None
    if not single_simple(command):
        return exact_rule(tool, command)
    from codingcode.approval.readonly import MAX_WORDS

    if sum(len(c.argv) for c in analysis.commands) > MAX_WORDS:
        return None  # too long a line to grant as a rule (and a bounded cost)
    rules: list[str] = []
    for c in analysis.commands:
        if not c.argv or c.transparent or c.program == "cd":
            continue
        if command_read_only(c, project):
            continue
        pattern = command_rule(c)
        if pattern is None:
            return None
        rule = f"{tool}({pattern})"
        if rule not in rules:
            rules.append(rule)
    if not rules or len(rules) > 4:
        return None
    return ", ".join(rules)


_SPLIT = re.compile(r"(?<=\)),\s*(?=[A-Za-z_][\w:.*-]*(?:\(|$))")


def split_rules(text: str) -> list[str]:
    """``execute_command(a *), execute_command(b)`` → the two rules."""
    return [p.strip() for p in _SPLIT.split(text.strip()) if p.strip()]
