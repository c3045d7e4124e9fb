"""``codingcode config``: which settings files were read, in which order, and what each one
contributed (Claude Code's files beside codingcode's own)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from codingcode.cli.tool_commands import ProjectOption, project_dir

if TYPE_CHECKING:
    from codingcode.config import Settings, SettingsFile


def _contribution(key: str, value: Any) -> str:
    if key == "permissions" and isinstance(value, dict):
        parts = [
            f"{len(value[k])} {k}"
            for k in ("allow", "ask", "deny")
            if isinstance(value.get(k), list)
        ]
        if "defaultMode" in value:
            parts.append(f"defaultMode {value['defaultMode']}")
        return f"permissions ({', '.join(parts) or 'empty'})"
    if key == "hooks" and isinstance(value, dict):
        return f"hooks ({', '.join(value) or 'none'})"
    return key


def describe_file(f: SettingsFile) -> list[str]:
    from codingcode.claude_settings import CODINGCODE_KEYS
    from codingcode.config import GRANTING_SECTIONS, Scope

    label = "Claude Code" if f.dialect == "claude" else "codingcode"
    trust = ""
    if f.scope is not Scope.USER:
        trust = ", trusted" if f.trusted else ", NOT trusted: what it grants is ignored"
    lines = [f"  {f.scope.value:8} {f.path} ({label}{trust})"]
    used = [
        _contribution(k, v) for k, v in f.data.items() if k != "$schema" and k in CODINGCODE_KEYS
    ]
    lines.append(f"    uses: {', '.join(used) if used else 'nothing'}")
    if f.unused:
        lines.append(f"    not used by codingcode: {', '.join(f.unused)}")
    if f.scope is not Scope.USER and not f.trusted:
        grants = [k for k in f.data if k in GRANTING_SECTIONS]
        if grants:
            lines.append(f"    until trusted, only restrictions apply from: {', '.join(grants)}")
    return lines


def config_report(settings: Settings) -> str:
    from codingcode.config import read_order

    read = {f.path for f in settings.files}
    lines = [
        f"Settings of {settings.project}, in the order they are read (a later file wins a "
        "conflict; rule lists add up):"
    ]
    by_path = {f.path: f for f in settings.files}
    for scope, path, dialect in read_order(settings.project):
        if path in read:
            lines += describe_file(by_path[path])
        else:
            label = "Claude Code" if dialect == "claude" else "codingcode"
            state = "not read (see the notes)" if path.exists() else "not present"
            lines.append(f"  {scope.value:8} {path} ({label}): {state}")
    if settings.notes:
        lines.append("Notes:")
        lines += [f"  {n.removeprefix('codingcode: ')}" for n in settings.notes]
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("config")
    def config_command(project: ProjectOption = None) -> None:
        """Show which settings files were read (codingcode's and Claude Code's) and what each
        contributed."""
        from codingcode.approval.rules import load_policy
        from codingcode.workspace import Workspace

        root: Path = project_dir(project)
        settings = Workspace.load(root).settings
        load_policy(settings)  # its notes: rules that could not be read
        typer.echo(config_report(settings))
