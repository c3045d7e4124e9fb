"""The built-in tools."""

from __future__ import annotations

from codingcode.tools.definition import ToolDefinition


def builtin_tools() -> list[ToolDefinition]:
    """Every built-in tool, in the order they are offered."""
    from codingcode.tools.builtin.background import background_tools
    from codingcode.tools.builtin.code_search import search_tools
    from codingcode.tools.builtin.fs import fs_tools
    from codingcode.tools.builtin.shell import shell_tools
    from codingcode.tools.builtin.state import state_tools
    from codingcode.tools.builtin.web import web_tools

    return [
        *fs_tools(),
        *search_tools(),
        *shell_tools(),
        *web_tools(),
        *state_tools(),
        *background_tools(),
    ]
