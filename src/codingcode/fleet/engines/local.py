"""The ``local`` engine: at most N sessions at once on this machine (default: one per core).

Each attempt is a ``codingcode run`` child process started from a worker thread; the
threads only wait. No dependency beyond the standard library.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from codingcode.fleet.attempt import AttemptOutcome, run_attempt
from codingcode.fleet.engines import Job, Sink, retryable


class LocalEngine:
    name = "local"

    def __init__(self, concurrency: int | None = None, max_attempts: int = 3) -> None:
        self.concurrency = max(1, concurrency or os.cpu_count() or 1)
        self.max_attempts = max(1, max_attempts)
        self.cancel = threading.Event()
        self.node = socket.gethostname()

    def prepare(self) -> None:
        pass

    def _one(self, job: Job, env: Mapping[str, str], sink: Sink) -> None:
        attempt = 0
        outcome: AttemptOutcome | None = None
        while attempt < self.max_attempts and not self.cancel.is_set():
            attempt += 1
            sink.started(job.task.id, attempt, self.node)
            try:
                outcome = run_attempt(
                    job.task, settings=job.settings, env=env, cancel=self.cancel, node=self.node
                )
            except OSError as exc:  # the machine could not start it (no memory, no fds)
                outcome = AttemptOutcome(
                    status="failed", error=f"could not start: {exc.strerror or exc}"
                )
                outcome.node = self.node
            if not retryable(outcome):
                break
        if outcome is not None:
            sink.finished(job.task.id, outcome, attempt)

    def run(self, jobs: list[Job], env: Mapping[str, str], sink: Sink) -> None:
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="fleet") as pool:
            pending: set[Future[None]] = {pool.submit(self._one, j, env, sink) for j in jobs}
            # The main thread waits in short steps, so that Ctrl-C is handled at once.
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in done:
                    future.result()
