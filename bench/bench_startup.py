"""Start-up cost of the commands hooks and scripts call once per action, against the
bare interpreter (`python -c pass`, this interpreter: not a shell shim such as pyenv's
`python3`, which alone costs ~0.1 s) measured in the same run: CPU time (user + sys of the child process, the
cost a busy machine feels) and wall time, medians of interleaved runs.

    .venv/bin/python bench/bench_startup.py [--runs 11]

Target: `codingcode check …` and `codingcode tool read_file …` each at most 15× the bare
interpreter in CPU time.

Two reference processes show what the libraries these commands stand on cost by themselves:
pydantic validating one argument model (tool arguments, settings and hook replies are
validated with it), and that plus anyio running one call in a worker thread (how a tool runs).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _common import verdict

TARGET = 15.0


#: The reference processes: the least each command needs of its two main libraries.
_PYDANTIC = """
from pydantic import BaseModel, ConfigDict, Field
class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="a path")
    offset: int = Field(default=1, ge=1)
Args.model_validate({"path": "a.txt"})
"""
_ANYIO = """
import anyio
async def call():
    return await anyio.to_thread.run_sync(len, "a.txt")
anyio.run(call)
"""


def _cpu_and_wall(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=11)
    opts = parser.parse_args()
    exe = str(Path(sys.executable).parent / "codingcode")
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp, "project")
        project.mkdir()
        (project / "a.txt").write_text("hello\n")
        env = {
            **os.environ,
            "CODINGCODE_CONFIG_DIR": str(Path(tmp, "config")),
            "CODINGCODE_STATE_DIR": str(Path(tmp, "state")),
        }
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "pydantic, one model": [sys.executable, "-c", _PYDANTIC],
            "pydantic + anyio call": [sys.executable, "-c", _PYDANTIC + _ANYIO],
            "codingcode --version": [exe, "--version"],
            "codingcode --help": [exe, "--help"],
            "codingcode check": [exe, "check", "execute_command", '{"command": "ls -la"}'],
            "codingcode tool read_file": [exe, "tool", "read_file", '{"path": "a.txt"}'],
        }
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for argv in commands.values():  # warm the file cache
            _cpu_and_wall(argv, project, env)
        for _ in range(opts.runs):
            for name, argv in commands.items():
                samples[name].append(_cpu_and_wall(argv, project, env))
    cpu = {n: statistics.median(c for c, _ in s) for n, s in samples.items()}
    wall = {n: statistics.median(w for _, w in s) for n, s in samples.items()}
    base_cpu, base_wall = cpu["python -c pass"], wall["python -c pass"]
    for name in commands:
        ratio = cpu[name] / base_cpu
        line = (
            f"{name:26} cpu {cpu[name] * 1000:7.1f} ms  ratio {ratio:5.1f}   "
            f"wall {wall[name] * 1000:7.1f} ms  ratio {wall[name] / base_wall:5.1f}"
        )
        if name in ("codingcode check", "codingcode tool read_file"):
            line += f"   (target ≤ {TARGET:g}×: {verdict(ratio, TARGET)})"
        print(line)


if __name__ == "__main__":
    main()
