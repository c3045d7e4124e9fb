"""One attempt at one task: a fresh working copy, ``codingcode run`` in it, what it left.

The session is the real headless command (``codingcode run - --output-format stream-json``)
as a child process, so it is sandboxed exactly as ``codingcode run`` is. The child leads a
process group of its own (killed whole on timeout, cancellation or exit) and gets SIGKILL
when the process that started it dies (a Ray worker whose node went down): its sandboxes
(bubblewrap, ``--die-with-parent``) die with it. The model credentials arrive in the
environment and are passed on in the child's environment only, never written to disk.

Everything lives in an attempt folder under the system's temp dir that is removed at the
end; folders of attempts whose process died (a node killed mid-run) are swept by the next
attempt on that machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from codingcode.fleet.tasks import FleetError, TaskSpec
from codingcode.fleet.workcopy import Baseline, make_copy

Status = Literal["done", "failed", "timeout", "cancelled"]

#: Where the attempts' folders go instead of ``<tmp>/codingcode-fleet-<uid>`` (a big disk).
WORKDIR_ENV = "CODINGCODE_FLEET_WORKDIR"


def attempts_root() -> Path:
    """The folder of every attempt on this machine."""
    override = os.environ.get(WORKDIR_ENV)
    if override:
        return Path(override)
    return Path(tempfile.gettempdir()) / f"codingcode-fleet-{os.getuid()}"


_OWNER = "owner.pid"
#: How much of the session's stderr a failure quotes.
_STDERR_TAIL = 2000


@dataclass
class AttemptOutcome:
    """What one attempt produced (plain data: it crosses process and node boundaries)."""

    status: Status
    exit_code: int | None = None
    answer: str | None = None
    error: str | None = None
    #: Model responses of the run (its ``num_turns``).
    num_turns: int = 0
    usage: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    node: str = ""
    duration_s: float = 0.0
    events: bytes = b""
    session: bytes = b""
    patch: bytes = b""


def _set_parent_death_signal() -> None:  # pragma: no cover - runs in the child
    """In the child before exec: SIGKILL when the parent dies (Linux ``PR_SET_PDEATHSIG``)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_attempts(root: Path | None = None) -> None:
    """Remove the folders of attempts whose process is gone (a killed node or engine)."""
    root = root or attempts_root()
    with contextlib.suppress(OSError):
        for entry in root.iterdir():
            try:
                pid = int((entry / _OWNER).read_text().strip())
            except (OSError, ValueError):
                # Not yet marked (an attempt just starting) or damaged: judged by its age.
                with contextlib.suppress(OSError):
                    if time.time() - entry.stat().st_mtime > 3600:
                        shutil.rmtree(entry, ignore_errors=True)
                continue
            if not _pid_alive(pid):
                shutil.rmtree(entry, ignore_errors=True)


def _config_dir(folder: Path, settings: Mapping[str, Any]) -> Path:
    """The session's user config dir: the user's own entries (skills, agents, commands...)
    linked, and ``settings.json`` the user's settings merged with the task's."""
    from codingcode.dirs import user_config_dir

    real = user_config_dir()
    config = folder / "config"
    config.mkdir()
    with contextlib.suppress(OSError):
        for entry in real.iterdir():
            if entry.name != "settings.json":
                (config / entry.name).symlink_to(entry)
    if settings:
        (config / "settings.json").write_text(json.dumps(settings, indent=2))
    return config


def session_command(task: TaskSpec, copy: Path) -> list[str]:
    """The headless command line of a task (its prompt goes on stdin)."""
    argv = [sys.executable, "-m", "codingcode", "run", "-", "--output-format", "stream-json"]
    argv += ["--project", str(copy), "--mode", task.mode]
    if task.model:
        argv += ["--model", task.model]
    if task.max_turns is not None:
        argv += ["--max-turns", str(task.max_turns)]
    for rule in task.allowed_tools:
        argv += ["--allowed-tools", rule]
    return argv


def _read_events(path: Path) -> tuple[bytes, dict[str, Any] | None, str | None]:
    """The stream-json output, its ``result`` record and the session id."""
    try:
        data = path.read_bytes()
    except OSError:
        return b"", None, None
    result = None
    session_id = None
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if record.get("type") == "init":
            session_id = record.get("session_id")
        elif record.get("type") == "result":
            result = record
            session_id = record.get("session_id") or session_id
    return data, result, session_id


def _session_record(state: Path, session_id: str | None) -> bytes:
    if not session_id:
        return b""
    for path in (state / "projects").glob(f"*/{session_id}/session.jsonl"):
        with contextlib.suppress(OSError):
            return path.read_bytes()
    return b""


def _stderr_tail(path: Path) -> str:
    try:
        text = path.read_bytes()[-_STDERR_TAIL:].decode(errors="replace")
    except OSError:
        return ""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def run_attempt(
    task: TaskSpec,
    *,
    settings: Mapping[str, Any],
    env: Mapping[str, str],
    cancel: threading.Event | None = None,
    node: str | None = None,
) -> AttemptOutcome:
    """Run ``task`` once on this machine. A task that cannot start (no such project, a bad
    ref) ends ``failed`` with one line saying why; ``cancel`` set ends it ``cancelled``."""
    started = time.monotonic()
    node = node or socket.gethostname()
    sweep_stale_attempts()
    root = attempts_root()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder = root / f"{task.id}-{uuid.uuid4().hex[:12]}"
    folder.mkdir(mode=0o700)
    try:
        (folder / _OWNER).write_text(str(os.getpid()))
        outcome = _run_in(folder, task, settings, env, cancel)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    outcome.node = node
    outcome.duration_s = round(time.monotonic() - started, 3)
    return outcome


def _run_in(
    folder: Path,
    task: TaskSpec,
    settings: Mapping[str, Any],
    env: Mapping[str, str],
    cancel: threading.Event | None,
) -> AttemptOutcome:
    copy = folder / "work"
    baseline = Baseline(copy, folder / "start.git")
    try:
        make_copy(task, copy)
        baseline.record()
    except FleetError as exc:
        return AttemptOutcome(status="failed", error=exc.message)
    if cancel is not None and cancel.is_set():
        return AttemptOutcome(status="cancelled", error="cancelled before it started")
    state = folder / "state"
    state.mkdir()
    child_env = dict(env)
    child_env["CODINGCODE_CONFIG_DIR"] = str(_config_dir(folder, settings))
    child_env["CODINGCODE_STATE_DIR"] = str(state)
    events_path = folder / "events.jsonl"
    stderr_path = folder / "stderr.log"
    status: Status | None = None
    with events_path.open("wb") as out, stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            session_command(task, copy),
            cwd=copy,
            env=child_env,
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            start_new_session=True,
            preexec_fn=_set_parent_death_signal,
        )
        try:
            assert proc.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.write(task.prompt.encode())
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
            deadline = started_deadline(task)
            while True:
                try:
                    proc.wait(timeout=0.05)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if cancel is not None and cancel.is_set():
                    status = "cancelled"
                    break
                if deadline is not None and time.monotonic() > deadline:
                    status = "timeout"
                    break
        finally:
            # Whatever ended it (the session, a limit, cancellation, this worker being
            # interrupted), nothing it started outlives it.
            _kill_group(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
    data, result, session_id = _read_events(events_path)
    outcome = AttemptOutcome(
        status="failed",
        exit_code=proc.returncode if status is None else None,
        session_id=session_id,
        events=data,
        session=_session_record(state, session_id),
    )
    if result is not None:
        outcome.answer = result.get("answer")
        outcome.error = result.get("error")
        outcome.num_turns = int(result.get("num_turns") or 0)
        outcome.usage = dict(result.get("usage") or {})
    if status == "timeout":
        outcome.status = "timeout"
        outcome.error = f"timed out after {task.timeout_s:g} s"
    elif status == "cancelled":
        outcome.status = "cancelled"
        outcome.error = "cancelled"
    elif proc.returncode == 0:
        outcome.status = "done"
    elif outcome.error is None:
        reason = result.get("exit_reason") if result is not None else None
        outcome.error = (
            f"{reason} (exit {proc.returncode})"
            if reason
            else _stderr_tail(stderr_path) or f"codingcode run exited {proc.returncode}"
        )
    try:
        outcome.patch = baseline.changes()
    except FleetError as exc:
        outcome.error = outcome.error or exc.message
    return outcome


def started_deadline(task: TaskSpec) -> float | None:
    return None if task.timeout_s is None else time.monotonic() + task.timeout_s
