"""search_code / search_files when rg hangs, is killed, or we are (issue 19).

A fake rg (a shell script run exactly as rg would be: through setpriv, in its own process
group) prints rg-style lines and then hangs, or kills itself; the tools must stop it at the
time limit with partial results and a note, report a foreign kill as a failure, die on
cancellation, and never outlive the process that started them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from codingcode.cancel import CancelSignal
from codingcode.errors import CancelledError, ToolFailureError, ToolTimeoutError
from codingcode.tools import ToolExecCtx, ToolService
from codingcode.tools.builtin import code_search

pytestmark = pytest.mark.anyio


def fake_rg(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "fake-rg"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script


def hanging_rg(tmp_path: Path, lines: list[str]) -> Path:
    """Prints ``lines`` (rg's --null format for search_code), records its pid and that of
    a child it starts, then hangs."""
    printf = "".join(f"printf '{line}\\n'\n" for line in lines)
    return fake_rg(
        tmp_path,
        f"echo $$ > {tmp_path}/rg.pid\nsleep 1000 &\necho $! > {tmp_path}/child.pid\n"
        + printf
        + "exec sleep 1000\n",
    )


def set_timeout(seconds: float) -> None:
    config = Path(os.environ["CODINGCODE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"code_search": {"timeout_s": seconds}}))


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie (dead, not yet reaped by its parent) is gone too.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] == "Z"
    except OSError:
        return True


def wait_gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.05)
    return gone(pid)


@pytest.fixture
def use_rg(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    def use(path: Path) -> None:
        monkeypatch.setattr(code_search, "find_rg", lambda: str(path))

    return use


async def test_time_limit_gives_partial_results_and_kills_the_group(
    service: ToolService, ctx: ToolExecCtx, tmp_path: Path, use_rg
) -> None:
    use_rg(hanging_rg(tmp_path, ["./a.py\\0003:hit one", "./b.py\\0007:hit two"]))
    set_timeout(0.5)
    start = time.monotonic()
    out = await service.call("search_code", {"pattern": "hit"}, ctx)
    assert time.monotonic() - start < 15
    assert out.splitlines()[:3] == ["2 matches:", "a.py:3: hit one", "b.py:7: hit two"]
    assert "search stopped after 0.5s" in out and "partial" in out
    assert wait_gone(int((tmp_path / "rg.pid").read_text()))
    assert wait_gone(int((tmp_path / "child.pid").read_text()))  # the whole group


async def test_time_limit_without_results_is_a_timeout_not_no_matches(
    service: ToolService, ctx: ToolExecCtx, tmp_path: Path, use_rg
) -> None:
    use_rg(hanging_rg(tmp_path, []))
    set_timeout(0.3)
    with pytest.raises(ToolTimeoutError, match=r"no match .* 0.3s .* not complete"):
        await service.call("search_code", {"pattern": "hit"}, ctx)
    with pytest.raises(ToolTimeoutError, match="listing was not complete"):
        await service.call("search_files", {"pattern": "*.py"}, ctx)
    assert wait_gone(int((tmp_path / "rg.pid").read_text()))


async def test_search_files_time_limit_partial(
    service: ToolService, ctx: ToolExecCtx, tmp_path: Path, use_rg
) -> None:
    use_rg(hanging_rg(tmp_path, ["./x.py", "./y.py"]))
    set_timeout(0.3)
    out = await service.call("search_files", {"pattern": "*.py"}, ctx)
    assert out.splitlines()[:3] == ["2 files:", "x.py", "y.py"]
    assert "search stopped after 0.3s" in out


@pytest.mark.parametrize("tool", ["search_code", "search_files"])
async def test_rg_killed_from_outside_is_a_failure_not_no_matches(
    service: ToolService, ctx: ToolExecCtx, tmp_path: Path, use_rg, tool: str
) -> None:
    use_rg(fake_rg(tmp_path, "printf './a.py\\0001:partial\\n'\nkill -KILL $$\n"))
    with pytest.raises(ToolFailureError, match="ripgrep was killed by SIGKILL"):
        await service.call(tool, {"pattern": "x"}, ctx)


async def test_rg_crash_exit_code_is_a_failure(
    service: ToolService, ctx: ToolExecCtx, tmp_path: Path, use_rg
) -> None:
    use_rg(fake_rg(tmp_path, "echo 'thread panicked' >&2\nexit 101\n"))
    with pytest.raises(ToolFailureError, match=r"exit code 101.*panicked"):
        await service.call("search_code", {"pattern": "x"}, ctx)


async def test_cancellation_kills_rg_promptly(
    service: ToolService, project: Path, tmp_path: Path, use_rg
) -> None:
    use_rg(hanging_rg(tmp_path, []))
    signal_ = CancelSignal()
    ctx = ToolExecCtx(project_path=project, signal=signal_)

    async def cancel_soon() -> None:
        for _ in range(500):  # the fake rg has started once it wrote its pid
            if (tmp_path / "rg.pid").exists():
                break
            await anyio.sleep(0.02)
        signal_.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_soon)
            with pytest.raises(CancelledError):
                await service.call("search_code", {"pattern": "x"}, ctx)
    assert wait_gone(int((tmp_path / "rg.pid").read_text()))
    assert wait_gone(int((tmp_path / "child.pid").read_text()))


CHILD = """
import sys, anyio
from pathlib import Path
from codingcode.tools import ToolExecCtx, ToolService
from codingcode.tools.builtin import code_search
code_search.find_rg = lambda: sys.argv[1]
anyio.run(ToolService.default().call, "search_code", {"pattern": "x"},
          ToolExecCtx(project_path=Path(sys.argv[2])))
"""


@pytest.mark.skipif(not code_search._pdeathsig_prefix(), reason="no setpriv --pdeathsig here")
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_rg_dies_when_our_process_is_killed(
    tmp_path: Path, project: Path, how: signal.Signals
) -> None:
    """Ground truth: kill the process running search_code; its rg must not live on."""
    rg = hanging_rg(tmp_path, [])
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(rg), str(project)])
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "rg.pid").exists():
            assert time.monotonic() < deadline, "the search never started"
            assert child.poll() is None, "the child exited early"
            time.sleep(0.05)
        rg_pid = int((tmp_path / "rg.pid").read_text())
        assert not gone(rg_pid)
        child.send_signal(how)
        child.wait(timeout=10)
        assert wait_gone(rg_pid), "rg outlived the process that started it"
    finally:
        child.kill()
        child.wait()
        for name in ("rg.pid", "child.pid"):
            if (tmp_path / name).exists():
                pid = int((tmp_path / name).read_text())
                if not gone(pid):
                    os.kill(pid, signal.SIGKILL)
