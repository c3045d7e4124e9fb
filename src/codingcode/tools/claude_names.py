"""Claude Code's tool names in our terms, so files written for Claude Code work unchanged.

A skill's or command's ``allowed-tools`` says ``Read, Grep, Bash(git add:*), mcp__github``;
here that becomes ``read_file``, ``search_code``, ``execute_command(git add *)`` and
``github:*`` — the rule syntax of our settings. Our own names pass through unchanged.
"""

from __future__ import annotations

import re

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
}
_MCP = re.compile(r"^mcp__([A-Za-z0-9_-]+?)(?:__(.+))?$")


def mcp_name(name: str) -> str | None:
    """``mcp__server__tool`` → ``server:tool``; ``mcp__server`` → ``server:*``; else None."""
    m = _MCP.match(name)
    if m is None:
        return None
    server, tool = m.group(1), m.group(2)
    return f"{server}:{tool}" if tool else f"{server}:*"


def translate_entry(entry: str) -> str:
    """One ``allowed-tools`` entry as a rule of ours (``Bash(npm run test:*)`` →
    ``execute_command(npm run test *)``)."""
    entry = entry.strip()
    tool, paren, rest = entry.partition("(")
    tool = tool.strip()
    spec = rest[:-1].strip() if paren and rest.endswith(")") else None
    ours = CLAUDE_TOOLS.get(tool) or mcp_name(tool) or tool
    if spec is None:
        return ours
    if ours == "execute_command":
        # The legacy ``:*`` suffix is a trailing `` *`` (Claude Code's permissions doc).
        if spec.endswith(":*"):
            spec = spec[:-2].rstrip() + " *"
        if spec == "*":
            return ours
    return f"{ours}({spec})"


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
