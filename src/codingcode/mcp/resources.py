"""MCP resources: listing, reading, templates and subscriptions, and the deferred tools
that let the model use them.

* ``mcp_list_resources`` (``server`` optional): every resource and resource template of the
  running servers that offer resources, one line each (a subscribed resource the server
  changed since it was last read is marked *updated*).
* ``mcp_read_resource`` (``server``, ``uri``, ``subscribe``): its contents as text (binary
  described, never its base64), capped like tool results; ``subscribe`` asks the server to
  say when it changes (servers that support it).

Both are deferred (found through ``tool_search``), origin ``mcp``, effects ``reads``, and go
through approval like every call. ``@server:uri`` in the app's prompt reads through
``mcp_read_resource`` too (:func:`resource_mentions`).
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import mcp_types as types
from pydantic import BaseModel, Field

from codingcode.errors import InvalidArgumentsError
from codingcode.mcp import LIST_TOOL, READ_TOOL
from codingcode.mcp.connection import ServerConnection, ServerSet, ServerState, pages
from codingcode.mcp.results import cap_text
from codingcode.tools.definition import (
    Effect,
    ToolAnnotations,
    ToolDefinition,
    ToolExecCtx,
    ToolOrigin,
)

_MENTION = re.compile(r"(?:(?<=\s)|^)@([A-Za-z0-9_.-]+):(\S+)")


def offers_resources(conn: ServerConnection) -> bool:
    caps = conn.capabilities
    return conn.state is ServerState.READY and caps is not None and caps.resources is not None


async def list_all(
    conn: ServerConnection, ctx: ToolExecCtx | None = None
) -> tuple[list[Any], list[Any]]:
    """Every resource and resource template of ``conn`` (pagination followed)."""

    async def walk(client: Any) -> tuple[list[Any], list[Any]]:
        resources: list[Any] = []
        templates: list[Any] = []
        async for page in pages(lambda cursor: client.list_resources(cursor=cursor)):
            resources.extend(page.resources)
        try:
            async for tpage in pages(lambda cursor: client.list_resource_templates(cursor=cursor)):
                templates.extend(tpage.resource_templates)
        except Exception:  # templates are optional: a server may not implement them
            pass
        return resources, templates

    return await conn.request(f"resources/list of MCP server {conn.name!r}", walk, ctx)


def render_contents(result: types.ReadResourceResult) -> str:
    parts: list[str] = []
    for item in result.contents:
        mime = f" ({item.mime_type})" if item.mime_type else ""
        if isinstance(item, types.TextResourceContents):
            parts.append(f"<{item.uri}>{mime}\n{item.text}")
        else:
            size = len(item.blob) * 3 // 4
            parts.append(f"<{item.uri}>{mime}: about {size} bytes of binary data, not shown")
    return "\n".join(parts) or "(the resource is empty)"


class ListArgs(BaseModel):
    server: str | None = Field(
        default=None, description="Only this MCP server's resources (default: every server)."
    )


class ReadArgs(BaseModel):
    server: str = Field(description="The MCP server that holds the resource.")
    uri: str = Field(min_length=1, description="The resource's URI, as listed.")
    subscribe: bool = Field(
        default=False,
        description="Also ask the server to report changes (shown by mcp_list_resources).",
    )


def resource_tools(manager: ServerSet) -> list[ToolDefinition]:
    """The two deferred tools over ``manager``'s servers."""

    def server(name: str) -> ServerConnection:
        conn = manager.servers.get(name)
        offering = sorted(n for n, c in manager.servers.items() if offers_resources(c))
        if conn is None or not offers_resources(conn):
            why = "is not configured" if conn is None else "offers no resources"
            if conn is not None and conn.state is not ServerState.READY:
                why = f"is {conn.state.value}" + (f" ({conn.error})" if conn.error else "")
            raise InvalidArgumentsError(
                f"MCP server {name!r} {why}. Servers with resources: "
                f"{', '.join(offering) or 'none'}."
            )
        return conn

    async def list_resources(args: BaseModel, ctx: ToolExecCtx) -> str:
        assert isinstance(args, ListArgs)
        names = (
            [args.server]
            if args.server
            else sorted(n for n, c in manager.servers.items() if offers_resources(c))
        )
        if not names:
            return "No running MCP server offers resources."
        lines: list[str] = []
        for name in names:
            conn = server(name)
            resources, templates = await list_all(conn, ctx)
            lines.append(f"{name}: {len(resources)} resources, {len(templates)} templates")
            for r in resources:
                mark = " (updated)" if str(r.uri) in conn.updated else ""
                about = f" — {' '.join(r.description.split())[:200]}" if r.description else ""
                mime = f" [{r.mime_type}]" if r.mime_type else ""
                lines.append(f"  {r.uri}{mime} {r.name}{mark}{about}")
            for t in templates:
                about = f" — {' '.join(t.description.split())[:200]}" if t.description else ""
                lines.append(f"  template {t.uri_template} {t.name}{about}")
        return cap_text(LIST_TOOL, "\n".join(lines))

    async def read_resource(args: BaseModel, ctx: ToolExecCtx) -> str:
        assert isinstance(args, ReadArgs)
        conn = server(args.server)
        what = f"reading {args.uri} from MCP server {conn.name!r}"
        result = await conn.request(what, lambda c: c.read_resource(args.uri), ctx)
        conn.updated.discard(args.uri)
        note = ""
        if args.subscribe:
            caps = conn.capabilities.resources
            if not caps.subscribe:
                note = f"\n[MCP server {conn.name!r} does not offer subscriptions]"
            else:

                async def subscribe(client: Any) -> Any:
                    with warnings.catch_warnings():  # deprecated only for 2026-07-28 servers
                        warnings.simplefilter("ignore")
                        return await client.subscribe_resource(args.uri)

                await conn.request(f"subscribing to {args.uri}", subscribe, ctx)
                note = "\n[subscribed: mcp_list_resources marks it (updated) when it changes]"
        return cap_text(f"{conn.name}_resource", render_contents(result)) + note

    read_resource.manager = manager  # type: ignore[attr-defined]
    reads: frozenset[Effect] = frozenset({"reads"})
    looks = ToolAnnotations(read_only=True, destructive=False, idempotent=True, open_world=True)
    return [
        ToolDefinition(
            name=LIST_TOOL,
            description="List the resources (files, records, documents...) and resource "
            "templates that the MCP servers offer, with their URIs.",
            parameters=ListArgs,
            execute=list_resources,
            deferred=True,
            annotations=looks,
            effects=reads,
            origin=ToolOrigin("mcp", None),
        ),
        ToolDefinition(
            name=READ_TOOL,
            description="Read one resource of an MCP server by its URI (see "
            f"{LIST_TOOL}); text as text, binary described.",
            parameters=ReadArgs,
            execute=read_resource,
            deferred=True,
            annotations=looks,
            effects=reads,
            origin=ToolOrigin("mcp", None),
        ),
    ]


async def attach_resources(session: Any, text: str, warn: Any) -> list[str]:
    """``<resource>`` blocks for the ``@server:uri`` mentions of ``text``, each read through
    the session's runner (so through approval); ``warn(line)`` for each that could not be."""
    from codingcode.errors import AgentError

    runner = session.runner
    if READ_TOOL not in runner.service:
        return []
    servers = {d.origin.server for d in runner.service.list() if d.origin.kind == "mcp"}
    servers |= set(_servers_of(runner.service))
    blocks: list[str] = []
    for server, uri in resource_mentions(text, {s for s in servers if s})[:10]:
        try:
            content = await runner.run(READ_TOOL, {"server": server, "uri": uri}, runner.context())
        except AgentError as exc:
            warn(f"@{server}:{uri} not attached: {exc.message}")
            continue
        blocks.append(f'<resource server="{server}" uri="{uri}">\n{content}\n</resource>')
    return blocks


def _servers_of(service: Any) -> list[str]:
    """The servers of the manager behind the resource tools (even one with no tools)."""
    definition = service.get(READ_TOOL)
    manager = getattr(definition.execute, "manager", None)
    return list(manager.servers) if manager is not None else []


def resource_mentions(text: str, servers: set[str]) -> list[tuple[str, str]]:
    """``@server:uri`` mentions in a prompt, of the servers named (in order, no repeats)."""
    found: list[tuple[str, str]] = []
    for m in _MENTION.finditer(text):
        server, uri = m.group(1), m.group(2).rstrip(".,;!?)]}")
        if server in servers and uri and (server, uri) not in found:
            found.append((server, uri))
    return found
