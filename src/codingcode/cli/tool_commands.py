"""``codingcode tool`` (run one call) and ``codingcode tools`` (list them)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from codingcode.config import MAX_JSON_DEPTH
from codingcode.modes import PERMISSION_MODES

#: Shared by every command that acts on a project.
ProjectOption = Annotated[
    Path | None,
    typer.Option("--project", "-p", help="Project root (default: the current directory)."),
]
ModeOption = Annotated[
    str | None,
    typer.Option(
        "--mode",
        "-m",
        help="Permission mode: default, acceptEdits, plan, bypass "
        "(default: permissions.defaultMode from the settings, else default).",
    ),
]


def parse_args_json(text: str) -> dict[str, Any]:
    """Parse ARGS_JSON (``-`` reads stdin); a clear error for anything but a JSON object."""
    from codingcode.cli.exits import fail

    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        fail(f"ARGS_JSON is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}).")
    except RecursionError:
        fail(f"ARGS_JSON is nested too deeply to read (keep it under {MAX_JSON_DEPTH} levels).")
    if not isinstance(value, dict):
        fail(
            f'ARGS_JSON must be a JSON object such as \'{{"path": "README.md"}}\', got {type(value).__name__}.'
        )
    result: dict[str, Any] = value
    return result


def check_mode(mode: str | None) -> str | None:
    """The mode if it is a known one (None: the settings decide); a clear error otherwise."""
    from codingcode.cli.exits import fail

    if mode is not None and mode not in PERMISSION_MODES:
        fail(f"unknown mode {mode!r}; choose one of: {', '.join(PERMISSION_MODES)}.")
    return mode


def project_dir(project: Path | None) -> Path:
    from codingcode.cli.exits import fail

    path = (project or Path.cwd()).resolve()
    if not path.is_dir():
        hint = ""
        if project is not None and not path.exists():
            # `codingcode -p "fix it"` as in Claude Code, where -p is --print
            text = str(project)
            hint = (
                f" -p is --project here (the project directory). To start the app with a "
                f'prompt: codingcode "{text}"; to run it without the app: '
                f'codingcode run "{text}".'
            )
        fail(f"--project {path} is not a directory.{hint}")
    return path


def register(app: typer.Typer) -> None:
    @app.command("tool")
    def tool_command(
        name: Annotated[str, typer.Argument(help="The tool to call, e.g. read_file.")],
        args_json: Annotated[
            str,
            typer.Argument(help="The arguments as a JSON object, or - to read them from stdin."),
        ],
        project: ProjectOption = None,
        mode: ModeOption = None,
    ) -> None:
        """Run one tool call and print its output."""
        import anyio

        from codingcode.cli.tool_service import cli_tool_service
        from codingcode.runner import build_runner
        from codingcode.tui.confirm import TerminalConfirmer
        from codingcode.workspace import Workspace

        args = parse_args_json(args_json)
        root = project_dir(project)
        workspace = Workspace.load(root)  # settings and trust, read once for the call
        # On a terminal the user is asked, as in the app; without one an ask is a deny.
        confirmer = TerminalConfirmer() if TerminalConfirmer.available() else None
        runner = build_runner(
            root,
            mode=check_mode(mode),
            service=cli_tool_service(),
            confirmer=confirmer,
            workspace=workspace,
        )
        if runner.ignored_grants:
            from codingcode.config import untrusted_note

            typer.echo(untrusted_note(runner.ignored_grants, root), err=True)
        from codingcode.mcp import LIST_TOOL, READ_TOOL

        if ":" not in name and name not in (LIST_TOOL, READ_TOOL):
            typer.echo(anyio.run(runner.run, name, args))
            return

        async def call_mcp_tool() -> str:
            # Only an MCP tool (server:tool) needs the project's servers started.
            from codingcode.mcp.client import open_project_mcp

            async with open_project_mcp(root, runner.service, workspace=workspace) as mcp:
                missing = mcp.unavailable(name)  # its server never started: say why, once
                if missing is not None:
                    raise missing
                for line in mcp.notes():
                    typer.echo(line, err=True)
                return await runner.run(name, args)

        typer.echo(anyio.run(call_mcp_tool))

    @app.command("tools")
    def tools_command(
        project: ProjectOption = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print names, descriptions and JSON Schemas as JSON.")
        ] = False,
    ) -> None:
        """List the tools the model gets in the project: built-in, custom, deferred (found
        through tool_search), MCP (server:tool, once the project is trusted) and agent tools."""
        import anyio

        root = project_dir(project)
        rows, notes = anyio.run(session_tools, root)
        for line in notes:
            typer.echo(line, err=True)
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            marks = [r["kind"]] if r["kind"] != "builtin" else []
            if r["deferred"]:
                marks.append("deferred: loaded through tool_search")
            suffix = f"  ({'; '.join(marks)})" if marks else ""
            typer.echo(f"{r['name'].ljust(width)}  {r['short_description']}{suffix}")


class _NoModel:
    """Stands in for a model where only the session's tools are wanted (never called)."""

    name = "none"
    model = "none"

    def stream(self, system: str, messages: Any, tools: Any) -> Any:
        raise RuntimeError("no model in a tool listing")

    async def aclose(self) -> None:
        pass


async def session_tools(project: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """What a session in ``project`` offers the model, through the session's own resolver."""
    from codingcode.agent.model import ModelSpec
    from codingcode.agent.session import open_session
    from codingcode.cli.tool_service import cli_tool_service
    from codingcode.mcp.client import open_project_mcp
    from codingcode.tools.resolver import DISPATCH_AGENT_NAME
    from codingcode.tools.search import TOOL_SEARCH_NAME
    from codingcode.workspace import Workspace

    workspace = Workspace.load(project)
    service = cli_tool_service()
    async with open_project_mcp(project, service, workspace=workspace) as mcp:
        notes = list(mcp.notes())
        session = open_session(
            project,
            model=ModelSpec("openai", "none", "tools"),
            provider=_NoModel(),
            service=service,
            workspace=workspace,
        )
        resolver = session.resolver
        listed = resolver.eligible()
        offered = {d.name for d in resolver.tools()}
        if TOOL_SEARCH_NAME in offered:
            listed.append(resolver.tool_search)
    rows = []
    for t in listed:
        kind = "agent" if t.name in (TOOL_SEARCH_NAME, DISPATCH_AGENT_NAME) else t.origin.kind
        rows.append(
            {
                "name": t.name,
                "kind": kind,
                "short_description": t.short_description,
                "description": t.description,
                "deferred": t.deferred,
                "offered": t.name in offered,
                "input_schema": t.input_schema(),
            }
        )
    return rows, notes
