"""The ToolService every CLI command starts from: the built-ins plus installed plugins' tools."""

from __future__ import annotations

from codingcode.tools import ToolDefinition, ToolService

#: Entry-point group through which installed packages add tools to the CLI's sessions.
PLUGIN_GROUP = "codingcode.tools"


def register_plugin_tools(service: ToolService) -> list[str]:
    """Register the tools that installed packages offer under :data:`PLUGIN_GROUP` (C1).

    An entry point names a ToolDefinition (e.g. an ``@tool`` function), a list of them, or a
    callable taking the ToolService. Only installed packages can do this — the user's own
    environment, not a project's files — so no trust question arises. Returns their names.
    """
    from codingcode.cli.exits import fail
    from codingcode.plugins import load_plugins

    def accept(obj: object) -> None:
        for item in obj if isinstance(obj, list | tuple) else [obj]:
            if isinstance(item, ToolDefinition):
                service.register(item, replace=True)
            elif callable(item):
                item(service)
            else:
                raise TypeError(f"{type(item).__name__} is not a ToolDefinition")

    before = set(service.names())
    failed = load_plugins(PLUGIN_GROUP, "tool", accept)
    if failed:  # a tool the user installed must not silently go missing
        plugin, exc = failed[0]
        fail(f"{plugin} failed to load: {exc}", code=1)
    return sorted(set(service.names()) - before)


def cli_tool_service() -> ToolService:
    """Built-in tools and every installed plugin's: what `tool`, `tools`, `check`, `run`, the
    app and `mcp` offer alike (C1: registered at start-up, hence visible everywhere)."""
    service = ToolService.default()
    register_plugin_tools(service)
    return service
