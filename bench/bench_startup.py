"""`codingcode --version` wall time against `python3 -c pass` (the interpreter's own start-up)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from _common import interleaved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=21)
    opts = parser.parse_args()
    exe = shutil.which("codingcode") or str(Path(sys.executable).parent / "codingcode")

    def run(*argv: str) -> None:
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)

    t = interleaved(
        {
            "python -c pass": lambda: run(sys.executable, "-c", "pass"),
            "codingcode --version": lambda: run(exe, "--version"),
            "codingcode --help": lambda: run(exe, "--help"),
        },
        runs=opts.runs,
        warmup=2,
    )
    base = t["python -c pass"]
    for name, seconds in t.items():
        print(f"{name:22} {seconds * 1000:7.1f} ms  ratio {seconds / base:5.2f}")


if __name__ == "__main__":
    main()
