"""Fault injection: the cross-process file lock when its holder hangs.

The old wait blocked a worker thread in flock() for ever: no timeout, and neither Ctrl-C
(anyio cancellation) nor the call's CancelSignal reached it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from codingcode.atomic import file_lock
from codingcode.cancel import CancelSignal
from codingcode.errors import AgentError, ErrorKind
from codingcode.tools import ToolExecCtx, ToolService

pytestmark = pytest.mark.anyio

HOLDER = """
import sys, time, anyio
from codingcode.atomic import file_lock
async def main():
    async with file_lock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
anyio.run(main)
"""


def hold(target: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process takes the lock of ``target`` and keeps it for ``seconds``."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(target), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


@pytest.fixture
def held(project: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holds the lock of project/f.txt (and lets go after 8 s at most)."""
    target = project / "f.txt"
    target.write_text("one\n")
    proc = hold(target, 8)
    yield proc
    proc.kill()
    proc.wait()


async def test_the_wait_is_bounded_with_a_clear_error(
    project: Path, held: subprocess.Popen[str]
) -> None:
    start = time.monotonic()
    with pytest.raises(AgentError) as err:
        async with file_lock(project / "f.txt", max_wait=0.5):
            pytest.fail("the lock was granted while another process held it")
    assert time.monotonic() - start < 4
    assert err.value.kind is ErrorKind.TIMEOUT
    assert f"pid {held.pid}" in err.value.message and "f.txt" in err.value.message


async def test_anyio_cancellation_reaches_the_wait(
    project: Path, held: subprocess.Popen[str]
) -> None:
    start = time.monotonic()
    with anyio.move_on_after(0.3) as scope:
        async with file_lock(project / "f.txt"):
            pytest.fail("the lock was granted while another process held it")
    assert scope.cancelled_caught
    assert time.monotonic() - start < 4


async def test_the_cancel_signal_reaches_an_edit_waiting_for_the_lock(
    service: ToolService, project: Path, held: subprocess.Popen[str]
) -> None:
    signal = CancelSignal()
    ctx = ToolExecCtx(project_path=project, signal=signal)

    async def cancel_soon() -> None:
        await anyio.sleep(0.3)
        signal.set("user pressed Ctrl-C")

    start = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(cancel_soon)
        with pytest.raises(AgentError) as err:
            await service.call(
                "edit_file", {"path": "f.txt", "old_string": "one", "new_string": "two"}, ctx
            )
    assert err.value.kind is ErrorKind.CANCELLED
    assert time.monotonic() - start < 4
    assert (project / "f.txt").read_text() == "one\n"


async def test_the_lock_is_granted_once_the_holder_lets_go(project: Path) -> None:
    target = project / "f.txt"
    proc = hold(target, 0.5)
    try:
        async with file_lock(target, max_wait=30):
            assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait()
