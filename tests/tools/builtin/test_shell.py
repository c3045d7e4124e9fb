from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from codingcode.errors import AgentError, ErrorKind
from codingcode.process import OUTPUT_CAP_BYTES
from codingcode.tools import CancelSignal, ToolExecCtx, ToolService

pytestmark = pytest.mark.anyio


async def run(service: ToolService, ctx: ToolExecCtx, command: str, **extra: object) -> str:
    return await service.call("execute_command", {"command": command, **extra}, ctx)


async def test_exit_code_stdout_stderr(service: ToolService, ctx: ToolExecCtx) -> None:
    out = await run(service, ctx, "echo out; echo err >&2; exit 3")
    assert out == "Exit code: 3\n--- stdout ---\nout\n--- stderr ---\nerr"
    assert await run(service, ctx, "true") == "Exit code: 0\n(no output)"


async def test_runs_in_the_project_or_cwd(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    (project / "sub").mkdir()
    assert str(project) in await run(service, ctx, "pwd")
    assert str(project / "sub") in await run(service, ctx, "pwd", cwd="sub")
    with pytest.raises(AgentError, match="not an existing directory"):
        await run(service, ctx, "pwd", cwd="missing")


async def test_stdin_is_closed(service: ToolService, ctx: ToolExecCtx) -> None:
    out = await run(service, ctx, "cat; echo done", timeout_ms=5000)
    assert out.endswith("done")


async def test_timeout_kills_the_whole_tree(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    marker = project / "late"
    started = time.monotonic()
    with pytest.raises(AgentError) as info:
        await run(service, ctx, f"(sleep 1.5; touch {marker}) & sleep 30", timeout_ms=300)
    assert info.value.kind is ErrorKind.TIMEOUT
    assert "Timed out" in info.value.message
    assert time.monotonic() - started < 5
    await anyio.sleep(2)
    assert not marker.exists()


async def test_cancel_signal_kills_the_command(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    ctx.signal = CancelSignal()
    marker = project / "late"

    async def cancel_soon() -> None:
        await anyio.sleep(0.3)
        assert ctx.signal is not None
        ctx.signal.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(cancel_soon)
        with pytest.raises(AgentError) as info:
            await run(service, ctx, f"sleep 1.5; touch {marker}")
    assert info.value.kind is ErrorKind.CANCELLED
    await anyio.sleep(1.6)
    assert not marker.exists()


async def test_task_cancellation_kills_the_process_group(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    pidfile = project / "pid"
    with anyio.move_on_after(0.5):
        await run(service, ctx, f"echo $$ > {pidfile}; sleep 30")
    pid = int(pidfile.read_text())
    await anyio.sleep(0.1)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_output_is_capped_keeping_head_and_tail(
    service: ToolService, ctx: ToolExecCtx
) -> None:
    out = await run(
        service, ctx, "echo FIRST; head -c 200000 /dev/zero | tr '\\0' x; echo; echo LAST"
    )
    assert "FIRST" in out and "LAST" in out
    # The note gives the real size (no output directory here: not saved, and says so).
    assert out.count("[... output cut:") == 1
    assert "The whole stdout is 200,012 bytes, 3 lines; it was not saved" in out
    assert len(out) < OUTPUT_CAP_BYTES + 500


async def test_timeout_out_of_range(service: ToolService, ctx: ToolExecCtx) -> None:
    with pytest.raises(AgentError, match="less than or equal to 600000"):
        await run(service, ctx, "true", timeout_ms=600_001)


def test_a_stream_past_the_saved_cap_says_so_and_keeps_its_real_end(tmp_path: Path) -> None:
    from codingcode.process import CappedBuffer
    from codingcode.tools.builtin.shell import stream_text

    buf = CappedBuffer(100, spool=tmp_path / "out.txt", spool_cap=500)
    data = b"".join(b"%04d\n" % n for n in range(1, 401))  # 2,000 bytes, 400 lines
    for i in range(0, len(data), 7):
        buf.feed(data[i : i + 7])
    buf.close()
    assert (tmp_path / "out.txt").read_bytes() == data[:500]
    text = stream_text(buf, "stdout")
    assert "The whole stdout is 2,000 bytes, 400 lines; its first 500 bytes are saved" in text
    assert text.endswith("0399\n0400\n") and text.startswith("0001\n")
    whole = CappedBuffer(100, spool=tmp_path / "whole.txt")
    whole.feed(data)
    whole.close()
    assert (tmp_path / "whole.txt").read_bytes() == data
    assert "all of it is saved in" in stream_text(whole, "stdout")
    small = CappedBuffer(100, spool=tmp_path / "small.txt")
    small.feed(b"short\n")
    small.close()
    assert not (tmp_path / "small.txt").exists() and stream_text(small, "stdout") == "short\n"
