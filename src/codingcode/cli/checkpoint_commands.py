"""``codingcode checkpoints list|diff|restore|prune``: undo what the agent changed."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from codingcode.cli.tool_commands import ProjectOption, project_dir

if TYPE_CHECKING:
    from codingcode.checkpoints.store import CheckpointStore, RestorePlan

checkpoints_app = typer.Typer(
    help="Checkpoints of the project taken before each change the agent made: list, diff, "
    "restore, prune. Kept outside the project; the project's own git is never touched.",
    no_args_is_help=True,
)


def _store(project: Path) -> CheckpointStore:
    from codingcode.checkpoints.recorder import checkpoint_settings
    from codingcode.checkpoints.store import CheckpointStore
    from codingcode.config import load_settings, user_state_dir

    config = checkpoint_settings(load_settings(project))
    return CheckpointStore(
        project,
        user_state_dir(),
        max_file_size=int(config.maxFileSizeMB * 1024 * 1024),
        max_files=config.maxFiles,
    )


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


@checkpoints_app.command("list")
def list_command(
    project: ProjectOption = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Only this session's checkpoints.")
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, help="Show at most this many (the newest).")
    ] = 50,
    calls: Annotated[
        bool,
        typer.Option(
            "--calls",
            help="One entry per checkpoint (the state before each call that changed "
            "files), not one per prompt.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print them as JSON.")] = False,
) -> None:
    """The checkpoints of this project, oldest first: one per prompt (turn) with the calls it
    made and the files they changed; its id restores the state before that prompt."""
    import json

    store = _store(project_dir(project))
    points = store.checkpoints()
    if session is not None:
        from codingcode.checkpoints.store import root_session

        points = [p for p in points if root_session(p.session) == session]
    rows = []
    if calls:
        for point in points[-limit:]:
            row = point.to_json()
            row["files_changed"] = store.changed_files(point)
            rows.append(row)
    else:
        from codingcode.checkpoints.store import group_turns

        for turn in group_turns(points)[-limit:]:
            row = turn.to_json()
            row["files_changed"] = store.turn_changed_files(turn)
            rows.append(row)
    if store.corrupt_lines:
        typer.echo(
            f"codingcode: skipped {store.corrupt_lines} unreadable line(s) of {store.log_path}.",
            err=True,
        )
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("No checkpoints in this project yet.")
        return
    for row in rows:
        made = "; ".join(f"{c.get('tool')} {c.get('summary', '')}".strip() for c in row["calls"])
        files = row["files_changed"]
        shown = ", ".join(files[:4]) + (f" and {len(files) - 4} more" if len(files) > 4 else "")
        label = "before restore" if row["kind"] == "pre-restore" else f"turn {row['turn']}"
        typer.echo(f"{row['id']}  {_when(row['time'])}  {row['session']}  {label}")
        if made:
            typer.echo(f"    calls: {made[:300]}")
        if files:
            typer.echo(f"    changed: {shown}")


@checkpoints_app.command("diff")
def diff_command(
    checkpoint: Annotated[str, typer.Argument(help="The checkpoint id (a unique prefix will do).")],
    project: ProjectOption = None,
) -> None:
    """What changed in the project since CHECKPOINT (a unified diff)."""
    store = _store(project_dir(project))
    text = store.diff_text(checkpoint, color=sys.stdout.isatty())
    typer.echo(text.rstrip("\n") if text.strip() else "No changes since that checkpoint.")


def _describe(plan: RestorePlan) -> list[str]:
    verbs = {"revert": "restore", "recreate": "recreate", "delete": "delete (created since)"}
    lines = [f"  {verbs[c.action]}: {c.path}" for c in plan.changes[:50]]
    if len(plan.changes) > 50:
        lines.append(f"  … and {len(plan.changes) - 50} more")
    for path in plan.unrestorable:
        lines.append(f"  cannot restore (kept by hash only, over the size limit): {path}")
    return lines


@checkpoints_app.command("restore")
def restore_command(
    checkpoint: Annotated[
        str | None,
        typer.Argument(
            help="The checkpoint id (default: the state before the latest prompt of the latest session)."
        ),
    ] = None,
    project: ProjectOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask; restore.")] = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Also overwrite files changed outside the agent."),
    ] = False,
) -> None:
    """Put the project's files back as they were at CHECKPOINT (undoable)."""
    from codingcode.cli.exits import fail

    store = _store(project_dir(project))
    point = store.find(checkpoint) if checkpoint else store.latest_turn_start()
    plan = store.plan_restore(point)
    if not plan.changes and not plan.unrestorable:
        typer.echo(f"Nothing to restore: the project is as it was at {point.id}.")
        return
    typer.echo(f"Restoring checkpoint {point.id} ({_when(point.time)}, turn {point.turn}):")
    for line in _describe(plan):
        typer.echo(line)
    if plan.conflicts and not force:
        shown = ", ".join(plan.conflicts[:5]) + (" …" if len(plan.conflicts) > 5 else "")
        fail(
            f"{len(plan.conflicts)} file(s) changed outside the agent since its last call "
            f"({shown}); nothing was restored. Add --force to overwrite them.",
            code=1,
        )
    if not yes:
        if not sys.stdin.isatty():
            fail("restore changes files: add --yes to confirm without a terminal.")
        if not typer.confirm("Restore these files?", default=False):
            typer.echo("Nothing restored.")
            raise typer.Exit(1)
    report = store.restore(plan, force=force)
    typer.echo(
        f"Restored {len(report.restored)} file(s), deleted {len(report.deleted)}. "
        f"Undo with: codingcode checkpoints restore {report.undo_id}"
    )
    for path in report.unrestorable:
        typer.echo(f"  not restored (kept by hash only): {path}")
    for path in report.skipped:
        typer.echo(f"  skipped: {path}")


@checkpoints_app.command("prune")
def prune_command(
    project: ProjectOption = None,
    older_than: Annotated[
        float | None,
        typer.Option(
            "--older-than",
            min=0,
            help="Days (default: checkpoints.maxAgeDays from the settings, else 30).",
        ),
    ] = None,
) -> None:
    """Drop old checkpoints and the files only they kept."""
    from codingcode.checkpoints.recorder import checkpoint_settings
    from codingcode.config import load_settings

    root = project_dir(project)
    config = checkpoint_settings(load_settings(root))
    days = older_than if older_than is not None else config.maxAgeDays
    store = _store(root)
    before = store.size_bytes()
    dropped = store.prune(max_age_days=days, max_store_bytes=int(config.maxStoreMB * 1024 * 1024))
    after = store.size_bytes()
    typer.echo(
        f"Pruned {dropped} checkpoint(s) (older than {days:g} day(s), or over the "
        f"{config.maxStoreMB:g} MB store limit); the store went from {before / 1e6:.1f} MB "
        f"to {after / 1e6:.1f} MB."
    )


def register(app: typer.Typer) -> None:
    app.add_typer(checkpoints_app, name="checkpoints")
