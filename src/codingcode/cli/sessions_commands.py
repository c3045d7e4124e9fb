"""``codingcode sessions``: the project's saved sessions, most recently used first."""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer

from codingcode.cli.tool_commands import ProjectOption, project_dir


def register(app: typer.Typer) -> None:
    @app.command("sessions")
    def sessions_command(
        project: ProjectOption = None,
        limit: Annotated[
            int, typer.Option("--limit", "-n", min=1, max=100_000, help="Show at most this many.")
        ] = 20,
        as_json: Annotated[bool, typer.Option("--json", help="Print them as JSON.")] = False,
    ) -> None:
        """List the project's saved sessions: id, start, turns (prompts), tokens, how the latest
        turn ended (answered, failed, cancelled, ...; "failed before any answer" when the model
        never answered) and the first prompt.

        Continue one with `codingcode run --resume ID PROMPT` (or --continue for the latest).
        """
        from codingcode.agent.sessions.store import session_dirs, summarize

        root = project_dir(project)
        rows = []
        for directory in session_dirs(root)[:limit]:
            try:
                row = summarize(directory)
            except OSError as exc:
                typer.echo(
                    f"note: session {directory.name} is unreadable: {exc.strerror}", err=True
                )
                continue
            if row.turns or row.first_prompt or row.damaged:
                rows.append(row)  # not one whose only prompt a hook blocked: nothing in it
        if as_json:
            typer.echo(json.dumps([r.__dict__ for r in rows], indent=2, ensure_ascii=False))
            return
        if not rows:
            typer.echo(f'No saved sessions for {root}. Start one with `codingcode run "PROMPT"`.')
            return
        for r in rows:
            started = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.started))
            first = " ".join(r.first_prompt.split())
            first = first if len(first) <= 60 else first[:57] + "..."
            tokens = r.input_tokens + r.output_tokens
            flags = " (damaged)" if r.damaged else ""
            flags += f" (fork of {r.parent})" if r.parent else ""
            turns = f"{r.turns} turn{'s' if r.turns != 1 else ' '}"
            outcome = r.outcome or "-"
            typer.echo(
                f"{r.id}  {started}  {turns:>9}  {tokens:>8} tokens  {outcome:<10}  "
                f"{first!r}{flags}"
            )
