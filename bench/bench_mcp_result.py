"""A 50 MB result from a stdio MCP server: time and memory of the call, end to end.

The call (``raw:big`` of tests/mcp/servers/raw_server.py, a server that answers with one
text of SIZE bytes) runs in a fresh process; its wall time and its growth in peak RSS (the
kernel's figure, VmHWM reset just before, so the parser's native allocations count and
nothing of the parent process does) are measured around the call alone. The reference, measured in the same process and run: ``json.loads`` of the same
JSON-RPC message. Targets: at most 2 s and 150 MB for 50 MB, and the ratio printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from _common import verdict

ROOT = Path(__file__).resolve().parent.parent
CHILD = r"""
import json, resource, sys, tempfile, time
from pathlib import Path
import anyio
from codingcode.config import Scope
from codingcode.mcp.client import McpManager
from codingcode.mcp.config import parse_server
from codingcode.tools import ToolService

size, server = int(sys.argv[1]), sys.argv[2]

def rss_kib() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize() // 1024

def peak_kib() -> int:
    # VmHWM, this address space's own peak: ru_maxrss would carry over the RSS of the
    # process that forked us (Linux keeps it across exec), e.g. a big pytest worker.
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")

def reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # the peak starts again from here
    except OSError:
        pass  # before Linux 4.0: the peak since exec (imports), an over-estimate

async def main() -> dict:
    tmp = Path(tempfile.mkdtemp())
    cfg = parse_server("raw", {"command": sys.executable, "args": [server, "big", str(size)],
                               "timeout_ms": 120000},
                       scope=Scope.USER, source=tmp / "settings.json", env={})
    service = ToolService()
    async with McpManager([cfg], project=tmp, service=service):
        reset_peak()
        before = rss_kib()
        start = time.perf_counter()
        out = await service.call("raw:big", {})
        took = time.perf_counter() - start
        grew = peak_kib() - before
    assert "the whole result" in out, out[-300:]
    line = json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"content": [
        {"type": "text", "text": "x" * size}]}}).encode()
    start = time.perf_counter()
    json.loads(line)
    ref = time.perf_counter() - start
    return {"call_s": took, "grew_mb": grew / 1024, "ref_s": ref}

print(json.dumps(anyio.run(main)))
"""


def measure(size: int) -> dict[str, float]:
    """The call's wall time, its peak-RSS growth and the reference, from a fresh process."""
    server = ROOT / "tests" / "mcp" / "servers" / "raw_server.py"
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(size), str(server)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"the measuring process failed:\n{out.stderr[-2000:]}")
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size-mb", type=float, default=50)
    opts = parser.parse_args()
    r = measure(int(opts.size_mb * 1_000_000))
    ratio = r["call_s"] / r["ref_s"]
    print(
        f"MCP result of {opts.size_mb:g} MB (stdio, text content); load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"  call:       {r['call_s']:.2f} s  (target 2 s: {verdict(r['call_s'], 2.0)})")
    print(f"  peak RSS +: {r['grew_mb']:.0f} MB  (target 150 MB: {verdict(r['grew_mb'], 150)})")
    print(f"  reference:  json.loads of the same message {r['ref_s']:.2f} s")
    print(f"  ratio call / reference: {ratio:.1f}x")


if __name__ == "__main__":
    main()
