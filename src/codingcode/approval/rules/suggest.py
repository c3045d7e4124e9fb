"""Suggesting a generalised rule for an always / never answer."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from codingcode import shell
from codingcode.approval.call import ToolCall
from codingcode.approval.roles import first_with
from codingcode.paths import lexical
from codingcode.tools.declarations import Declaration

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


def suggest_rule(call: ToolCall, declared: Declaration | None = None) -> str | None:
    """A generalised rule for an always/never answer (shown to the user before saving),
    shaped by what the tool declares (``declared``, as the rule engine will read the rule;
    by default the call's own declaration): a command prefix for a tool that runs a command
    line, a directory glob for one that names a file or a directory, a domain for one that
    fetches a URL, else the tool's name."""
    tool = call.tool
    if declared is None:
        declared = Declaration(tool, call.arg_roles, call.effects, call.origin)
    roles = declared.arg_roles
    if declared.runs_commands and call.origin.kind != "mcp":
        command = first_with(roles, call.args, "command")
        if command is None:
            return None
        analysis = shell.analyze(command, lexical(str(call.cwd), call.project_path))
        if analysis.opaque:
            return None
        leaves = [c for c in analysis.commands if c.argv and not c.transparent]
        prefixes = {_command_prefix(c) for c in leaves}
        if len(prefixes) != 1 or None in prefixes:
            return None
        return f"{tool}({prefixes.pop()})"
    place = declared.arg_with("path", "directory")
    if place is not None and call.origin.kind != "mcp":
        path = call.args.get(place)
        if not isinstance(path, str):
            return None
        absolute = Path(lexical(path, call.project_path))
        walks = roles[place] == "directory"  # a tree it walks: the rule covers that tree
        parent = absolute if walks else absolute.parent
        try:
            rel = parent.relative_to(call.project_path)
        except ValueError:
            return f"{tool}({parent}/**)" if str(parent) != "/" else f"{tool}({absolute})"
        if str(rel) == ".":
            return (
                f"{tool}({absolute.relative_to(call.project_path)})" if not walks else f"{tool}(**)"
            )
        return f"{tool}({rel}/**)"
    url_arg = declared.arg_with("url")
    if url_arg is not None and call.origin.kind != "mcp":
        url = call.args.get(url_arg)
        try:
            host = urlsplit(str(url)).hostname
        except ValueError:
            host = None
        return f"{tool}(domain:{host})" if host else None
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
