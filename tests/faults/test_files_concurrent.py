"""Fault injection: an edit while another process appends to the same file.

The old edit read the file, replaced it, and reported success: every line appended in
between was gone. Now a change between the read and the replace is noticed: the edit is
done again on the new content (a few times), or fails clearly — no appended line is lost.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from codingcode.errors import AgentError
from codingcode.tools import ToolExecCtx, ToolService

pytestmark = pytest.mark.anyio

APPENDER = """
import sys, time
path, n, hold = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "hold"
log = open(path, "a", buffering=1) if hold else None  # like a logger's open file
print("ready", flush=True)
for i in range(n):
    if hold:
        log.write(f"appended {i}\\n")
    else:
        with open(path, "a") as f:  # like `echo line >> file` in a shell loop
            f.write(f"appended {i}\\n")
    if i % 2 == 0:  # about 2 s in all: edits happen while it writes
        time.sleep(0.001)
"""


def start_appender(path: Path, n: int, how: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(path), str(n), how], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


@pytest.mark.parametrize("how", ["reopen", "hold"])
async def test_edits_never_lose_lines_another_process_appends(
    service: ToolService, ctx: ToolExecCtx, project: Path, how: str
) -> None:
    """Edits that grow and shrink the file, while lines are appended by a process that
    opens the file for each line, or keeps it open (then no edit is made while it does:
    each is refused, saying why)."""
    n = 3417
    log = project / "log.txt"
    log.write_text("counter 0\n" + "".join(f"base {i}\n" for i in range(2000)))
    proc = start_appender(log, n, how)
    current = "counter 0\n"
    edits = 0
    refusals: list[str] = []
    try:
        while proc.poll() is None or edits == 0:
            try:
                new = f"counter {edits + 1}" + "+" * 50 * (edits % 2) + "\n"
                await service.call(
                    "edit_file",
                    {"path": "log.txt", "old_string": current, "new_string": new},
                    ctx,
                )
                current = new
                edits += 1
            except AgentError as exc:
                assert "file is unchanged" in exc.message
                assert "kept changing" in exc.message or "open for writing" in exc.message
                refusals.append(exc.message)
            await anyio.lowlevel.checkpoint()
    finally:
        assert proc.wait(timeout=120) == 0
    lines = log.read_text().splitlines()
    assert lines[0] + "\n" == current
    appended = [line for line in lines if line.startswith("appended ")]
    missing = n - len(set(appended))
    assert missing == 0, (
        f"{missing} of {n} appended lines lost ({edits} edits, {len(refusals)} refused)"
    )
    assert len(appended) == n  # and none doubled
    assert lines[1:2001] == [f"base {i}" for i in range(2000)]
    if how == "hold":  # the appender held the file from the start: edits waited, then said why
        assert any(
            "open for writing by another process" in m for m in refusals
        )  # the appender held the file from the start
