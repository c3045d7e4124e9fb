"""``codingcode fleet``: many headless sessions from a task file, one result per task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

OutOption = Annotated[
    Path, typer.Option("--out", "-o", help="The output directory (results.jsonl, tasks/ID/).")
]


def register(app: typer.Typer) -> None:
    fleet = typer.Typer(
        help="Run many headless sessions (one per task of a JSON-lines file) on this machine "
        "or a Ray cluster, with one result per task.",
        no_args_is_help=True,
    )
    app.add_typer(fleet, name="fleet")

    @fleet.command("run")
    def run_command(
        tasks_file: Annotated[
            Path, typer.Argument(help="The task file: one JSON object a line (id, prompt, ...).")
        ],
        out: OutOption,
        engine: Annotated[
            str, typer.Option("--engine", help="local (processes here) or ray (a Ray cluster).")
        ] = "local",
        address: Annotated[
            str | None,
            typer.Option(
                "--address",
                help="With --engine ray: the cluster, HOST:PORT or auto (the one started "
                "here with `ray start`).",
            ),
        ] = None,
        concurrency: Annotated[
            int | None,
            typer.Option(
                "--concurrency",
                "-j",
                min=1,
                max=10_000,
                help="At most this many sessions at once (default: the cores here, or the "
                "cluster's CPUs).",
            ),
        ] = None,
        max_attempts: Annotated[
            int,
            typer.Option(
                "--max-attempts",
                min=1,
                max=100,
                help="Attempts per task when its node or process dies.",
            ),
        ] = 3,
        resume: Annotated[
            bool, typer.Option("--resume", help="Run only the tasks that have no result yet.")
        ] = False,
        as_json: Annotated[
            bool, typer.Option("--json", help="Progress as JSON lines on stdout.")
        ] = False,
    ) -> None:
        """Run every task of TASKS_FILE as a headless session in a fresh working copy.

        Exit codes: 0 every task done; 1 a task failed, timed out or has no result; 2 bad
        input; 130 cancelled (Ctrl-C).
        """
        from codingcode.cli.exits import fail
        from codingcode.fleet.progress import BarProgress, JsonProgress, Progress
        from codingcode.fleet.run import FleetOptions, run_fleet

        if address is not None and engine != "ray":
            fail("--address goes with --engine ray.")
        progress: Progress = JsonProgress() if as_json else BarProgress()
        options = FleetOptions(
            tasks_file=tasks_file,
            out=out,
            engine=engine,
            address=address,
            concurrency=concurrency,
            max_attempts=max_attempts,
            resume=resume,
        )
        raise typer.Exit(run_fleet(options, progress))

    @fleet.command("status")
    def status_command(
        out: Annotated[Path, typer.Argument(help="The output directory of a fleet run.")],
        as_json: Annotated[bool, typer.Option("--json", help="Print it as JSON.")] = False,
    ) -> None:
        """Summarise a fleet's results: how many tasks ended how, how many have none yet."""
        from codingcode.fleet.report import summarize

        summary = summarize(out)
        if as_json:
            typer.echo(json.dumps(summary, indent=2))
            return
        for line in summary["lines"]:
            typer.echo(line)

    @fleet.command("results")
    def results_command(
        out: Annotated[Path, typer.Argument(help="The output directory of a fleet run.")],
        as_json: Annotated[
            bool, typer.Option("--json", help="Print every result as a JSON array.")
        ] = False,
    ) -> None:
        """Print the results (one line per task, or every field with --json)."""
        from codingcode.fleet.report import read_results

        results = read_results(out)
        if as_json:
            typer.echo(json.dumps([r.model_dump() for r in results], indent=2, ensure_ascii=False))
            return
        for r in results:
            what = r.answer if r.status == "done" else r.error
            what = " ".join((what or "").split())
            what = what if len(what) <= 80 else what[:77] + "..."
            typer.echo(f"{r.id}  {r.status:<9}  {r.duration_s:7.1f} s  {r.node}  {what}")
