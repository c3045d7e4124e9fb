"""``codingcode trust``: review what a project would grant, and trust (or revoke) it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from codingcode.cli.tool_commands import ProjectOption, project_dir

if TYPE_CHECKING:
    from codingcode.trust import TrustStore


def trust_summary(project: Path, store: TrustStore) -> tuple[str, bool]:
    """A readable summary of the project's grant-bearing files; and whether all are trusted."""
    from codingcode.trust import describe_grants

    lines = [f"Project {project}"]
    all_trusted = True
    for state in store.status(project):
        if not state.exists:
            continue
        if state.trusted:
            label = "trusted"
        elif state.changed:
            label = "CHANGED since you trusted it"
        else:
            label = "not trusted"
        all_trusted &= state.trusted
        lines.append(f"  {state.relative} ({label})")
        grants = describe_grants(state.path)
        lines += [f"    - {g}" for g in grants] or ["    - nothing that grants permissions"]
    if len(lines) == 1:
        lines.append(
            "  no settings, hooks, MCP servers or agent profiles that could grant anything"
        )
    return "\n".join(lines), all_trusted


def register(app: typer.Typer) -> None:
    @app.command("trust")
    def trust_command(
        project: ProjectOption = None,
        revoke: Annotated[
            bool, typer.Option("--revoke", help="Forget the trust of this project.")
        ] = False,
        show: Annotated[
            bool, typer.Option("--show", help="Only show what the project would grant.")
        ] = False,
    ) -> None:
        """Trust a project: its allow rules, hooks, MCP servers and sandbox settings then apply."""
        from codingcode.trust import TrustStore

        root = project_dir(project)
        store = TrustStore()
        if not show:
            store.check_writable()  # before anything is shown as if it would be recorded
        if revoke:
            existed = store.revoke(root)
            typer.echo(f"Trust of {root} revoked." if existed else f"{root} was not trusted.")
            return
        summary, _ = trust_summary(root, store)
        typer.echo(summary)
        if show:
            return
        store.trust(root)
        typer.echo(
            "Trusted. These grants now apply; if one of these files changes, codingcode ignores "
            "its grants again until you run `codingcode trust` again."
        )
