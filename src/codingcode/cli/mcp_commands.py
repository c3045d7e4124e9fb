"""``codingcode mcp`` (serve our tools over MCP) and ``codingcode mcp list`` (the servers)."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from codingcode.cli.tool_commands import ProjectOption, project_dir
from codingcode.workspace import Workspace

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

    from codingcode.mcp.client import McpManager, sandbox_launcher
    from codingcode.mcp.config import load_mcp_servers, project_trust_filter

    root = project_dir(project)
    workspace = Workspace.load(root)
    configs = load_mcp_servers(root, settings=workspace.settings)
    if not configs:
        typer.echo(
            "No MCP servers configured (add them to .mcp.json or mcpServers in the settings)."
        )
        return

    async def collect() -> list[dict[str, Any]]:
        async with McpManager(
            configs,
            project=root,
            start_filter=project_trust_filter(workspace.is_trusted),
            launcher=sandbox_launcher(workspace),
        ) as m:
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
    # Exit 1 when a server failed or needs a login (skipped ones, e.g. untrusted, are not
    # failures).
    failed = any(row["state"] in ("failed", "needs login") for row in rows)
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


def _http_server(workspace: Workspace, name: str) -> Any:
    """The configured HTTP server ``name`` of the project, or exit 2 saying why not."""
    from codingcode.mcp.config import HttpEntry, load_mcp_servers

    configs = load_mcp_servers(workspace.root, settings=workspace.settings)
    config = configs.get(name)
    if config is None:
        known = ", ".join(sorted(configs)) or "none"
        _say(f"No MCP server named {name!r} (configured: {known}).")
        raise typer.Exit(2)
    if not isinstance(config.entry, HttpEntry):
        _say(f"MCP server {name!r} is a stdio server; only HTTP servers log in.")
        raise typer.Exit(2)
    return config


@mcp_app.command("login")
def login_command(
    name: Annotated[str, typer.Argument(help="The configured HTTP MCP server.")],
    project: ProjectOption = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for the browser.", min=1)
    ] = 300.0,
) -> None:
    """Log in to an HTTP MCP server with OAuth (opens the browser; $BROWSER is honoured)."""
    import dataclasses

    import anyio

    from codingcode.errors import AgentError
    from codingcode.mcp.config import project_trust_filter
    from codingcode.mcp.connection import ServerConnection
    from codingcode.mcp.oauth import FileTokenStorage, login_provider, uses_oauth

    root = project_dir(project)
    workspace = Workspace.load(root)
    config = _http_server(workspace, name)
    if not uses_oauth(config):
        _say(
            f"MCP server {name!r} does not use OAuth (its entry sends its own Authorization "
            'header or sets "oauth": false).'
        )
        raise typer.Exit(2)
    refused = project_trust_filter(workspace.is_trusted)(config)
    if refused is not None:
        _say(f"MCP server {name!r} is {refused}.")
        raise typer.Exit(1)
    oauth = config.entry.oauth
    if not isinstance(oauth, bool) and oauth.grant_type != "authorization_code":
        what = "client credentials" if oauth.grant_type == "client_credentials" else "grant"
        typer.echo(
            f"MCP server {name!r} uses the {what} of its entry: no browser "
            "login is needed (tokens are fetched when a session connects)."
        )
        return
    # The handshake waits for the person at the browser.
    waiting = int(timeout * 1000) + config.entry.startup_timeout_ms
    config = dataclasses.replace(
        config, entry=config.entry.model_copy(update={"startup_timeout_ms": waiting})
    )

    async def login() -> str | None:
        async with (
            login_provider(config, timeout_s=timeout) as auth,
            anyio.create_task_group() as tg,
        ):
            conn = ServerConnection(config, project=root, task_group=tg, auth=auth)
            try:
                await conn.ensure_started()
            except AgentError as exc:
                return str(exc)
            finally:
                await conn.stop()
        return None

    error = anyio.run(login)
    if error is not None:
        _say(f"Login to {name!r} failed: {error}")
        raise typer.Exit(1)
    storage = FileTokenStorage(config)
    if storage.has_tokens():
        typer.echo(f"Logged in to {name!r}; the tokens are kept in {storage.path}.")
    else:
        typer.echo(f"MCP server {name!r} answered without asking for a login; nothing stored.")


@mcp_app.command("logout")
def logout_command(
    name: Annotated[str, typer.Argument(help="The configured HTTP MCP server.")],
    project: ProjectOption = None,
) -> None:
    """Forget the stored OAuth tokens and client registration of an HTTP MCP server."""
    from codingcode.mcp.oauth import FileTokenStorage

    config = _http_server(Workspace.load(project_dir(project)), name)
    if FileTokenStorage(config).clear():
        typer.echo(f"Logged out of {name!r}.")
    else:
        typer.echo(f"MCP server {name!r} had no stored login.")
