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
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

import anyio
from anyio.abc import ByteReceiveStream

from codingcode.cancel import CancelSignal
from codingcode.capabilities import CapabilitySet

#: Bytes kept per stream: the first half and the last half of this budget.
OUTPUT_CAP_BYTES = 32_000
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
    """Keeps the first and the last ``cap // 2`` bytes of a stream and counts the rest."""

    def __init__(self, cap: int = OUTPUT_CAP_BYTES) -> None:
        self._half = cap // 2
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
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
) -> CommandResult:
    """Run ``argv`` to completion, timeout or cancellation; never leave a process behind.

    ``capabilities``: what this call's approval granted; a launcher that accepts them (the
    sandbox) builds the call's view from them, any other ignores them.
    """
    plan = plan_launch(
        launcher, argv, cwd=cwd, env=dict(os.environ if env is None else env),
        capabilities=capabilities,
    )  # fmt: skip
    out, err = CappedBuffer(output_cap), CappedBuffer(output_cap)
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
    try:
        async with anyio.create_task_group() as pumps:
            assert proc.stdout is not None and proc.stderr is not None
            drained = [anyio.Event(), anyio.Event()]
            pumps.start_soon(_pump, proc.stdout, out, drained[0])
            pumps.start_soon(_pump, proc.stderr, err, drained[1])
            try:
                timed_out, cancelled = await _wait(proc, timeout_s, cancel)
            finally:
                kill_process_group(proc.pid)
            # Pipes close once every holder is dead; a holder that escaped the group
            # (the sandbox's pid namespace catches those) must not hang the call.
            with anyio.move_on_after(_DRAIN_SECONDS):
                for event in drained:
                    await event.wait()
            pumps.cancel_scope.cancel()
    finally:
        kill_process_group(proc.pid)
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await proc.aclose()
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


async def _pump(stream: ByteReceiveStream, sink: CappedBuffer, drained: anyio.Event) -> None:
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        async for chunk in stream:
            sink.feed(chunk)
    drained.set()


def kill_process_group(pgid: int) -> None:
    """SIGKILL every process of the group (ours is the child's pid: it leads a new session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
