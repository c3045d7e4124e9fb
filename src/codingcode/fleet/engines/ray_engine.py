"""The ``ray`` engine: each attempt a Ray task on a node of a cluster whose sandbox works.

Ray is imported only here, and only when this engine runs (``pip install
'codingcode[ray]'``). The engine checks each node once, with a probe pinned to it, for a
working sandbox (the one ``codingcode run`` would use there: bubblewrap if it can build its
namespaces, else Landlock, unless the settings name one); a node without one is refused,
never used unsandboxed. Tasks are then placed on the good nodes by the engine itself (hard
node affinity, one CPU each), so that it knows where each runs and, when a node dies,
retries its tasks on another up to ``--max-attempts``. The model credentials travel as the
task's arguments (memory), never through a file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from codingcode.fleet.attempt import AttemptOutcome, run_attempt
from codingcode.fleet.engines import Job, Sink, retryable
from codingcode.fleet.tasks import FleetError, TaskSpec

INSTALL = "pip install 'codingcode[ray]'"
#: CPUs and memory each task asks of its node.
TASK_CPUS = 1.0
TASK_MEMORY = 256 * 1024 * 1024
#: How often the engine looks for nodes that joined or left.
REFRESH_S = 2.0
#: A node whose probe has not answered by then is refused.
PROBE_TIMEOUT_S = 60.0


def probe_node(sandbox: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """On a node: the sandbox ``codingcode run`` would use here under these ``sandbox``
    settings — bubblewrap, else Landlock, unless they name one — or why there is none."""
    from codingcode.sandbox.service import bubblewrap_problem, find_bwrap, landlock_problem

    sandbox = sandbox or {}
    choice = str(sandbox.get("backend") or "auto")
    report: dict[str, Any] = {"host": socket.gethostname(), "python": sys.executable}
    if sandbox.get("mode") == "off" or choice == "none":
        return report | {"problem": None, "backend": "none (switched off in the settings)"}
    problems = []
    if choice in ("auto", "bubblewrap"):
        bwrap = find_bwrap()
        problem = (
            "bubblewrap (bwrap) is not installed" if bwrap is None else bubblewrap_problem(bwrap)
        )
        if problem is None:
            return report | {"problem": None, "backend": "bubblewrap"}
        problems.append(problem)
    if choice in ("auto", "landlock"):
        problem = landlock_problem()
        if problem is None:
            return report | {"problem": None, "backend": "landlock"}
        problems.append(problem)
    if choice not in ("auto", "bubblewrap", "landlock"):
        problems.append(f"unknown sandbox.backend {choice!r}")
    return report | {"problem": "; ".join(problems), "backend": None}


def attempt_on_node(
    task: dict[str, Any], settings: dict[str, Any], credentials: dict[str, str], node: str
) -> dict[str, Any]:
    """On a node: one attempt; the node's environment plus the driver's credentials."""
    env = {**os.environ, **credentials}
    outcome = run_attempt(TaskSpec.model_validate(task), settings=settings, env=env, node=node)
    return dataclasses.asdict(outcome)


@dataclass
class NodeInfo:
    label: str
    slots: int
    busy: int = 0


@dataclass
class Running:
    job: Job
    node_id: str
    attempt: int


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[-1] if text else type(exc).__name__


#: Host names Ray rewrites to this machine's network address (``resolve_ip_for_localhost``).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def ray_environment(address: str | None, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables Ray must see before it is imported, for this address.

    - ``RAY_ENABLE_UV_RUN_RUNTIME_ENV=0``: a driver started under ``uv run`` would otherwise
      make every Ray worker re-run that ``uv run`` (and ship the current directory); the
      nodes use the ``codingcode`` installed on them.
    - ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` for a cluster on this machine (a loopback
      address, or none: ``auto``): Ray's single-machine mode, in which ``127.0.0.1`` stays
      ``127.0.0.1``. Otherwise Ray turns a loopback address into the host's own, and cannot
      reach a cluster bound to ``127.0.0.1`` alone (it retries until it times out).

    A value the user set is kept.
    """
    wanted = {"RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}
    target = environ.get("RAY_ADDRESS") or address or "auto"
    host = target.removeprefix("ray://").rpartition(":")[0] or target
    if target == "auto" or host in LOOPBACK_HOSTS:
        wanted["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    return {k: v for k, v in wanted.items() if k not in environ}


def _check_reachable(address: str) -> None:
    """Fail fast, in one line, on a HOST:PORT nothing listens on (Ray would retry for a
    minute)."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise FleetError(f"cannot reach the Ray cluster at {address}: {why}") from None


class RayEngine:
    name = "ray"

    def __init__(
        self, address: str | None, concurrency: int | None = None, max_attempts: int = 3
    ) -> None:
        self.address = address
        self.concurrency = concurrency
        self.max_attempts = max(1, max_attempts)
        self.cancel = threading.Event()
        self.ray: Any = None

    def prepare(self) -> None:
        if self.ray is None:
            self.ray = self.connect()

    def connect(self) -> Any:
        # Read by Ray when it is imported (its constants), and by its processes we start.
        os.environ.update(ray_environment(self.address, os.environ))
        try:
            import ray
        except ImportError:
            raise FleetError(f"the ray engine needs Ray installed: {INSTALL}") from None
        if self.address and self.address != "auto":
            _check_reachable(self.address)
        try:
            ray.init(
                address=self.address,
                logging_level=logging.ERROR,
                log_to_driver=False,
                include_dashboard=False if not self.address else None,
                namespace="codingcode-fleet",
            )
        except Exception as exc:  # ray raises ConnectionError, RuntimeError, ValueError...
            where = f" at {self.address}" if self.address else ""
            raise FleetError(
                f"cannot connect to the Ray cluster{where}: {_one_line(exc)}"
            ) from None
        return ray

    def run(self, jobs: list[Job], env: Mapping[str, str], sink: Sink) -> None:
        self.prepare()
        ray = self.ray
        try:
            _Loop(ray, self, jobs, dict(env), sink).run()
        finally:
            with contextlib.suppress(Exception):
                ray.shutdown()


class _Loop:
    def __init__(
        self, ray: Any, engine: RayEngine, jobs: list[Job], env: dict[str, str], sink: Sink
    ) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.ray = ray
        self.affinity = NodeAffinitySchedulingStrategy
        self.engine = engine
        self.queue: deque[Job] = deque(jobs)
        self.env = env
        self.sink = sink
        self.attempts: dict[str, int] = {}
        self.nodes: dict[str, NodeInfo] = {}
        self.seen: set[str] = set()
        self.probing: dict[Any, tuple[str, str, float]] = {}
        self.running: dict[Any, Running] = {}
        self.cancel_sent = False
        self.probe = ray.remote(num_cpus=0, max_retries=0)(probe_node)
        # The sandbox settings the tasks run with (the user's; a task rarely changes them).
        self.sandbox = dict(jobs[0].settings.get("sandbox") or {}) if jobs else {}
        self.attempt = ray.remote(attempt_on_node)
        self.last_refresh = 0.0

    # -- nodes ---------------------------------------------------------------------------
    def refresh(self) -> None:
        self.last_refresh = time.monotonic()
        for n in self.ray.nodes():
            node_id = n["NodeID"]
            if not n.get("Alive"):
                if self.nodes.pop(node_id, None) is not None:
                    self.sink.note(f"node {self._label(n)} left the cluster")
                continue
            if node_id in self.seen:
                continue
            self.seen.add(node_id)
            slots = int(float(n.get("Resources", {}).get("CPU", 0)) // TASK_CPUS)
            if slots < 1:
                continue  # a node without CPUs to give (a head node kept for control)
            ref = self.probe.options(scheduling_strategy=self.affinity(node_id, soft=False)).remote(
                self.sandbox
            )
            self.probing[ref] = (node_id, self._label(n), time.monotonic())
            self.nodes_pending_slots[node_id] = slots

    @staticmethod
    def _label(n: Mapping[str, Any]) -> str:
        return f"{n.get('NodeManagerAddress', '?')}/{str(n['NodeID'])[:8]}"

    nodes_pending_slots: dict[str, int]

    def probed(self, ref: Any) -> None:
        node_id, label, _ = self.probing.pop(ref)
        slots = self.nodes_pending_slots.pop(node_id, 1)
        try:
            report = self.ray.get(ref)
        except Exception as exc:
            self.sink.note(f"node {label} refused: its sandbox check failed: {_one_line(exc)}")
            return
        if report.get("problem"):
            self.sink.note(f"node {label} refused: no working sandbox there ({report['problem']})")
            return
        self.nodes[node_id] = NodeInfo(label, slots)

    def expire_probes(self) -> None:
        now = time.monotonic()
        for ref, (node_id, label, started) in list(self.probing.items()):
            if now - started > PROBE_TIMEOUT_S:
                del self.probing[ref]
                self.nodes_pending_slots.pop(node_id, None)
                self.sink.note(f"node {label} refused: its sandbox check did not answer")

    # -- tasks ---------------------------------------------------------------------------
    def limit(self) -> int:
        total = sum(n.slots for n in self.nodes.values())
        return min(total, self.engine.concurrency) if self.engine.concurrency else total

    def submit(self) -> None:
        while self.queue and len(self.running) < self.limit() and not self.engine.cancel.is_set():
            node_id, info = max(self.nodes.items(), key=lambda kv: kv[1].slots - kv[1].busy)
            if info.busy >= info.slots:
                return
            job = self.queue.popleft()
            attempt = self.attempts.get(job.task.id, 0) + 1
            self.attempts[job.task.id] = attempt
            ref = self.attempt.options(
                scheduling_strategy=self.affinity(node_id, soft=False),
                num_cpus=TASK_CPUS,
                memory=TASK_MEMORY,
                max_retries=0,
                retry_exceptions=False,
            ).remote(job.task.model_dump(), dict(job.settings), self.env, info.label)
            info.busy += 1
            self.running[ref] = Running(job, node_id, attempt)
            self.sink.started(job.task.id, attempt, info.label)

    def finished(self, ref: Any) -> None:
        from ray.exceptions import RayError, RayTaskError, TaskCancelledError

        run = self.running.pop(ref)
        info = self.nodes.get(run.node_id)
        label = info.label if info else run.node_id[:8]
        if info is not None:
            info.busy -= 1
        task_id = run.job.task.id
        try:
            outcome = AttemptOutcome(**self.ray.get(ref))
        except TaskCancelledError:
            outcome = AttemptOutcome(status="cancelled", error="cancelled", node=label)
        except RayTaskError as exc:  # the attempt itself raised: not the node's fault
            if self.engine.cancel.is_set():
                outcome = AttemptOutcome(status="cancelled", error="cancelled", node=label)
            else:
                outcome = AttemptOutcome(status="failed", error=_one_line(exc), node=label)
        except RayError as exc:  # the node or its worker died, or it can no longer run it
            if self.engine.cancel.is_set():
                outcome = AttemptOutcome(status="cancelled", error="cancelled", node=label)
            elif run.attempt < self.engine.max_attempts:
                # Take the node out until a refresh finds it alive (and probes it again).
                self.nodes.pop(run.node_id, None)
                self.seen.discard(run.node_id)
                self.sink.note(
                    f"task {task_id}: attempt {run.attempt} lost with node {label} "
                    f"({type(exc).__name__}); trying again elsewhere"
                )
                self.queue.appendleft(run.job)
                return
            else:
                outcome = AttemptOutcome(
                    status="failed",
                    error=f"lost with its node {run.attempt} times ({type(exc).__name__})",
                    node=label,
                )
        if retryable(outcome) and run.attempt < self.engine.max_attempts:
            self.queue.appendleft(run.job)
            return
        self.sink.finished(task_id, outcome, run.attempt)

    def send_cancel(self) -> None:
        self.cancel_sent = True
        self.queue.clear()
        for ref in self.running:
            with contextlib.suppress(Exception):
                # KeyboardInterrupt in the attempt: it kills its session's process group.
                self.ray.cancel(ref, force=False)

    def run(self) -> None:
        self.nodes_pending_slots = {}
        self.refresh()
        while self.queue or self.running:
            if self.engine.cancel.is_set() and not self.cancel_sent:
                self.send_cancel()
            if time.monotonic() - self.last_refresh > REFRESH_S:
                self.refresh()
            self.expire_probes()
            if self.nodes:
                self.submit()
            elif not self.probing and not self.running and self.queue:
                raise FleetError(
                    "no node of the Ray cluster has a working sandbox (bubblewrap) for the "
                    f"{len(self.queue)} tasks left; see the notes above"
                )
            refs = list(self.running) + list(self.probing)
            if not refs:
                time.sleep(0.2)
                continue
            ready, _ = self.ray.wait(refs, num_returns=1, timeout=0.2)
            for ref in ready:
                if ref in self.probing:
                    self.probed(ref)
                else:
                    self.finished(ref)
