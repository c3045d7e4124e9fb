"""The one place codingcode starts a child process for a tool.

Every command runs in its own session and process group with stdin closed; on exit,
timeout or cancellation the whole group is killed, so nothing the call started outlives
it. Output is captured with a cap that keeps the head and the tail. The sandbox plugs in
through :class:`Launcher`: it rewrites the command line (e.g. to run under bubblewrap)
and the rest of the launch stays the same.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol, cast

import anyio
from anyio.abc import ByteReceiveStream

from codingcode.cancel import CancelSignal
from codingcode.capabilities import CapabilitySet
from codingcode.process_tree import signal_tree, wait_gone

#: Bytes kept per stream: the first half and the last half of this budget.
OUTPUT_CAP_BYTES = 32_000
#: The most of one stream saved to a file when it is longer than the cap: 64 MB (past it the
#: file keeps the first 64 MB, and the tail kept in memory is still shown).
FULL_OUTPUT_CAP_BYTES = 64 * 1024 * 1024
#: After the main process ends, how long stray holders of its pipes may keep them.
_DRAIN_SECONDS = 0.5


@dataclass(frozen=True)
class LaunchPlan:
    """What actually runs: the final argv and environment, and a note for the output."""

    argv: list[str]
    env: dict[str, str]
    notice: str = ""
    #: File descriptors the child inherits (e.g. a seccomp filter for bwrap). The plan
    #: owns them: ``run_command`` closes them once the child has started (or failed to).
    pass_fds: tuple[int, ...] = ()
    #: Called once the process tree is gone (whatever ended it); returns a note to add to
    #: the output, or "". The sandbox uses it to undo what it could not forbid up front.
    finish: Callable[[], str] | None = None
    #: What the sandbox masked for this command: (path, what masked it and how to allow
    #: it). The tool uses it to explain a failure that a mask caused.
    masked: tuple[tuple[str, str], ...] = ()

    def run_finish(self) -> str:
        return self.finish() if self.finish is not None else ""

    def close_fds(self) -> None:
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)


class Launcher(Protocol):
    """Turns a command into what actually runs (the sandbox implements this)."""

    def plan(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> LaunchPlan: ...


class CapabilityLauncher(Protocol):
    """A launcher that builds each call's view from the capabilities its approval granted
    (the sandbox). It sets ``accepts_capabilities = True``; ``run_command`` then passes them."""

    accepts_capabilities: bool

    def plan(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        capabilities: CapabilitySet | None = None,
    ) -> LaunchPlan: ...


class DirectLauncher:
    """Runs the command as it is, with no containment."""

    def plan(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> LaunchPlan:
        return LaunchPlan(list(argv), dict(env))


class CappedBuffer:
    """Keeps the first and the last ``cap // 2`` bytes of a stream and counts the rest.

    With ``spool``, a stream longer than the cap is also written whole to that file (from its
    first byte, up to ``spool_cap`` bytes; past that the file keeps the first ``spool_cap``
    bytes and :attr:`spool_complete` is False), so nothing the model may need is lost.
    """

    def __init__(
        self,
        cap: int = OUTPUT_CAP_BYTES,
        *,
        spool: Path | None = None,
        spool_cap: int = FULL_OUTPUT_CAP_BYTES,
    ) -> None:
        self._half = cap // 2
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        #: Lines of the whole stream (newlines, plus a last line without one).
        self.newlines = 0
        self._last = b""
        self.spool = spool
        self.spool_cap = spool_cap
        self.spooled = 0
        self._file: BinaryIO | None = None
        #: Why the spool file could not be written (None: it was, or was not needed).
        self.spool_error: str | None = None

    @property
    def lines(self) -> int:
        return self.newlines + (1 if self._last not in (b"", b"\n") else 0)

    @property
    def spool_complete(self) -> bool:
        return self.spooled == self.total

    def _spool(self, data: bytes) -> None:
        """Save ``data`` (the bytes just fed) to the spool file, opening it when the stream
        first outgrows the cap (with everything before, all still in memory then)."""
        if self.spool is None or self.spool_error is not None:
            return
        if self._file is None:
            if self.total <= 2 * self._half:
                return  # within the cap: nothing is cut, nothing to save
            try:
                self.spool.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.spool, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                self._file = os.fdopen(fd, "wb")
                before = bytes(self._head + self._tail)
                self._file.write(before)
                self.spooled = len(before)
            except OSError as exc:
                self.spool_error = exc.strerror or str(exc)
                return
        room = self.spool_cap - self.spooled
        if room > 0:
            try:
                self._file.write(data[:room])
            except OSError as exc:
                self.spool_error = exc.strerror or str(exc)
                return
            self.spooled += min(room, len(data))

    def close(self) -> None:
        """Close the spool file (its data written to the OS)."""
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                self.spool_error = exc.strerror or str(exc)
            self._file = None

    @property
    def spool_path(self) -> Path | None:
        """The file holding the whole stream (None: not cut, or not saved)."""
        if self.spool is None or self.spool_error is not None or not self.spooled:
            return None
        return self.spool

    def head_bytes(self) -> bytes:
        return bytes(self._head)

    def tail_bytes(self) -> bytes:
        return bytes(self._tail)

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self.newlines += data.count(b"\n")
        self._last = data[-1:]
        self.total += len(data)
        self._spool(data)  # before the head and tail change: they hold what came before
        room = self._half - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            if len(self._tail) > self._half:
                del self._tail[: len(self._tail) - self._half]

    @property
    def omitted(self) -> int:
        return self.total - len(self._head) - len(self._tail)

    def text(self) -> str:
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        if self.omitted:
            return f"{head}\n[... {self.omitted} bytes omitted ...]\n{tail}"
        return head + tail


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None
    stdout: CappedBuffer
    stderr: CappedBuffer
    timed_out: bool
    cancelled: bool
    duration_s: float
    notice: str = ""
    #: The paths the sandbox masked for this command (see ``LaunchPlan.masked``).
    masked: tuple[tuple[str, str], ...] = ()


def plan_launch(
    launcher: Launcher | None,
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    capabilities: CapabilitySet | None = None,
) -> LaunchPlan:
    """What runs for ``argv``: the launcher's plan, built from the call's capabilities when
    the launcher accepts them (the sandbox); any other launcher ignores them."""
    launcher = launcher or DirectLauncher()
    if capabilities is not None and getattr(launcher, "accepts_capabilities", False):
        return cast(CapabilityLauncher, launcher).plan(
            argv, cwd=cwd, env=env, capabilities=capabilities
        )
    return launcher.plan(argv, cwd=cwd, env=env)


async def run_command(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    cancel: CancelSignal | None = None,
    launcher: Launcher | None = None,
    output_cap: int = OUTPUT_CAP_BYTES,
    capabilities: CapabilitySet | None = None,
    output_files: tuple[Path, Path] | None = None,
    on_output: Callable[[bytes], None] | None = None,
) -> CommandResult:
    """Run ``argv`` to completion, timeout or cancellation; never leave a process behind.

    ``capabilities``: what this call's approval granted; a launcher that accepts them (the
    sandbox) builds the call's view from them, any other ignores them. ``output_files``:
    where stdout and stderr are saved whole when longer than ``output_cap``. ``on_output``
    sees every chunk of either stream as it arrives (once with ``b""`` when it starts).
    """
    environ = dict(os.environ if env is None else env)
    plan = plan_launch(launcher, argv, cwd=cwd, env=environ, capabilities=capabilities)
    result = await _run_plan(plan, cwd, timeout_s, cancel, output_cap, output_files, on_output)
    if _mask_target_vanished(plan, result):  # the command never started: planned again, once
        plan = plan_launch(launcher, argv, cwd=cwd, env=environ, capabilities=capabilities)
        result = await _run_plan(plan, cwd, timeout_s, cancel, output_cap, output_files, on_output)
    return result


#: Bubblewrap's words when a mount's target is gone (a masked file removed between the
#: plan and the sandbox's set-up): it stops before running anything.
_VANISHED = re.compile(rb"\Abwrap: Can't (?:create file|mkdir|find source path) at (/[^:\n]*)")


def _mask_target_vanished(plan: LaunchPlan, result: CommandResult) -> bool:
    """The sandbox could not be set up because a path it was to mask is gone: bubblewrap's
    own message, naming one of this plan's masked paths, which no longer exists (the
    command inside cannot remove one: each is a mount point there)."""
    if result.exit_code != 1 or result.stdout.total or result.cancelled:
        return False
    found = _VANISHED.match(result.stderr.head_bytes())
    if found is None:
        return False
    path = os.fsdecode(found.group(1))
    return any(path == p for p, _ in plan.masked) and not os.path.lexists(path)


async def _run_plan(
    plan: LaunchPlan,
    cwd: Path,
    timeout_s: float,
    cancel: CancelSignal | None,
    output_cap: int,
    output_files: tuple[Path, Path] | None,
    on_output: Callable[[bytes], None] | None,
) -> CommandResult:
    spools = output_files or (None, None)
    out = CappedBuffer(output_cap, spool=spools[0])
    err = CappedBuffer(output_cap, spool=spools[1])
    started = time.monotonic()
    try:
        # Shielded: a cancellation landing inside the spawn would lose the handle of a
        # process that did start; delivered right after, it reaches the kill below.
        with anyio.CancelScope(shield=True):
            proc = await anyio.open_process(
                plan.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=plan.env,
                start_new_session=True,
                pass_fds=plan.pass_fds,
            )
    finally:
        plan.close_fds()
    timed_out = cancelled = False
    tree: set[int] = set()
    try:
        async with anyio.create_task_group() as pumps:
            assert proc.stdout is not None and proc.stderr is not None
            drained = [anyio.Event(), anyio.Event()]
            if on_output is not None:
                on_output(b"")
            pumps.start_soon(_pump, proc.stdout, out, drained[0], on_output)
            pumps.start_soon(_pump, proc.stderr, err, drained[1], on_output)
            try:
                timed_out, cancelled = await _wait(proc, timeout_s, cancel)
            finally:
                tree = kill_tree(proc)
            # Pipes close once every holder is dead; a holder that escaped the group
            # (the sandbox's pid namespace catches those) must not hang the call.
            with anyio.move_on_after(_DRAIN_SECONDS):
                for event in drained:
                    await event.wait()
            pumps.cancel_scope.cancel()
    finally:
        tree |= kill_tree(proc, tree)
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await proc.aclose()
            if tree:  # returned once nothing of it runs (a sandbox's namespace is gone)
                await anyio.to_thread.run_sync(wait_gone, tree, 5.0)
        out.close()
        err.close()
        after = plan.run_finish()
    return CommandResult(
        exit_code=proc.returncode,
        stdout=out,
        stderr=err,
        timed_out=timed_out,
        cancelled=cancelled,
        duration_s=time.monotonic() - started,
        notice="\n".join(filter(None, [plan.notice, after])),
        masked=plan.masked,
    )


async def _wait(
    proc: anyio.abc.Process, timeout_s: float, cancel: CancelSignal | None
) -> tuple[bool, bool]:
    """Wait for exit; return (timed_out, cancelled)."""
    cancelled = False
    with anyio.move_on_after(timeout_s) as deadline:
        if cancel is None:
            await proc.wait()
        else:
            async with anyio.create_task_group() as race:

                async def on_exit() -> None:
                    await proc.wait()
                    race.cancel_scope.cancel()

                async def on_cancel() -> None:
                    nonlocal cancelled
                    await cancel.wait()
                    cancelled = True
                    race.cancel_scope.cancel()

                race.start_soon(on_exit)
                race.start_soon(on_cancel)
    return deadline.cancelled_caught, cancelled


async def _pump(
    stream: ByteReceiveStream,
    sink: CappedBuffer,
    drained: anyio.Event,
    on_output: Callable[[bytes], None] | None = None,
) -> None:
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        async for chunk in stream:
            sink.feed(chunk)
            if on_output is not None:
                on_output(chunk)
    drained.set()


def kill_tree(proc: anyio.abc.Process, known: set[int] | None = None) -> set[int]:
    """SIGKILL the command's group and, while it runs, every process below it (found with
    the launcher stopped: process_tree.py); returns the pids found, for :func:`wait_gone`.

    The group alone is not enough: ended in its first milliseconds, a sandbox's namespace
    init is in a session of its own and not yet armed to die with its parent."""
    return signal_tree(proc.pid, signal.SIGKILL, known or set(), reaped=proc.returncode is not None)


def kill_process_group(pgid: int) -> None:
    """SIGKILL every process of the group (ours is the child's pid: it leads a new session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
