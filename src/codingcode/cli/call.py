"""``codingcode tool``: run one tool call and print its output. Typer-free: the Typer
command and the fast path (:mod:`codingcode.cli.fast`) both run :func:`run_tool`."""

from __future__ import annotations

from pathlib import Path

from codingcode.cli.common import check_mode, echo, parse_args_json, project_dir, resume_gc


def run_tool(name: str, args_json: str, project: Path | None, mode: str | None) -> None:
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
        workspace,
        mode=check_mode(mode),
        service=cli_tool_service(),
        confirmer=confirmer,
    )
    if runner.ignored_grants:
        from codingcode.config import untrusted_note

        echo(untrusted_note(runner.ignored_grants, root), err=True)
    resume_gc()  # the call may run long
    from codingcode.mcp import LIST_TOOL, READ_TOOL

    if ":" not in name and name not in (LIST_TOOL, READ_TOOL):
        echo(anyio.run(runner.run, name, args))
        return

    async def call_mcp_tool() -> str:
        # Only an MCP tool (server:tool) needs the project's servers started.
        from codingcode.mcp.client import open_project_mcp

        async with open_project_mcp(root, runner.service, workspace=workspace) as mcp:
            missing = mcp.unavailable(name)  # its server never started: say why, once
            if missing is not None:
                raise missing
            for line in mcp.notes():
                echo(line, err=True)
            return await runner.run(name, args)

    echo(anyio.run(call_mcp_tool))
