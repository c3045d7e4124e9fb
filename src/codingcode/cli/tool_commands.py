"""``codingcode tool`` (run one call) and ``codingcode tools`` (list them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from codingcode.cli.call import run_tool
from codingcode.cli.common import check_mode as check_mode
from codingcode.cli.common import parse_args_json as parse_args_json
from codingcode.cli.common import project_dir as project_dir

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
        run_tool(name, args_json, project, mode)

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
            workspace,
            model=ModelSpec("openai", "none", "tools"),
            provider=_NoModel(),
            service=service,
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
