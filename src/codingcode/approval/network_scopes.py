"""Built-in network scopes of package managers: the names a grant "for npm" means (issue 16).

When the sandbox's network is ``limited``, ``npm install`` reaches nothing until the user
grants it a name. Granting the registry *to npm* — not to every command, and not the whole
internet — is the grant as a rule: ``execute_command(npm install *)
network(registry.npmjs.org, registry.yarnpkg.com)``. The data below says which names each
program's own registry uses; :func:`with_program_network` adds them to a suggested rule, so a
"yes, for this session / always" for a package install grants exactly the registry.

The names are the public registries' defaults. A project using a mirror or a private
registry edits the suggested rule (or lists the name in ``sandbox.network.allowedDomains``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from codingcode.approval.rules.syntax import RuleSyntaxError, split_network, split_rule
from codingcode.sandbox.network.domains import first_match, normalize_host

_NPM = ("registry.npmjs.org", "registry.yarnpkg.com")
_PYPI = ("pypi.org", "files.pythonhosted.org")
_CRATES = ("crates.io", "static.crates.io", "index.crates.io")
_GO = ("proxy.golang.org", "sum.golang.org")

#: Program → the names its package registry uses.
PROGRAM_DOMAINS: dict[str, tuple[str, ...]] = {
    "npm": _NPM,
    "yarn": _NPM,
    "pnpm": _NPM,
    "pip": _PYPI,
    "pip3": _PYPI,
    "uv": _PYPI,
    "cargo": _CRATES,
    "go": _GO,
}

#: Program → the sub-commands that download packages (a suggestion for one of these carries
#: the program's names; ``npm run test``, ``cargo test`` or ``uv run`` get none: running the
#: project's code is not a reason to reach the registry).
FETCHING: dict[str, frozenset[str]] = {
    "npm": frozenset({"install", "i", "ci", "add", "update", "up", "outdated", "view", "info"}),
    "yarn": frozenset({"install", "add", "upgrade", "up", "info", "dlx"}),
    "pnpm": frozenset({"install", "i", "add", "update", "up", "dlx", "outdated"}),
    "pip": frozenset({"install", "download", "wheel", "index"}),
    "pip3": frozenset({"install", "download", "wheel", "index"}),
    "uv": frozenset({"sync", "lock", "add", "pip", "tool", "venv"}),
    "cargo": frozenset({"fetch", "install", "update", "add", "build", "generate-lockfile"}),
    "go": frozenset({"get", "mod", "install", "build"}),
}

_COMMAND_RULE = re.compile(r"^execute_command\((?P<pattern>.*)\)$", re.DOTALL)


def program_domains(program: str | None) -> tuple[str, ...]:
    """The registry names of ``program`` (``()``: none known)."""
    return PROGRAM_DOMAINS.get(program or "", ())


def _program_of(rule: str) -> tuple[str, str | None] | None:
    """(program, sub-command) of an ``execute_command(PATTERN)`` rule, if it is one."""
    m = _COMMAND_RULE.match(rule.strip())
    if m is None:
        return None
    words = m.group("pattern").split()
    if not words:
        return None
    sub = words[1] if len(words) > 1 and words[1] != "*" else None
    return words[0], sub


def scoped_rule(rule: str, blocked: Iterable[str] | None = None) -> str:
    """``rule`` with its program's registry names as a ``network(...)`` clause.

    ``blocked``: the names the proxy refused when the command ran. Given, the clause is
    added only when one of them is the program's own (a grant "for npm" is the registry,
    never the other names the command tried); not given, only for a sub-command that
    downloads packages. A rule that has a clause already, is not a command rule, or whose
    program has no known registry, comes back unchanged.
    """
    try:
        if split_network(rule)[1]:
            return rule
        split_rule(rule)
    except RuleSyntaxError:
        return rule
    found = _program_of(rule)
    if found is None:
        return rule
    program, sub = found
    names = program_domains(program)
    if not names:
        return rule
    if blocked is not None:
        hosts = [h for h in (normalize_host(b) for b in blocked) if h is not None]
        if not any(first_match(h, names) is not None for h in hosts):
            return rule
    elif sub is None or sub not in FETCHING.get(program, frozenset()):
        return rule
    return f"{rule} network({', '.join(names)})"


def with_program_network(suggested: str | None, blocked: Iterable[str] | None = None) -> str | None:
    """A suggested grant (one rule, or several joined by ``, ``) with each package
    manager's rule scoped to its registry (:func:`scoped_rule`)."""
    if suggested is None:
        return None
    from codingcode.approval.grants import split_rules

    names = list(blocked) if blocked is not None else None
    return ", ".join(scoped_rule(r, names) for r in split_rules(suggested))
