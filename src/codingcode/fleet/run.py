"""``codingcode fleet run``: the task file, the out dir, an engine, one result per task."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codingcode.fleet.attempt import AttemptOutcome, sweep_stale_attempts
from codingcode.fleet.engines import Engine, Job
from codingcode.fleet.progress import Counts, Progress
from codingcode.fleet.results import Artifacts, ResultsStore, TaskResult
from codingcode.fleet.tasks import FleetError, load_tasks

ENGINES = ("local", "ray")

#: Exit codes of ``fleet run``.
EXIT_OK = 0
EXIT_SOME_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_CANCELLED = 130


@dataclass
class FleetOptions:
    tasks_file: Path
    out: Path
    engine: str = "local"
    address: str | None = None
    concurrency: int | None = None
    max_attempts: int = 3
    resume: bool = False


def user_settings() -> dict[str, Any]:
    """The user's own settings file (the tasks' ``settings`` are merged over it)."""
    from codingcode.dirs import user_config_dir

    path = user_config_dir() / "settings.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise FleetError(f"cannot read your settings {path}: {exc}") from None
    if not isinstance(data, dict):
        raise FleetError(f"your settings {path} are not a JSON object")
    return data


#: Environment variables that carry model credentials and endpoints to a remote node.
_CREDENTIAL_PREFIXES = ("OPENAI_", "ANTHROPIC_", "AZURE_OPENAI_")
_CREDENTIAL_SUFFIXES = ("_API_KEY", "_AUTH_TOKEN", "_BASE_URL")
_CREDENTIAL_NAMES = ("CODINGCODE_MODEL", "CODINGCODE_BWRAP")


def credential_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The part of this environment a remote session needs: the model's credentials and
    endpoint (handed to each task in memory, never written to disk)."""
    environ = os.environ if environ is None else environ
    return {
        k: v
        for k, v in environ.items()
        if k.startswith(_CREDENTIAL_PREFIXES)
        or k.endswith(_CREDENTIAL_SUFFIXES)
        or k in _CREDENTIAL_NAMES
    }


class FleetSink:
    """Records each outcome once (the engines call it from their threads)."""

    def __init__(self, store: ResultsStore, progress: Progress, counts: Counts) -> None:
        self.store = store
        self.progress = progress
        self.counts = counts
        self.lock = threading.Lock()
        self.recorded: set[str] = set()
        self.running: set[str] = set()
        self.unrecorded = 0
        self.statuses: dict[str, int] = {}

    def started(self, task_id: str, attempt: int, node: str) -> None:
        with self.lock:
            if task_id not in self.running:
                self.running.add(task_id)
                self.counts.running += 1
        self.progress.started(task_id, attempt, node)

    def note(self, line: str) -> None:
        self.progress.note(line)

    def finished(self, task_id: str, outcome: AttemptOutcome, attempts: int) -> None:
        usage = outcome.usage
        result = TaskResult(
            id=task_id,
            status=outcome.status,
            exit_code=outcome.exit_code,
            answer=outcome.answer,
            error=outcome.error,
            num_turns=outcome.num_turns,
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cost_usd=usage.get("cost_usd"),
            duration_s=outcome.duration_s,
            attempts=attempts,
            node=outcome.node,
            session_id=outcome.session_id,
            changed=bool(outcome.patch),
        )
        with self.lock:
            if task_id in self.recorded:  # exactly once, whatever an engine does
                return
            if task_id in self.running:
                self.running.discard(task_id)
                self.counts.running -= 1
            try:
                self.store.record(result, Artifacts(outcome.events, outcome.session, outcome.patch))
            except FleetError as exc:
                self.unrecorded += 1
                self.counts.failed += 1
                self.progress.note(f"error: {exc.message}")
                return
            self.recorded.add(task_id)
            self.statuses[result.status] = self.statuses.get(result.status, 0) + 1
            if result.status == "done":
                self.counts.done += 1
            else:
                self.counts.failed += 1
        self.progress.finished(result)


def make_engine(options: FleetOptions) -> Engine:
    if options.engine == "local":
        from codingcode.fleet.engines.local import LocalEngine

        return LocalEngine(options.concurrency, options.max_attempts)
    if options.engine == "ray":
        from codingcode.fleet.engines.ray_engine import RayEngine

        return RayEngine(options.address or "auto", options.concurrency, options.max_attempts)
    raise FleetError(f"unknown --engine {options.engine!r}; choose one of: {', '.join(ENGINES)}")


@contextmanager
def cancel_on_signals(engine: Engine, progress: Progress) -> Iterator[None]:
    """Ctrl-C (SIGINT) or SIGTERM: cancel every running task; a second one is the same."""

    def handler(signum: int, frame: object) -> None:
        if not engine.cancel.is_set():
            engine.cancel.set()
            progress.note("cancelling: stopping every running task…")

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def run_fleet(options: FleetOptions, progress: Progress) -> int:
    task_file = load_tasks(options.tasks_file)
    if options.engine not in ENGINES:
        raise FleetError(
            f"unknown --engine {options.engine!r}; choose one of: {', '.join(ENGINES)}"
        )
    if options.max_attempts < 1:
        raise FleetError("--max-attempts must be at least 1")
    store = ResultsStore(options.out)
    store.acquire()
    try:
        for line in task_file.problems:
            progress.note(f"error: {line}")
        recorded = store.recorded()
        if recorded and not options.resume:
            raise FleetError(
                f"{options.out} already holds the results of {len(recorded)} tasks; add "
                "--resume to run only the tasks without one, or choose another --out"
            )
        ids = [t.id for t in task_file.tasks]
        manifest = store.read_manifest()
        known = list(manifest.get("ids") or [])
        store.write_manifest(
            {
                "tasks_file": str(options.tasks_file.resolve()),
                "ids": known + [i for i in ids if i not in set(known)],
                "engine": options.engine,
                "started": manifest.get("started") or time.time(),
            }
        )
        mine = user_settings()
        from codingcode.config import merge_values

        jobs = [
            Job(t, merge_values(mine, t.settings) if t.settings else mine)
            for t in task_file.tasks
            if t.id not in recorded
        ]
        engine = make_engine(options)
        env = dict(os.environ) if options.engine == "local" else credential_env()
        counts = Counts(total=len(task_file.tasks), already=len(task_file.tasks) - len(jobs))
        if counts.already:
            progress.note(f"resuming: {counts.already} tasks already have a result")
        sink = FleetSink(store, progress, counts)
        engine.prepare()
        progress.begin(counts)
        try:
            with cancel_on_signals(engine, progress):
                engine.run(jobs, env, sink)
        finally:
            progress.end()
            sweep_stale_attempts()
    finally:
        store.release()
    if engine.cancel.is_set():
        return EXIT_CANCELLED
    bad = sink.unrecorded + sum(n for s, n in sink.statuses.items() if s != "done")
    return EXIT_SOME_FAILED if bad or task_file.problems else EXIT_OK
