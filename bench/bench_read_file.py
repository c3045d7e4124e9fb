"""read_file deep into a 1 GB generated file: peak memory stays flat.

Each read runs in a fresh process and its peak RSS is taken from the kernel (wait4), so
the figures are the whole process's. Flat means reading line 1,000,000 (or near the end)
costs about what reading line 1 costs; the ratio printed is deep / shallow peak RSS.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import verdict

READER = """
import anyio, sys
from codingcode.tools import ToolService, ToolExecCtx
out = anyio.run(ToolService.default().call, "read_file",
                {"path": sys.argv[1], "offset": int(sys.argv[2]), "limit": 5}, ToolExecCtx())
print(out.splitlines()[0])
"""


def generate(path: Path, size: int) -> int:
    line = b"%09d " + b"x" * 89 + b"\n"  # 100 bytes a line
    block_lines = 10_000
    lines = 0
    with path.open("wb") as f:
        while f.tell() < size:
            f.write(b"".join(line % (lines + i) for i in range(block_lines)))
            lines += block_lines
    return lines


def peak_rss_kib(path: Path, offset: int) -> tuple[int, float, str]:
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", READER, str(path), str(offset)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    header = proc.stdout.read().strip()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"reader failed at offset {offset}")
    return usage.ru_maxrss, time.perf_counter() - start, header


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size-mb", type=int, default=1024)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.txt"
        t0 = time.perf_counter()
        lines = generate(path, opts.size_mb * 1024 * 1024)
        print(
            f"generated {path.stat().st_size / 2**20:.0f} MiB, {lines} lines in {time.perf_counter() - t0:.1f}s"
        )
        results = []
        for offset in (1, 1_000_000, lines - 10):
            rss, seconds, header = peak_rss_kib(path, offset)
            results.append(rss)
            print(
                f"offset {offset:>10}: peak RSS {rss / 1024:6.1f} MiB, {seconds:5.2f}s  ({header})"
            )
        ratio = max(results[1:]) / results[0]
        print(
            f"deep/shallow peak RSS ratio: {ratio:.2f} (target <= 1.10: flat) {verdict(ratio, 1.10)}"
        )


if __name__ == "__main__":
    main()
