"""The built-in tools."""

from __future__ import annotations

from importlib import import_module

from codingcode.tools.definition import ToolDefinition

#: Each module of built-in tools, the function that makes them and the tools it makes, in
#: the order they are offered. A registry loads a module when one of its tools is first
#: asked for (``codingcode tool read_file`` imports no web or shell tool);
#: ``test_builtin_table_is_complete`` keeps this table true.
BUILTIN_MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "codingcode.tools.builtin.fs": ("fs_tools", ("read_file", "write_file", "edit_file")),
    "codingcode.tools.builtin.code_search": ("search_tools", ("search_code", "search_files")),
    "codingcode.tools.builtin.shell": ("shell_tools", ("execute_command",)),
    "codingcode.tools.builtin.web": ("web_tools", ("fetch_url", "web_search")),
    "codingcode.tools.builtin.state": ("state_tools", ("todo_write",)),
    "codingcode.tools.builtin.background": (
        "background_tools",
        ("command_output", "command_kill"),
    ),
}


def builtin_module_tools(module: str) -> list[ToolDefinition]:
    """The built-in tools ``module`` (a key of :data:`BUILTIN_MODULES`) makes."""
    factory, _ = BUILTIN_MODULES[module]
    tools: list[ToolDefinition] = getattr(import_module(module), factory)()
    return tools


def builtin_tools() -> list[ToolDefinition]:
    """Every built-in tool, in the order they are offered."""
    return [t for module in BUILTIN_MODULES for t in builtin_module_tools(module)]
