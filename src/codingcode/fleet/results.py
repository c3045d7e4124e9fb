"""``DIR/results.jsonl`` and ``DIR/tasks/ID/``: one result per task, written once.

A task's folder (its stream-json events, session record and ``changes.patch``) is written
first, each file atomically; then its result is appended to ``results.jsonl`` as one whole
line under a lock and fsynced: that line is the commit point. A write that fails (a full
disk) is cut back to where it started, so the file never holds half a line; a half line
a crash left behind is cut off when the directory is next opened. ``DIR/.lock`` is held
(flock) for as long as a ``fleet run`` writes there: a second one is refused.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from codingcode.atomic import atomic_write_bytes, write_all
from codingcode.fleet.tasks import FleetError

RESULTS = "results.jsonl"
TASKS = "tasks"
LOCK = ".lock"
MANIFEST = "fleet.json"


class TaskResult(BaseModel):
    """One line of ``results.jsonl``."""

    id: str
    status: str
    exit_code: int | None = None
    answer: str | None = None
    error: str | None = None
    #: Model responses the task took (``codingcode run``'s ``num_turns``).
    num_turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    duration_s: float = 0.0
    attempts: int = 1
    node: str = ""
    session_id: str | None = None
    #: Whether ``tasks/ID/changes.patch`` holds changes.
    changed: bool = False


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


@dataclass
class Artifacts:
    events: bytes = b""
    session: bytes = b""
    patch: bytes = b""


class ResultsStore:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.results = out / RESULTS
        self._lock_fd: int | None = None

    # -- the run lock ------------------------------------------------------------------
    def acquire(self) -> None:
        """Create ``DIR`` and hold its lock, or say in one line why not."""
        try:
            (self.out / TASKS).mkdir(parents=True, exist_ok=True)
            fd = os.open(self.out / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise FleetError(f"cannot write to {self.out}: {_reason(exc)}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            os.close(fd)
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise FleetError(
                f"another `codingcode fleet run`{who} is writing to {self.out}; wait for it "
                "or choose another --out"
            ) from None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd
        self._repair()

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def running(self) -> bool:
        """Whether a ``fleet run`` holds this directory now."""
        try:
            fd = os.open(self.out / LOCK, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)
        return False

    def _repair(self) -> None:
        """Cut off a last line a crash left without its newline."""
        try:
            fd = os.open(self.results, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise FleetError(f"cannot open {self.results}: {_reason(exc)}") from None
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                return
            tail = os.pread(fd, min(size, 1 << 20), max(0, size - (1 << 20)))
            if tail.endswith(b"\n"):
                return
            keep = size - len(tail) + tail.rfind(b"\n") + 1 if b"\n" in tail else 0
            os.ftruncate(fd, keep)
            os.fsync(fd)
        finally:
            os.close(fd)

    # -- reading -----------------------------------------------------------------------
    def read(self) -> list[TaskResult]:
        """Every whole result line (a damaged one is skipped)."""
        try:
            data = self.results.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise FleetError(f"cannot read {self.results}: {_reason(exc)}") from None
        out = []
        for line in data.split(b"\n")[:-1]:  # the part after the last newline is not whole
            with contextlib.suppress(ValueError, ValidationError):
                out.append(TaskResult.model_validate_json(line))
        return out

    def recorded(self) -> set[str]:
        return {r.id for r in self.read()}

    def read_manifest(self) -> dict[str, Any]:
        try:
            data = json.loads((self.out / MANIFEST).read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        try:
            atomic_write_bytes(self.out / MANIFEST, json.dumps(manifest, indent=2).encode())
        except OSError as exc:
            raise FleetError(f"cannot write to {self.out}: {_reason(exc)}") from None

    # -- writing -----------------------------------------------------------------------
    def record(self, result: TaskResult, artifacts: Artifacts) -> None:
        """Write a task's folder, then its result line. Raises :class:`FleetError` (one
        line) when it cannot; then the task has no result (``--resume`` runs it again)."""
        folder = self.out / TASKS / result.id
        try:
            folder.mkdir(exist_ok=True)
            for name, data in (
                ("events.jsonl", artifacts.events),
                ("session.jsonl", artifacts.session),
                ("changes.patch", artifacts.patch),
            ):
                atomic_write_bytes(folder / name, data)
        except OSError as exc:
            raise FleetError(
                f"task {result.id}: cannot write {folder}: {_reason(exc)}; not recorded"
            ) from None
        self.append(result)

    def append(self, result: TaskResult) -> None:
        line = (result.model_dump_json() + "\n").encode()
        try:
            fd = os.open(self.results, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise FleetError(
                f"task {result.id}: cannot write {self.results}: {_reason(exc)}"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            start = os.fstat(fd).st_size
            try:
                write_all(fd, line)
                os.fsync(fd)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)  # never half a line
                    os.fsync(fd)
                why = (
                    "the disk is full"
                    if exc.errno in (errno.ENOSPC, errno.EDQUOT)
                    else _reason(exc)
                )
                raise FleetError(
                    f"task {result.id}: cannot write its result to {self.results}: {why}; "
                    "not recorded"
                ) from None
        finally:
            os.close(fd)
