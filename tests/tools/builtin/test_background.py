"""Background commands: start, read, kill; nothing outlives its session."""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

import anyio
import pytest

from codingcode.errors import InvalidArgumentsError, NotFoundError
from codingcode.tools import ToolExecCtx, ToolService
from codingcode.tools.builtin.background import (
    BackgroundLimits,
    BackgroundProcesses,
    complete_utf8,
)

pytestmark = pytest.mark.anyio


def unique_token(seconds: int) -> str:
    """A sleep length no other test run on this machine uses (runs may overlap)."""
    import secrets

    return f"{seconds}.{secrets.randbelow(10**9):09d}"


def command_lines(token: str) -> list[bytes]:
    """The argv (NUL-separated) of every process whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if token.encode() in cmdline:  # a zombie's is empty: it no longer runs
                found.append(cmdline)
    return found


def alive(token: str) -> bool:
    """Whether anything with ``token`` in its command line runs: the sandbox's launcher,
    the shell or the command."""
    return bool(command_lines(token))


def sleeping(token: str) -> bool:
    """Whether the command ``sleep <token>`` itself runs (not a shell that will start it)."""
    return f"sleep\0{token}\0".encode() in command_lines(token)


async def start(service: ToolService, ctx: ToolExecCtx, command: str) -> str:
    return await service.call(
        "execute_command", {"command": command, "run_in_background": True}, ctx
    )


async def test_start_read_and_kill(service: ToolService, ctx: ToolExecCtx) -> None:
    token = unique_token(313)
    started = await start(service, ctx, f"echo hello; exec sleep {token}")
    assert "bg1" in started and "hello" in started
    assert alive(token)
    out = await service.call("command_output", {"id": "bg1"}, ctx)
    assert "running" in out
    killed = await service.call("command_kill", {"id": "bg1"}, ctx)
    assert "ended" in killed
    assert not alive(token)
    again = await service.call("command_output", {"id": "bg1"}, ctx)
    assert "exited" in again and "killed by command_kill" in again


async def test_output_is_read_in_slices_and_nothing_is_lost(
    service: ToolService, ctx: ToolExecCtx
) -> None:
    import re

    outputs = [await start(service, ctx, "seq 1 20000")]  # its preview is the first read
    for _ in range(100):
        out = await service.call("command_output", {"id": "bg1", "wait_seconds": 5}, ctx)
        outputs.append(out)
        if "More output follows" not in out and "exited" in out:
            break
    spans = [(int(a), int(b)) for o in outputs for a, b in re.findall(r"bytes (\d+)-(\d+)", o)]
    # The reads cover the output contiguously, from 0 to the end, each slice bounded.
    assert spans[0][0] == 0
    assert all(b0 == a1 for (_, b0), (a1, _) in itertools.pairwise(spans))
    assert all(b - a <= 16_000 for a, b in spans)
    log = ctx.state.background.get("bg1").log_path.read_text()
    assert spans[-1][1] == len(log.encode())
    assert log.split() == [str(i) for i in range(1, 20001)]
    # `since` re-reads from an offset.
    again = await service.call("command_output", {"id": "bg1", "since": 0}, ctx)
    assert "bytes 0-16000" in again


async def test_wait_seconds_returns_at_exit(service: ToolService, ctx: ToolExecCtx) -> None:
    await start(service, ctx, "sleep 1.5; echo done; exit 3")
    t = time.monotonic()
    out = await service.call("command_output", {"id": "bg1", "wait_seconds": 30}, ctx)
    assert time.monotonic() - t < 20
    if "exited" not in out:  # woke on the output; the exit follows at once
        out = await service.call("command_output", {"id": "bg1", "wait_seconds": 10}, ctx)
    assert "exited with code 3" in out


async def test_the_output_cap_keeps_memory_and_disk_bounded(project: Path, tmp_path: Path) -> None:
    registry = BackgroundProcesses(tmp_path / "logs", BackgroundLimits(max_output_bytes=100_000))
    proc = registry.start(
        "head -c 20000000 /dev/zero", cwd=project, launcher=None, env=dict(os.environ)
    )
    assert proc.done.wait(60)
    assert proc.log_path.stat().st_size < 101_000
    assert proc.dropped == 20_000_000 - 100_000
    assert proc.exit_code == 0


async def test_a_process_that_ignores_term_is_killed(project: Path, tmp_path: Path) -> None:
    token = unique_token(271)
    registry = BackgroundProcesses(tmp_path / "logs")
    proc = registry.start(
        f"trap '' TERM; sleep {token} & wait; wait",
        cwd=project,
        launcher=None,
        env=dict(os.environ),
    )
    deadline = time.monotonic() + 10
    while not sleeping(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleeping(token)
    proc.kill("test", grace_s=0.5)
    assert not proc.running
    assert not alive(token)


async def test_unknown_ids_and_the_limit_are_clear(
    service: ToolService, project: Path, tmp_path: Path
) -> None:
    ctx = ToolExecCtx(project_path=project, session_id="one")
    other = ToolExecCtx(project_path=project, session_id="two")
    await start(service, ctx, "sleep 30")
    with pytest.raises(NotFoundError, match="no background process 'bg1'"):
        await service.call("command_output", {"id": "bg1"}, other)  # another session's
    with pytest.raises(NotFoundError, match="this session's: bg1"):
        await service.call("command_kill", {"id": "bg9"}, ctx)
    registry = ctx.state.background
    registry.limits.max_processes = 2
    await start(service, ctx, "sleep 30")
    with pytest.raises(InvalidArgumentsError, match="background.maxProcesses"):
        await start(service, ctx, "sleep 30")
    assert sorted(registry.close()) == ["bg1", "bg2"]
    assert not registry.running()


async def test_closing_the_session_ends_every_process(project: Path, tmp_path: Path) -> None:
    tokens = [unique_token(101), unique_token(102), unique_token(103)]
    registry = BackgroundProcesses(tmp_path / "logs")
    for token in tokens:
        registry.start(f"exec sleep {token}", cwd=project, launcher=None, env=dict(os.environ))
    deadline = time.monotonic() + 10
    while not all(map(sleeping, tokens)) and time.monotonic() < deadline:
        time.sleep(0.05)
    t = time.monotonic()
    assert sorted(registry.close()) == ["bg1", "bg2", "bg3"]
    assert time.monotonic() - t < 10
    assert not any(map(alive, tokens))


def bubblewrap_launcher(project: Path) -> object:
    from codingcode.sandbox.policy import BackendChoice, SandboxPolicy
    from codingcode.sandbox.service import SandboxService

    service = SandboxService.from_policy(
        SandboxPolicy(project, backend=BackendChoice("bubblewrap"))
    )
    try:
        service.backend()
    except Exception as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"bubblewrap unavailable: {exc}")
    return service


async def test_a_double_fork_cannot_escape_the_sandbox(project: Path, tmp_path: Path) -> None:
    launcher = bubblewrap_launcher(project)
    token = unique_token(577)
    registry = BackgroundProcesses(tmp_path / "logs")
    registry.start(
        f"(setsid sleep {token} &); sleep 300",
        cwd=project,
        launcher=launcher,  # type: ignore[arg-type]
        env=dict(os.environ),
    )
    deadline = time.monotonic() + 15
    while not sleeping(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleeping(token)  # the double-forked sleep runs, in its own session
    registry.close()
    # close() returns once the tree is gone: nothing of it runs, not even for a moment.
    assert command_lines(token) == []


async def test_a_sandbox_ended_while_it_starts_leaves_nothing(
    project: Path, tmp_path: Path
) -> None:
    """Ended in its first milliseconds, bubblewrap's namespace init is not yet armed to die
    with its parent and ignores SIGTERM: it must still not outlive the command."""
    launcher = bubblewrap_launcher(project)
    registry = BackgroundProcesses(tmp_path / "logs", BackgroundLimits(max_processes=64))
    tokens = []
    for _ in range(10):
        token = unique_token(578)
        tokens.append(token)
        registry.start(
            f"(setsid sleep {token} &); sleep 300",
            cwd=project,
            launcher=launcher,  # type: ignore[arg-type]
            env=dict(os.environ),
        )
        registry.close()
        assert command_lines(token) == [], f"survived: {command_lines(token)}"
    time.sleep(1)  # nothing comes back later either
    assert [t for t in tokens if alive(t)] == []


async def test_the_tools_are_offered_once_a_background_process_exists(
    service: ToolService, project: Path
) -> None:
    from codingcode.tools.resolver import create_session_tool_resolver

    svc = ToolService.default()
    resolver = create_session_tool_resolver(svc)
    ctx = ToolExecCtx(project_path=project)
    resolver.loaded = ctx.state.offered
    assert "command_output" not in resolver.names()
    assert "command_output" in [d.name for d in resolver.deferred()]
    await start(svc, ctx, "sleep 30")
    assert {"command_output", "command_kill"} <= set(resolver.names())
    assert "command_output" not in [d.name for d in resolver.deferred()]
    ctx.state.background.close()


def test_utf8_cut_at_a_slice_end_waits_for_the_next_read() -> None:
    text = "añ€😀".encode()
    for cut in range(len(text) + 1):
        kept = complete_utf8(text[:cut])
        assert text.startswith(kept)
        kept.decode("utf-8")  # never half a character
        assert cut - len(kept) < 4


async def test_cancelling_a_wait_returns_promptly(service: ToolService, ctx: ToolExecCtx) -> None:
    await start(service, ctx, "sleep 60")
    t = time.monotonic()
    with anyio.move_on_after(0.5):
        await service.call("command_output", {"id": "bg1", "wait_seconds": 60}, ctx)
    assert time.monotonic() - t < 5
    ctx.state.background.close()
