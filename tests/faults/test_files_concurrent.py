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
path, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(path, "a") as f:  # like `echo line >> file` in a shell loop
        f.write(f"appended {i}\\n")
    if i % 50 == 0:
        time.sleep(0.001)
"""


def start_appender(path: Path, n: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", APPENDER, str(path), str(n)])


async def test_edits_never_lose_lines_another_process_appends(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    n = 3417
    log = project / "log.txt"
    log.write_text("counter 0\n" + "".join(f"base {i}\n" for i in range(2000)))
    proc = start_appender(log, n)
    edits = refused = 0
    try:
        while proc.poll() is None or edits == 0:
            try:
                await service.call(
                    "edit_file",
                    {
                        "path": "log.txt",
                        "old_string": f"counter {edits}\n",
                        "new_string": f"counter {edits + 1}\n",
                    },
                    ctx,
                )
                edits += 1
            except AgentError as exc:
                assert "changing" in exc.message and "unchanged" in exc.message
                refused += 1
            await anyio.lowlevel.checkpoint()
    finally:
        assert proc.wait(timeout=120) == 0
    lines = log.read_text().splitlines()
    assert lines[0] == f"counter {edits}"
    appended = [line for line in lines if line.startswith("appended ")]
    missing = n - len(set(appended))
    assert missing == 0, f"{missing} of {n} appended lines lost ({edits} edits, {refused} refused)"
    assert len(appended) == n  # and none doubled
    assert lines[1:2001] == [f"base {i}" for i in range(2000)]
