"""search_code / search_files in-process against raw `rg` run as a process, same machine, same run.

Corpus: this interpreter's standard library directory (~50k files here). Targets (issue 2):
full scan within 1.15x of rg; a search that stops at max_results at most 0.8x of rg's full
scan; search_files within 1.15x of `rg --files`.
"""

from __future__ import annotations

import argparse
import subprocess
import sysconfig
from pathlib import Path

import anyio

from _common import interleaved, verdict
from codingcode.tools import ToolExecCtx, ToolService
from codingcode.tools.builtin.code_search import find_rg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--runs", type=int, default=7)
    opts = parser.parse_args()
    root: Path = opts.root
    rg = find_rg()
    service = ToolService.default()
    ctx = ToolExecCtx(project_path=root)
    files = subprocess.run(
        [rg, "--files", "."], cwd=root, capture_output=True, check=True
    ).stdout.count(b"\n")
    print(f"corpus: {root} ({files} files rg would search)")

    def tool(name: str, **args: object) -> None:
        anyio.run(service.call, name, dict(args), ctx)

    def raw(*argv: str) -> None:
        subprocess.run([rg, *argv], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    cases = [
        # (label, our call, rg's call, target)
        ("full scan, no match", lambda: tool("search_code", pattern="zq_never_matches_xj"),
         lambda: raw("--line-number", "--no-heading", "zq_never_matches_xj", "."), 1.15),
        ("full scan, rare match", lambda: tool("search_code", pattern=r"def __init_subclass__\(cls, /"),
         lambda: raw("--line-number", "--no-heading", r"def __init_subclass__\(cls, /", "."), 1.15),
        ("early stop at max_results=30", lambda: tool("search_code", pattern="import"),
         lambda: raw("--line-number", "--no-heading", "import", "."), 0.8),
        ("search_files full walk", lambda: tool("search_files", pattern="**/test_zipfile*.py"),
         lambda: raw("--files", "--glob", "**/test_zipfile*.py", "."), 1.15),
    ]  # fmt: skip
    print(f"{'case':32} {'ours ms':>9} {'rg ms':>9} {'ratio':>7}  target")
    for label, ours, theirs, target in cases:
        t = interleaved({"ours": ours, "rg": theirs}, runs=opts.runs)
        ratio = t["ours"] / t["rg"]
        print(
            f"{label:32} {t['ours'] * 1000:9.1f} {t['rg'] * 1000:9.1f} {ratio:7.2f}  "
            f"<= {target} {verdict(ratio, target)}"
        )


if __name__ == "__main__":
    main()
