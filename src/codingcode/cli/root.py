"""The Typer app of the ``codingcode`` command: its root options and the interactive app.

:mod:`codingcode.cli` adds the sub-commands (only the one a command line names) and runs it;
built on first use, so that the fast path (:mod:`codingcode.cli.fast`) never imports Typer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from codingcode import __version__

app = typer.Typer(
    name="codingcode",
    help="A coding-agent runtime built around its tool system.",
    # Bare `codingcode` starts the interactive app (see the root callback).
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help text: rendering it with rich costs ~200 ms of imports on every --help.
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"codingcode {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", "-V", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
    project: Annotated[
        Path | None,
        typer.Option("--project", "-p", help="Interactive app: the project root (default: cwd)."),
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            "-m",
            help="Interactive app: default, acceptEdits, plan, bypass (default: the settings').",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Interactive app: PROVIDER:MODEL, e.g. openai:gpt-4.1."),
    ] = None,
    continue_: Annotated[
        bool,
        typer.Option("--continue", "-c", help="Interactive app: continue the latest session."),
    ] = False,
    resume: Annotated[
        str | None,
        typer.Option("--resume", "-r", help="Interactive app: continue the session with this id."),
    ] = None,
    initial_prompt: Annotated[
        str | None,
        typer.Option(
            "--initial-prompt",
            hidden=True,
            help='Interactive app: the first prompt (`codingcode "PROMPT"` gives it).',
        ),
    ] = None,
) -> None:
    """A coding-agent runtime built around its tool system.

    Without a command: the interactive agent in this terminal.
    """
    if ctx.invoked_subcommand is None:
        from codingcode.tui.app import start_app

        start_app(project, model, mode, continue_=continue_, resume=resume, initial=initial_prompt)
