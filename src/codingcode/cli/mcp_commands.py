"""``codingcode mcp`` (serve our tools over MCP) and ``codingcode mcp list`` (the servers)."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from codingcode.cli.tool_commands import ProjectOption, project_dir

mcp_app = typer.Typer(
    name="mcp",
    help=(
        "Serve codingcode's tools to an MCP client (stdio, or --http HOST:PORT), "
        "or list the project's MCP servers."
    ),
    invoke_without_command=True,
    add_completion=False,
    rich_markup_mode=None,
)


def _say(message: str) -> None:
    # Never stdout: over stdio, stdout is the protocol.
    print(message, file=sys.stderr, flush=True)


@mcp_app.callback()
def serve_command(
    ctx: typer.Context,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
            "(loopback unless you name another address).",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="CODINGCODE_MCP_TOKEN",
            help="Bearer token HTTP clients must send; required (and generated if not "
            "given) when bound to a non-loopback address.",
        ),
    ] = None,
    project: ProjectOption = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            "-m",
            help="Permission mode: default, acceptEdits, plan, bypass (default: settings).",
        ),
    ] = None,
) -> None:
    """Serve codingcode's tools over MCP; every call goes through approval and the sandbox."""
    if ctx.invoked_subcommand is not None:
        return
    import anyio

    from codingcode.cli.tool_commands import check_mode
    from codingcode.mcp_server.server import (
        build_tool_server,
        parse_host_port,
        resolve_token,
        serve_http,
        serve_stdio,
    )

    root = project_dir(project)
    from codingcode.cli.tool_service import cli_tool_service

    server = build_tool_server(
        root, mode=check_mode(mode) if mode else None, service=cli_tool_service(), plugins=True
    )
    for note in server.notes:
        _say(f"codingcode MCP: {note}")
    ignored = getattr(server.headless, "ignored_grants", None)
    if ignored:  # workspace trust: say once what the untrusted project would have granted
        _say(
            "codingcode MCP: ignored untrusted project grants ("
            + "; ".join(ignored)
            + "); run `codingcode trust` to allow them."
        )
    if http is None:
        anyio.run(serve_stdio, server)
        return
    host, port = parse_host_port(http)
    required, generated = resolve_token(host, token)
    if generated:
        _say(f"codingcode MCP: {host} is not loopback, so clients must send this bearer token:")
        _say(f"  Authorization: Bearer {required}")
        _say("  (set CODINGCODE_MCP_TOKEN or --token to choose it yourself)")
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how one stops a server
        anyio.run(lambda: serve_http(server, host, port, required, announce=_say))


@mcp_app.command("list")
def list_command(
    project: ProjectOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the servers as JSON.")] = False,
) -> None:
    """Start each configured MCP server and show its state and its tools."""
    import anyio

    from codingcode.mcp.client import McpManager
    from codingcode.mcp.config import load_mcp_servers, trust_store_filter

    root = project_dir(project)
    configs = load_mcp_servers(root)
    if not configs:
        typer.echo(
            "No MCP servers configured (add them to .mcp.json or mcpServers in the settings)."
        )
        return

    async def collect() -> list[dict[str, Any]]:
        async with McpManager(configs, project=root, start_filter=trust_store_filter(root)) as m:
            rows = []
            for conn in m.servers.values():
                cfg = conn.config
                definitions = conn.tool_definitions()
                rows.append(
                    {
                        "name": conn.name,
                        "transport": cfg.transport,
                        "scope": cfg.scope.value,
                        "source": str(cfg.source),
                        "target": cfg.describe(),
                        "state": conn.state.value,
                        "error": conn.error,
                        "server": conn.server_info,
                        "tools": [
                            {
                                "name": d.name,
                                "short_description": d.short_description,
                                "deferred": d.deferred,
                                "read_only": d.annotations.read_only,
                            }
                            for d in definitions
                        ],
                    }
                )
            return rows

    rows = anyio.run(collect)
    # Exit 1 when a server failed (skipped ones, e.g. untrusted, are not failures).
    failed = any(row["state"] == "failed" for row in rows)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        if failed:
            raise typer.Exit(1)
        return
    for row in rows:
        where = f"{row['transport']}, {row['scope']} scope, {Path(row['source']).name}"
        state = row["state"]
        # The reason on the server's own line, whatever the server's message looked like.
        reason = " ".join(str(row["error"]).split()) if row["error"] else ""
        detail = f": {reason}" if reason else ""
        server = f" — {row['server']}" if row["server"] else ""
        typer.echo(f"{row['name']} ({where}) {state}{detail}{server}")
        typer.echo(f"  {row['target']}")
        tools = row["tools"]
        if tools:
            deferred = sum(t["deferred"] for t in tools)
            note = f", {deferred} deferred (found through tool_search)" if deferred else ""
            typer.echo(f"  {len(tools)} tools{note}:")
            width = max(len(t["name"]) for t in tools)
            for t in tools:
                typer.echo(f"    {t['name'].ljust(width)}  {t['short_description']}")
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(mcp_app, name="mcp")
