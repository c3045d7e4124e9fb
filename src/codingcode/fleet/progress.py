"""How a fleet run shows its progress: a rich bar on stderr (done, failed, running, tasks
per minute, ETA), or one JSON object a line on stdout for scripts (``--json``)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any, Protocol

from codingcode.fleet.results import TaskResult


class Counts:
    def __init__(self, total: int, already: int) -> None:
        self.total = total
        self.already = already
        self.done = 0
        self.failed = 0
        self.running = 0
        self.started_at = time.monotonic()

    @property
    def finished(self) -> int:
        return self.done + self.failed

    def per_minute(self) -> float:
        elapsed = max(time.monotonic() - self.started_at, 1e-6)
        return self.finished * 60.0 / elapsed

    def eta_s(self) -> float | None:
        rate = self.per_minute()
        left = self.total - self.already - self.finished
        return None if rate <= 0 else left * 60.0 / rate

    def as_json(self) -> dict[str, Any]:
        eta = self.eta_s()
        return {
            "total": self.total,
            "skipped": self.already,
            "done": self.done,
            "failed": self.failed,
            "running": self.running,
            "tasks_per_minute": round(self.per_minute(), 2),
            "eta_s": None if eta is None else round(eta, 1),
        }


class Progress(Protocol):
    def begin(self, counts: Counts) -> None: ...
    def started(self, task_id: str, attempt: int, node: str) -> None: ...
    def finished(self, result: TaskResult) -> None: ...
    def note(self, line: str) -> None: ...
    def end(self) -> None: ...


class JsonProgress:
    """``--json``: ``start``, ``task_started``, ``task_finished``, ``note``, ``end`` lines."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counts | None = None
        # stdout is the events' alone: whatever else would print there (an engine's own
        # messages, from Python or native code) goes to stderr instead.
        sys.stdout.flush()
        self.out = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="backslashreplace")
        os.dup2(2, 1)

    def _emit(self, record: dict[str, Any]) -> None:
        with self.lock:
            self.out.write(json.dumps(record, ensure_ascii=False) + "\n")
            self.out.flush()

    def _counts(self) -> dict[str, Any]:
        return self.counts.as_json() if self.counts is not None else {}

    def begin(self, counts: Counts) -> None:
        self.counts = counts
        self._emit({"type": "start", **counts.as_json()})

    def started(self, task_id: str, attempt: int, node: str) -> None:
        self._emit(
            {"type": "task_started", "id": task_id, "attempt": attempt, "node": node}
            | {"progress": self._counts()}
        )

    def finished(self, result: TaskResult) -> None:
        self._emit(
            {"type": "task_finished", "result": result.model_dump(), "progress": self._counts()}
        )

    def note(self, line: str) -> None:
        self._emit({"type": "note", "message": line})

    def end(self) -> None:
        self._emit({"type": "end", **self._counts()})


class BarProgress:
    """The rich progress bar on stderr; notes are printed above it."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.counts: Counts | None = None
        self.bar: Any = None
        self.task: Any = None

    def _line(self) -> str:
        c = self.counts
        if c is None:
            return ""
        eta = c.eta_s()
        eta_text = "--" if eta is None else time.strftime("%H:%M:%S", time.gmtime(eta))
        return (
            f"done {c.done}  failed {c.failed}  running {c.running}  "
            f"{c.per_minute():.1f} tasks/min  ETA {eta_text}"
        )

    def begin(self, counts: Counts) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
        from rich.progress import Progress as RichProgress

        self.counts = counts
        self.bar = RichProgress(
            TextColumn("fleet"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[line]}"),
            console=self.console,
            transient=False,
        )
        self.task = self.bar.add_task(
            "fleet", total=counts.total, completed=counts.already, line=self._line()
        )
        self.bar.start()

    def _refresh(self) -> None:
        if self.bar is not None and self.counts is not None:
            c = self.counts
            self.bar.update(self.task, completed=c.already + c.finished, line=self._line())

    def started(self, task_id: str, attempt: int, node: str) -> None:
        if attempt > 1:
            self.note(f"task {task_id}: attempt {attempt} on {node}")
        self._refresh()

    def finished(self, result: TaskResult) -> None:
        if result.status != "done":
            why = f": {result.error}" if result.error else ""
            self.console.print(
                f"task {result.id} {result.status}{why}", markup=False, soft_wrap=True
            )
        self._refresh()

    def note(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def end(self) -> None:
        self._refresh()
        if self.bar is not None:
            self.bar.stop()
