"""``codingcode hooks list``: every configured hook, its event, matcher and source file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from codingcode.cli.tool_commands import ProjectOption, project_dir


def hook_rows(project: Path) -> list[dict[str, Any]]:
    """One row per command hook in the settings, with whether it runs here."""
    from codingcode.config import load_settings
    from codingcode.hooks.settings import load_command_hooks, runnable_hooks

    hooks = load_command_hooks(load_settings(project))
    runs = runnable_hooks(hooks)
    return [
        {
            "event": h.event,
            "matcher": h.matcher,
            "command": h.label,
            "type": h.kind,
            "active": h.active,
            "timeout": h.timeout_s,
            "scope": h.scope.value if h.scope is not None else None,
            "source": h.source,
            "runs": h in runs,
        }
        for h in hooks
    ]


def format_rows(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "No hooks configured."
    lines = []
    for r in rows:
        state = "" if r["runs"] else "  (not run: the project is not trusted)"
        if not r["active"]:
            state = "  (inactive: codingcode does not raise this event)"
        matcher = r["matcher"] or "*"
        lines.append(f"{r['event']} [{matcher}] {r['command']}  (timeout {r['timeout']:g}s)")
        lines.append(f"    from {r['source']}{state}")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    hooks_app = typer.Typer(help="The hooks of the settings.", no_args_is_help=True)
    app.add_typer(hooks_app, name="hooks")

    @hooks_app.command("list")
    def list_command(
        project: ProjectOption = None,
        as_json: Annotated[bool, typer.Option("--json", help="One JSON array.")] = False,
    ) -> None:
        """List every hook: event, matcher, command, timeout, source file, whether it runs."""
        from codingcode.cli.exits import fail
        from codingcode.config import SettingsError

        root = project_dir(project)
        try:
            rows = hook_rows(root)
        except SettingsError as exc:
            fail(exc.message)
        typer.echo(json.dumps(rows, indent=2) if as_json else format_rows(rows))
