"""`codingcode mcp` resources/list over a project of N files (default 20,000), every page.

Measured: listing the project as resources page by page (ProjectListing: one walk, pages
sliced from it), 1,000 and N files, so the growth shows whether the cost is linear. The
reference, in the same run: ``os.walk`` of the same tree with the names sorted. Targets: the
whole listing of 20,000 files within 10x the reference, and the cost per file at N within
3x the cost per file at 1,000 (linear, not quadratic in the pages).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from _common import interleaved, verdict
from codingcode.mcp_server.resources import PAGE_SIZE, ProjectListing


def make_tree(root: Path, files: int) -> None:
    per_dir = 200
    for i in range(files):
        folder = root / f"d{i // per_dir:04d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05d}.txt").touch()


def list_all(root: Path) -> int:
    listing = ProjectListing(root)
    seen, cursor = 0, None
    while True:
        page, cursor = listing.page(cursor)
        seen += len(page)
        if cursor is None:
            return seen


def reference(root: Path) -> int:
    count = 0
    for _, dirs, names in os.walk(root):
        dirs.sort()
        count += len(sorted(names))
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "small", Path(tmp) / "big"
        small.mkdir()
        big.mkdir()
        make_tree(small, 1000)
        make_tree(big, opts.files)
        assert list_all(big) == opts.files == reference(big)
        t = interleaved(
            {
                "small": lambda: list_all(small),
                "big": lambda: list_all(big),
                "reference": lambda: reference(big),
            },
            runs=opts.runs,
        )
    ratio = t["big"] / t["reference"]
    growth = (t["big"] / opts.files) / (t["small"] / 1000)
    pages = -(-opts.files // PAGE_SIZE)
    print(f"resources/list of {opts.files} files ({pages} pages of {PAGE_SIZE})")
    print(
        f"  all pages:  {t['big'] * 1000:.0f} ms; reference os.walk+sort {t['reference'] * 1000:.0f} ms"
    )
    print(f"  ratio listing / reference: {ratio:.1f}x  (target 10x: {verdict(ratio, 10)})")
    print(
        f"  per-file cost at {opts.files} / at 1000: {growth:.2f}x  "
        f"(target 3x, linear: {verdict(growth, 3)})"
    )


if __name__ == "__main__":
    main()
