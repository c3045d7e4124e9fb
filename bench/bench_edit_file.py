"""edit_file on a 50 MB file vs the bare minimum: read it, write a copy, fsync, rename.

The edit reads the file, checks that the text occurs once, writes a temporary file, keeps
owner and mode, checks nothing changed meanwhile (the content too, for a file modified in
the last 2 s) and renames. The ratio printed is edit / bare minimum, medians of
interleaved runs (so load affects both alike); it should stay a small constant whatever
the size, as every step is one linear pass.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import anyio

from _common import interleaved, verdict
from codingcode.tools import ToolExecCtx, ToolService


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size-mb", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        big = project / "big.txt"
        lines = opts.size_mb * 1024 * 1024 // 100
        big.write_bytes(b"x" * 99 + b"\n" * 1 + (b"y" * 99 + b"\n") * (lines - 2) + b"END\n")
        service, ctx = ToolService.default(), ToolExecCtx(project_path=project)
        state = {"n": 0}

        def edit() -> None:
            n = state["n"]
            state["n"] += 1
            old, new = ("END", "FIN") if n % 2 == 0 else ("FIN", "END")
            args = {"path": "big.txt", "old_string": old, "new_string": new}
            anyio.run(service.call, "edit_file", args, ctx)

        def bare() -> None:
            data = big.read_bytes()
            data.count(b"END")
            tmp_path = project / ".bare.tmp"
            with open(tmp_path, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp_path, project / "bare.txt")

        times = interleaved({"edit_file": edit, "bare": bare}, runs=opts.runs)
        ratio = times["edit_file"] / times["bare"]
        print(
            f"{opts.size_mb} MB file: edit_file {times['edit_file'] * 1000:.0f} ms, "
            f"read+write+fsync+rename {times['bare'] * 1000:.0f} ms"
        )
        print(
            f"edit / bare ratio: {ratio:.2f} (target <= 6.0: a few linear passes) {verdict(ratio, 6.0)}"
        )


if __name__ == "__main__":
    main()
