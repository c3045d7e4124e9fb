"""Claude Code's tool names in our terms, so files written for Claude Code work unchanged.

A skill's or command's ``allowed-tools`` says ``Read, Grep, Bash(git add:*), mcp__github``;
here that becomes ``read_file``, ``search_code``, ``execute_command(git add *)`` and
``github:*`` — the rule syntax of our settings. Our own names pass through unchanged.
"""

from __future__ import annotations

import re
from pathlib import Path

#: Claude Code tool → ours (``tools-reference``; LS/MultiEdit are the legacy names).
CLAUDE_TOOLS: dict[str, str] = {
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit_file",
    "MultiEdit": "edit_file",
    "NotebookEdit": "edit_file",
    "Bash": "execute_command",
    "Grep": "search_code",
    "Glob": "search_files",
    "LS": "search_files",
    "WebFetch": "fetch_url",
    "WebSearch": "web_search",
    "TodoWrite": "todo_write",
    "Task": "dispatch_agent",
    "Agent": "dispatch_agent",
    "ToolSearch": "tool_search",
    "NotebookRead": "read_file",
    "BashOutput": "command_output",
    "KillShell": "command_kill",
    "KillBash": "command_kill",
    "ExitPlanMode": "exit_plan_mode",
}
#: Claude Code tools with no equivalent here: a rule naming one is recognised (never "not a
#: tool"), and stands for nothing (``PowerShell(...)`` grants no shell command).
CLAUDE_ONLY_TOOLS = frozenset(
    {
        "PowerShell",
        "Skill",
        "SlashCommand",
        "AskUserQuestion",
        "EnterPlanMode",
        "LSP",
        "ListMcpResourcesTool",
        "ReadMcpResourceTool",
        "MCPSearch",
        "TaskCreate",
        "TaskGet",
        "TaskList",
        "TaskUpdate",
        "TaskOutput",
        "TaskStop",
        "EnterWorktree",
        "ExitWorktree",
        "CronCreate",
        "CronDelete",
        "CronList",
        "Monitor",
        "SendMessage",
        "TeamCreate",
        "TeamDelete",
    }
)
_MCP = re.compile(r"^mcp__([A-Za-z0-9_-]+?)(?:__(.+))?$")


def mcp_name(name: str) -> str | None:
    """``mcp__server__tool`` → ``server:tool``; ``mcp__server`` → ``server:*``; else None."""
    m = _MCP.match(name)
    if m is None:
        return None
    server, tool = m.group(1), m.group(2)
    return f"{server}:{tool}" if tool else f"{server}:*"


#: What a Claude Code path rule of a tool covers here (Claude Code's permissions doc: Read
#: rules apply to every built-in tool that reads files, Grep and Glob included; Edit rules
#: to every built-in tool that edits files).
RULE_TOOLS: dict[str, tuple[str, ...]] = {
    "Read": ("read_file", "search_code", "search_files"),
    "Edit": ("edit_file", "write_file"),
    "MultiEdit": ("edit_file", "write_file"),
}
#: Claude Code tools whose SPEC is a gitignore-style path pattern.
PATH_TOOLS = frozenset({"Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "Glob", "Grep", "LS"})


def is_claude_rule(entry: str) -> bool:
    """Whether ``entry`` names a tool in Claude Code's terms (``Bash(...)``, ``mcp__x``)."""
    tool = entry.strip().partition("(")[0].strip()
    return tool in CLAUDE_TOOLS or mcp_name(tool) is not None


def claude_path(spec: str, base: Path | None) -> str:
    """A Claude Code path pattern as ours (its permissions doc; gitignore rules):
    ``//abs`` is absolute, ``~/x`` in the home directory, ``/x`` relative to the settings
    file's root (``base``: the folder holding ``.claude/``), ``x`` and ``./x`` relative to
    the project; a pattern with no ``/`` inside (``*.env``, ``.env``) matches at any depth,
    and ``dir/`` means everything under it."""
    spec = spec.strip()
    if spec in ("*", "**", "**/*", "./**"):
        return "**"
    directory = spec.endswith("/") and len(spec) > 1
    if directory:
        spec = spec.rstrip("/")
    tail = "/**" if directory else ""
    if spec.startswith("//"):
        return "/" + spec.lstrip("/") + tail
    if spec.startswith("~"):
        return spec + tail
    if spec.startswith("/"):
        root = str(base).rstrip("/") if base is not None else ""
        return ((root + spec) if root else spec.lstrip("/")) + tail
    rel = spec[2:] if spec.startswith("./") else spec
    if "/" not in rel and not spec.startswith("./") and not rel.startswith("**"):
        return "**/" + rel + tail
    return rel + tail


def translate_rule(entry: str, base: Path | None = None) -> tuple[str, ...]:
    """One rule in Claude Code's syntax as the rules of ours it stands for (a Read rule is
    three: reading, searching contents, finding files). Our own rules pass through as one.
    ``base``: where a ``/path`` of the rule is relative to (its settings file's root)."""
    entry = entry.strip()
    tool, paren, rest = entry.partition("(")
    tool = tool.strip()
    spec = rest[:-1].strip() if paren and rest.endswith(")") else None
    one = (CLAUDE_TOOLS.get(tool) or mcp_name(tool) or tool,)
    if spec is None:
        # A bare name is that tool (``Read`` is reading, not searching: Grep and Glob are
        # tools of their own), but ``Edit`` is every tool that edits files.
        return RULE_TOOLS.get(tool, one) if tool != "Read" else one
    ours = RULE_TOOLS.get(tool) or one
    if ours == ("execute_command",):
        # The legacy ``:*`` suffix is a trailing `` *`` (Claude Code's permissions doc).
        if spec.endswith(":*"):
            spec = spec[:-2].rstrip() + " *"
        if spec == "*":
            return ours
    elif tool in PATH_TOOLS:
        spec = claude_path(spec, base)
        if spec == "**":
            return ours
    return tuple(f"{name}({spec})" for name in ours)


def translate_entry(entry: str) -> str:
    """One ``allowed-tools`` entry as a rule of ours (``Bash(npm run test:*)`` →
    ``execute_command(npm run test *)``); the first where it stands for several."""
    return translate_rule(entry)[0]


#: Ours → Claude Code's (the first of several Claude names for one of ours).
OURS_TO_CLAUDE: dict[str, tuple[str, ...]] = {}
for _claude, _ours in CLAUDE_TOOLS.items():
    OURS_TO_CLAUDE[_ours] = (*OURS_TO_CLAUDE.get(_ours, ()), _claude)


def name_aliases(name: str) -> tuple[str, ...]:
    """The names a hook matcher written for Claude Code may use for our tool ``name``:
    itself, Claude Code's name(s) (``read_file`` → ``Read``), and for an MCP tool
    ``server:tool`` the ``mcp__server__tool`` form."""
    names = (name, *OURS_TO_CLAUDE.get(name, ()))
    server, sep, tool = name.partition(":")
    if sep and server and tool:
        names += (f"mcp__{server}__{tool}",)
    return names
