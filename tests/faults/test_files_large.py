"""Fault injection: 50 MB files through read_file and edit_file (time and memory linear)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from codingcode.tools import ToolExecCtx, ToolService

pytestmark = pytest.mark.anyio

LINE = "x" * 99 + "\n"  # 100 bytes
N = 500_000  # 50 MB


async def test_a_50_mb_file_reads_and_edits(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    big = project / "big.txt"
    body = LINE * N
    big.write_text("first\n" + body + "last\n")
    start = time.monotonic()
    reference = big.read_bytes()  # the cost of one plain read and write, measured here
    (project / "copy").write_bytes(reference)
    plain = time.monotonic() - start
    start = time.monotonic()
    out = await service.call("read_file", {"path": "big.txt", "offset": N + 2, "limit": 5}, ctx)
    assert out.splitlines()[0] == f"big.txt: lines {N + 2}-{N + 2} of {N + 2}"
    await service.call(
        "edit_file", {"path": "big.txt", "old_string": "last", "new_string": "END"}, ctx
    )
    await service.call(
        "edit_file", {"path": "big.txt", "old_string": "first", "new_string": "1"}, ctx
    )
    took = time.monotonic() - start
    assert big.read_text() == "1\n" + body + "END\n"
    # generous: the tools do a few passes over the file, never work per line in Python
    assert took < 40 * plain + 2, f"{took:.2f}s for the tools vs {plain:.2f}s for read+write"
