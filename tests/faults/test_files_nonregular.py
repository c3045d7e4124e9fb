"""Fault injection: the file tools meet FIFOs, sockets and devices.

Opening a FIFO blocks until a writer comes, so the old tools hung forever (in a worker
thread nobody could cancel). Now every non-regular file is a clear error, at once.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from codingcode.errors import AgentError, ErrorKind
from codingcode.tools import ToolExecCtx, ToolService

pytestmark = pytest.mark.anyio

ARGS = {
    "read_file": {},
    "write_file": {"content": "new\n"},
    "edit_file": {"old_string": "a", "new_string": "b"},
}


@contextmanager
def unblock_after(fifo: Path, seconds: float = 5.0) -> Iterator[None]:
    """Should a tool block on ``fifo`` (the old bug), let it go after a while: the test then
    fails on its timing instead of hanging the run."""
    done = threading.Event()

    def run() -> None:
        if done.wait(seconds):
            return
        try:  # O_RDWR on a FIFO never blocks (Linux) and frees a blocked reader or writer
            fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        except OSError:
            return
        time.sleep(0.2)
        os.close(fd)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@pytest.mark.parametrize("tool", sorted(ARGS))
async def test_a_fifo_is_a_clear_error_at_once(
    service: ToolService, ctx: ToolExecCtx, project: Path, tool: str
) -> None:
    fifo = project / "pipe"
    os.mkfifo(fifo)
    start = time.monotonic()
    with unblock_after(fifo), pytest.raises(AgentError) as err:
        await service.call(tool, {"path": "pipe", **ARGS[tool]}, ctx)
    assert time.monotonic() - start < 3
    assert "FIFO" in err.value.message and "regular file" in err.value.message
    assert err.value.kind is ErrorKind.INVALID_ARGUMENTS
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO, never replaced


async def test_many_fifo_reads_do_not_exhaust_the_worker_threads(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    fifo = project / "pipe"
    os.mkfifo(fifo)
    errors: list[str] = []

    async def one() -> None:
        try:
            await service.call("read_file", {"path": "pipe"}, ctx)
        except AgentError as exc:
            errors.append(exc.message)

    start = time.monotonic()
    with unblock_after(fifo):
        async with anyio.create_task_group() as tg:
            for _ in range(60):  # more than anyio's 40 worker threads
                tg.start_soon(one)
    assert len(errors) == 60
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("tool", sorted(ARGS))
async def test_a_socket_is_a_clear_error(
    service: ToolService, ctx: ToolExecCtx, project: Path, tool: str
) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(project / "sock"))
        with pytest.raises(AgentError, match="socket.*not a regular file"):
            await service.call(tool, {"path": "sock", **ARGS[tool]}, ctx)
        assert stat.S_ISSOCK(os.lstat(project / "sock").st_mode)
    finally:
        sock.close()


@pytest.mark.parametrize("tool", sorted(ARGS))
async def test_a_device_is_a_clear_error(
    service: ToolService, ctx: ToolExecCtx, project: Path, tool: str
) -> None:
    # A device node of our own (like /dev/null): a broken tool replaces it, not the real one.
    dev = project / "null"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    with pytest.raises(AgentError, match="device.*not a regular file"):
        await service.call(tool, {"path": "null", **ARGS[tool]}, ctx)
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


async def test_reading_dev_zero_is_refused_not_endless(
    service: ToolService, ctx: ToolExecCtx
) -> None:
    with pytest.raises(AgentError, match="device.*not a regular file"):
        await service.call("read_file", {"path": "/dev/zero"}, ctx)


async def test_a_symlink_to_a_fifo_is_a_clear_error(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    os.mkfifo(project / "pipe")
    (project / "link").symlink_to("pipe")
    with unblock_after(project / "pipe"):
        for tool in sorted(ARGS):
            with pytest.raises(AgentError, match="FIFO"):
                await service.call(tool, {"path": "link", **ARGS[tool]}, ctx)
    assert (project / "link").is_symlink()
