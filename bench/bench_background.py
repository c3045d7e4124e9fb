"""A background command that writes 1 GB of output: the agent's memory stays flat.

Prints the agent process's peak RSS growth while a background command writes 1 GB (kept on
disk up to the output cap, the rest counted), against the growth for a command that
writes nothing, measured in the same run, and the pump's throughput.
"""

from __future__ import annotations

import os
import resource
import tempfile
import time
from pathlib import Path

from codingcode.tools.builtin.background import BackgroundLimits, BackgroundProcesses

GIB = 1024**3


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(command: str, base: Path) -> tuple[float, float, int, int]:
    registry = BackgroundProcesses(base / "logs", BackgroundLimits(max_output_bytes=100 * 1024**2))
    before = peak_rss_mib()
    start = time.perf_counter()
    proc = registry.start(command, cwd=base, launcher=None, env=dict(os.environ))
    assert proc.done.wait(600), "the command did not finish"
    elapsed = time.perf_counter() - start
    return peak_rss_mib() - before, elapsed, proc.written, proc.dropped


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="bench-bg-"))
    idle_growth, _, _, _ = run("true", base)
    growth, elapsed, written, dropped = run(f"head -c {GIB} /dev/zero", base)
    print(
        f"1 GB of output: peak RSS grew {growth:.1f} MiB (a silent command: {idle_growth:.1f} MiB); "
        f"{written / 1024**2:.0f} MiB kept on disk (the cap), {dropped / 1024**2:.0f} MiB counted "
        f"and dropped; pumped at {GIB / elapsed / 1024**2:.0f} MiB/s"
    )
    verdict = "flat" if growth < 20 else "NOT FLAT"
    print(f"memory: {verdict} (target: growth < 20 MiB, independent of the output's size)")


if __name__ == "__main__":
    main()
