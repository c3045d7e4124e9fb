"""Background commands: dev servers, watchers and long builds the agent starts, reads and stops.

``execute_command`` with ``run_in_background`` starts the command in the same sandbox (the
call's launcher plan, exactly as in the foreground) and returns at once with an id (``bg1``),
the pid and the output of a short grace period. A pump thread copies the command's output
(stdout and stderr, interleaved as written) into a log file under the state directory, up to a
cap on disk; past the cap it keeps reading and counts what it dropped, so the agent's memory
stays flat whatever the command prints. ``command_output`` returns a bounded slice of that
file and ``command_kill`` ends the whole process tree (TERM, then KILL after a grace period).

Every background process belongs to one session and dies with it: :meth:`close` at the end
of the session, an ``atexit`` handler as a backstop, and the sandbox's die-with-parent and
pid namespace when the agent itself is killed.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import select
import signal
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from pydantic import BaseModel, ConfigDict, Field

from codingcode.capabilities import CapabilitySet
from codingcode.errors import InvalidArgumentsError, NotFoundError, ToolFailureError
from codingcode.process import Launcher, LaunchPlan, plan_launch
from codingcode.process_tree import signal_tree, wait_gone
from codingcode.tools.definition import BUILTIN, ToolAnnotations, ToolDefinition, ToolExecCtx

if TYPE_CHECKING:
    from codingcode.workspace import Workspace

#: Defaults of the ``background`` settings (docs/configuration.md).
MAX_PROCESSES = 8
MAX_OUTPUT_MB = 100
#: How long a start waits for the first output before returning.
GRACE_S = 1.0
#: How long ``command_kill`` waits after TERM before KILL.
KILL_GRACE_S = 3.0
#: The same at the end of a session: short, so that `codingcode run` exits promptly.
SESSION_END_GRACE_S = 0.5
#: How long an ended process's tree is waited for after its final SIGKILL.
GONE_WAIT_S = 5.0
#: ``command_output`` returns at most this much text per call.
SLICE_BYTES = 16_000
MAX_WAIT_S = 120
CHUNK = 65536

#: The names of the two tools (deferred until a background process exists).
OUTPUT_TOOL = "command_output"
KILL_TOOL = "command_kill"


@dataclass
class BackgroundLimits:
    max_processes: int = MAX_PROCESSES
    max_output_bytes: int = MAX_OUTPUT_MB * 1024 * 1024
    #: Seconds a background process may live; ``None``: until killed or the session ends.
    max_lifetime_s: float | None = None


@dataclass
class BackgroundProcess:
    id: str
    command: str
    pid: int
    log_path: Path
    started: float
    popen: subprocess.Popen[bytes]
    plan: LaunchPlan
    cap: int
    max_lifetime_s: float | None
    written: int = 0
    dropped: int = 0
    exit_code: int | None = None
    ended: float | None = None
    #: Why it ended, when codingcode ended it ("killed by command_kill", "session ended", ...).
    ended_by: str = ""
    notice: str = ""
    read_offset: int = 0
    #: Every pid ever found below the launcher (signalled again when it ends).
    tree: set[int] = field(default_factory=set)
    tree_lock: threading.Lock = field(default_factory=threading.Lock)
    done: threading.Event = field(default_factory=threading.Event)
    changed: threading.Condition = field(default_factory=threading.Condition)

    @property
    def running(self) -> bool:
        return not self.done.is_set()

    def last_lines(self, count: int = 3) -> list[str]:
        """The last lines of its output so far (what the user sees of it in /bashes)."""
        try:
            with open(self.log_path, "rb") as f:
                size = f.seek(0, 2)
                f.seek(max(0, size - 4096))
                tail = f.read()
        except OSError:
            return []
        lines = tail.decode("utf-8", errors="replace").splitlines()
        return [line for line in lines if line.strip()][-count:]

    def status(self) -> str:
        if self.running:
            return f"running for {time.monotonic() - self.started:.0f}s (pid {self.pid})"
        how = f" ({self.ended_by})" if self.ended_by else ""
        return f"exited with code {self.exit_code}{how}"

    # -- the pump thread ---------------------------------------------------------------
    def pump(self, pipe_fd: int) -> None:
        """Copy output to the log (capped) until the process and its pipe are done."""
        deadline = self.started + self.max_lifetime_s if self.max_lifetime_s is not None else None
        exited_at: float | None = None
        try:
            with open(self.log_path, "ab", buffering=0) as log:
                while True:
                    ready, _, _ = select.select([pipe_fd], [], [], 0.2)
                    if ready:
                        try:
                            data = os.read(pipe_fd, CHUNK)
                        except OSError:
                            data = b""
                        if not data:
                            break
                        self._store(log, data)
                    if exited_at is None and self.popen.poll() is not None:
                        exited_at = time.monotonic()
                    # The main process is gone but something keeps the pipe: drain briefly,
                    # then end the group (a stray child must not keep the call alive).
                    if exited_at is not None and time.monotonic() - exited_at > 0.5:
                        break
                    if deadline is not None and time.monotonic() > deadline and not self.ended_by:
                        self.ended_by = f"killed: lived longer than {self.max_lifetime_s:g}s"
                        self.terminate()
        except OSError as exc:
            self.notice = f"the output log could not be written: {exc.strerror}"
        finally:
            os.close(pipe_fd)
            self.signal_tree(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=10)
            # Done only once nothing of the tree runs any more (a sandbox's pid namespace
            # ends with its init; its members are gone a moment later).
            wait_gone(self.tree, GONE_WAIT_S)
            self.exit_code = self.popen.returncode
            self.ended = time.monotonic()
            with contextlib.suppress(Exception):
                extra = self.plan.run_finish()
                if extra:
                    self.notice = "\n".join(filter(None, [self.notice, extra]))
            self.done.set()
            with self.changed:
                self.changed.notify_all()

    def _store(self, log: object, data: bytes) -> None:
        room = self.cap - self.written
        if room > 0:
            piece = data[:room]
            log.write(piece)  # type: ignore[attr-defined]
            self.written += len(piece)
            if len(data) > room:
                self.dropped += len(data) - room
                marker = (
                    f"\n[codingcode: the output cap of {self.cap:,} bytes was reached; "
                    "further output is counted, not kept]\n"
                ).encode()
                log.write(marker)  # type: ignore[attr-defined]
                self.written += len(marker)
        else:
            self.dropped += len(data)
        with self.changed:
            self.changed.notify_all()

    # -- ending it ----------------------------------------------------------------------
    def signal_tree(self, sig: int) -> None:
        """Signal the launcher and every process found below it, now or before."""
        with self.tree_lock:
            reaped = self.popen.returncode is not None
            self.tree = signal_tree(self.pid, sig, self.tree, reaped=reaped)

    def terminate(self) -> None:
        self.signal_tree(signal.SIGTERM)

    def kill(self, reason: str, grace_s: float = KILL_GRACE_S) -> None:
        """TERM the whole tree, KILL it after ``grace_s``; returns once it is gone."""
        if not self.running:
            return
        self.ended_by = reason
        self.terminate()
        if not self.done.wait(grace_s):
            self.signal_tree(signal.SIGKILL)
            self.done.wait(15 + GONE_WAIT_S)

    # -- reading ------------------------------------------------------------------------
    def read(self, since: int | None, limit: int = SLICE_BYTES) -> tuple[str, int, int]:
        """Text from ``since`` (default: where the last read ended): (text, start, end)."""
        total = self.written
        start = max(0, min(self.read_offset if since is None else since, total))
        with open(self.log_path, "rb") as f:
            f.seek(start)
            data = f.read(min(limit, total - start))
        if len(data) == limit:
            data = complete_utf8(data)  # the cut character comes with the next read
        end = start + len(data)
        self.read_offset = max(self.read_offset, end)
        return data.decode("utf-8", errors="replace"), start, end


def complete_utf8(data: bytes) -> bytes:
    """``data`` without a UTF-8 sequence cut short at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # ASCII or a lead byte
            need = 1 if byte < 0x80 else 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data


_LIVE: weakref.WeakSet[BackgroundProcesses] = weakref.WeakSet()


@atexit.register
def _kill_everything() -> None:  # pragma: no cover - runs at interpreter exit
    for registry in list(_LIVE):
        registry.close("codingcode exited", grace_s=0.5)


class BackgroundProcesses:
    """The background processes of one session."""

    def __init__(self, log_dir: Path, limits: BackgroundLimits | None = None) -> None:
        self.log_dir = log_dir
        self.limits = limits or BackgroundLimits()
        self.processes: dict[str, BackgroundProcess] = {}
        self._next = 1
        self._lock = threading.Lock()
        _LIVE.add(self)

    def running(self) -> list[BackgroundProcess]:
        return [p for p in self.processes.values() if p.running]

    def start(
        self,
        command: str,
        *,
        cwd: Path,
        launcher: Launcher | None,
        env: dict[str, str],
        capabilities: CapabilitySet | None = None,
    ) -> BackgroundProcess:
        with self._lock:
            live = self.running()
            if len(live) >= self.limits.max_processes:
                raise InvalidArgumentsError(
                    f"{len(live)} background processes are running, the most a session may "
                    f"have (background.maxProcesses = {self.limits.max_processes}); end one with "
                    f"{KILL_TOOL} first ({', '.join(p.id for p in live)})."
                )
            pid_id = f"bg{self._next}"
            self._next += 1
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise ToolFailureError(
                f"cannot create {self.log_dir} for the output of background commands: "
                f"{exc.strerror}."
            ) from None
        log_path = self.log_dir / f"{pid_id}.log"
        log_path.write_bytes(b"")
        plan = plan_launch(
            launcher, ["bash", "-c", command], cwd=cwd, env=env, capabilities=capabilities
        )
        read_fd, write_fd = os.pipe()
        try:
            popen = subprocess.Popen(
                plan.argv,
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                cwd=cwd,
                env=plan.env,
                start_new_session=True,
                pass_fds=plan.pass_fds,
            )
        except OSError as exc:
            os.close(read_fd)
            raise ToolFailureError(f"cannot start the command: {exc.strerror}.") from None
        finally:
            os.close(write_fd)
            plan.close_fds()
        proc = BackgroundProcess(
            id=pid_id,
            command=command,
            pid=popen.pid,
            log_path=log_path,
            started=time.monotonic(),
            popen=popen,
            plan=plan,
            cap=self.limits.max_output_bytes,
            max_lifetime_s=self.limits.max_lifetime_s,
        )
        self.processes[pid_id] = proc
        threading.Thread(
            target=proc.pump, args=(read_fd,), name=f"codingcode-{pid_id}", daemon=True
        ).start()
        return proc

    def reminder(self) -> str:
        """One line per running process, for the model's context ("" when none runs)."""
        live = self.running()
        if not live:
            return ""
        lines = [f"Background commands running in this session (read with {OUTPUT_TOOL}, stop "
                 f"with {KILL_TOOL}):"]  # fmt: skip
        lines += [f"- {p.id}: {p.command[:120]} ({p.status()})" for p in live]
        return "\n".join(lines)

    def listing(self) -> str:
        """Every background process of the session, for the user (/bashes)."""
        if not self.processes:
            return "No background commands in this session."
        lines = []
        for p in self.processes.values():
            lines.append(f"{p.id}  {p.status()}  {p.command[:100]}")
            lines += [f"    │ {line[:160]}" for line in p.last_lines()]
        return "\n".join(lines)

    def get(self, pid_id: str) -> BackgroundProcess:
        proc = self.processes.get(pid_id.strip())
        if proc is None:
            known = ", ".join(self.processes) or "none"
            raise NotFoundError(
                f"no background process {pid_id!r} in this session (this session's: {known})."
            )
        return proc

    def close(
        self, reason: str = "the session ended", grace_s: float = SESSION_END_GRACE_S
    ) -> list[str]:
        """End every process still running; returns their ids."""
        live = self.running()
        threads = [
            threading.Thread(target=p.kill, args=(reason, grace_s), daemon=True) for p in live
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(grace_s + 20)
        _LIVE.discard(self)
        return [p.id for p in live]


# -- the session's registry -----------------------------------------------------------
def registry_for(ctx: ToolExecCtx) -> BackgroundProcesses:
    """The background processes of the call's session (made on first use)."""
    if ctx.state.background is None:
        workspace = ctx.session_workspace()
        limits = background_limits(workspace)
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", ctx.session_id)[:100] or "session"
        ctx.state.background = BackgroundProcesses(
            workspace.state_dir / "background" / f"{safe}-{os.getpid()}", limits
        )
    registry: BackgroundProcesses = ctx.state.background
    return registry


class BackgroundSettings(BaseModel):
    """The ``background`` section of the settings files."""

    model_config = ConfigDict(defer_build=True, extra="forbid")
    maxProcesses: int = Field(default=MAX_PROCESSES, ge=1, le=64)
    maxOutputMB: float = Field(default=MAX_OUTPUT_MB, gt=0)
    maxLifetimeMinutes: float | None = Field(default=None, gt=0)


def background_limits(workspace: Workspace) -> BackgroundLimits:
    config = workspace.section("background", BackgroundSettings)
    return BackgroundLimits(
        max_processes=config.maxProcesses,
        max_output_bytes=int(config.maxOutputMB * 1024 * 1024),
        max_lifetime_s=config.maxLifetimeMinutes * 60 if config.maxLifetimeMinutes else None,
    )


# -- starting (from execute_command) --------------------------------------------------
async def start_in_background(command: str, cwd: Path, ctx: ToolExecCtx) -> str:
    registry = registry_for(ctx)
    proc = registry.start(
        command,
        cwd=cwd,
        launcher=ctx.launcher,
        env=dict(os.environ),
        capabilities=ctx.capabilities,
    )
    ctx.state.offered.update({OUTPUT_TOOL, KILL_TOOL})

    def first_output() -> None:
        deadline = time.monotonic() + GRACE_S
        with proc.changed:
            while proc.running and proc.written == 0 and time.monotonic() < deadline:
                proc.changed.wait(max(0.0, deadline - time.monotonic()))

    await anyio.to_thread.run_sync(first_output, abandon_on_cancel=True)
    text, _start, end = proc.read(None, limit=4000)
    lines = [
        f"Started in the background as {proc.id} (pid {proc.pid}); {proc.status()}.",
        f"Read its output with {OUTPUT_TOOL}(id={proc.id!r}); stop it with "
        f"{KILL_TOOL}(id={proc.id!r}). It is killed when the session ends.",
        f"Full output: {proc.log_path}",
    ]
    if text:
        lines.append(f"--- output so far (bytes 0-{end}) ---\n{text.rstrip()}")
    return "\n".join(lines)


# -- the two tools ----------------------------------------------------------------------
class CommandOutputArgs(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")
    id: str = Field(min_length=1, description="The background process id, e.g. bg1.")
    wait_seconds: float = Field(
        default=0,
        ge=0,
        le=MAX_WAIT_S,
        description=f"Wait up to this long for new output or the exit (at most {MAX_WAIT_S}).",
    )
    since: int | None = Field(
        default=None,
        ge=0,
        description="Byte offset to read from (default: where the last read ended).",
    )


class CommandKillArgs(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")
    id: str = Field(min_length=1, description="The background process id, e.g. bg1.")


async def command_output(args: CommandOutputArgs, ctx: ToolExecCtx) -> str:
    proc = registry_for(ctx).get(args.id)
    start = proc.read_offset if args.since is None else args.since
    if args.wait_seconds > 0:

        def wait() -> None:
            deadline = time.monotonic() + args.wait_seconds
            with proc.changed:
                while proc.running and proc.written <= start:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return
                    proc.changed.wait(min(left, 0.5))

        await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)
    text, begin, end = proc.read(args.since)
    parts = [f"{proc.id}: {proc.status()}. Command: {proc.command[:200]}"]
    if proc.notice:
        parts.append(proc.notice)
    if text:
        parts.append(f"--- output, bytes {begin}-{end} of {proc.written} ---\n{text.rstrip()}")
    else:
        parts.append(f"(no new output; {proc.written} bytes so far)")
    if end < proc.written:
        parts.append(f"More output follows: call {OUTPUT_TOOL} again (or since={end}).")
    if proc.dropped:
        parts.append(
            f"{proc.dropped:,} bytes past the output cap were not kept (background.maxOutputMB)."
        )
    parts.append(f"Full output: {proc.log_path}")
    return "\n".join(parts)


async def command_kill(args: CommandKillArgs, ctx: ToolExecCtx) -> str:
    proc = registry_for(ctx).get(args.id)
    if not proc.running:
        return f"{proc.id} had already ended: {proc.status()}."
    await anyio.to_thread.run_sync(proc.kill, f"killed by {KILL_TOOL}")
    if not proc.done.is_set():
        raise ToolFailureError(f"{proc.id} (pid {proc.pid}) did not end after SIGKILL.")
    return f"{proc.id} ended: {proc.status()}. Its output stays in {proc.log_path}."


def background_tools() -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name=OUTPUT_TOOL,
            description=(
                "Read the output of a command started with execute_command(run_in_background="
                "true): what it printed since the last read (or from byte offset `since`), "
                "whether it still runs, its exit code when done. `wait_seconds` waits for new "
                f"output or the exit (at most {MAX_WAIT_S})."
            ),
            short_description="Read a background command's output and status",
            parameters=CommandOutputArgs,
            execute=command_output,
            deferred=True,
            annotations=ToolAnnotations(read_only=True),
            effects=frozenset(),
            origin=BUILTIN,
        ),
        ToolDefinition(
            name=KILL_TOOL,
            description=(
                "Stop a command started with execute_command(run_in_background=true): the whole "
                f"process tree gets SIGTERM, then SIGKILL after {KILL_GRACE_S:g}s."
            ),
            short_description="Stop a background command",
            parameters=CommandKillArgs,
            execute=command_kill,
            deferred=True,
            annotations=ToolAnnotations(destructive=True, idempotent=True),
            effects=frozenset({"runs"}),
            origin=BUILTIN,
        ),
    ]
