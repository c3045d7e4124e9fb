"""Engines run attempts: ``local`` (a bounded pool of child processes on this machine) and
``ray`` (Ray tasks on a cluster; imported only when chosen)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from codingcode.fleet.attempt import AttemptOutcome
from codingcode.fleet.tasks import TaskSpec


@dataclass(frozen=True)
class Job:
    """A task with what its session needs: the merged settings and the credentials."""

    task: TaskSpec
    settings: Mapping[str, Any] = field(default_factory=dict)


class Sink(Protocol):
    """Where an engine reports; its methods may be called from any thread."""

    def started(self, task_id: str, attempt: int, node: str) -> None: ...

    def finished(self, task_id: str, outcome: AttemptOutcome, attempts: int) -> None: ...

    def note(self, line: str) -> None: ...


class Engine(Protocol):
    name: str
    #: Set (from a signal handler) to cancel every running attempt and start no more.
    cancel: threading.Event

    def prepare(self) -> None:
        """Connect (a cluster): a :class:`FleetError` saying why not, before any task."""
        ...

    def run(self, jobs: list[Job], env: Mapping[str, str], sink: Sink) -> None:
        """Run every job until each has one outcome (or the run is cancelled)."""
        ...


def retryable(outcome: AttemptOutcome) -> bool:
    """An attempt that died of something outside the task (its session killed by a signal
    the engine did not send, such as the OOM killer): worth another attempt."""
    return outcome.status == "failed" and outcome.exit_code is not None and outcome.exit_code < 0
