"""The confined walk of write_file/edit_file against the kernel's own resolution.

Hypothesis builds a small project full of symlinks (relative and absolute, into the
project, out of it, back in, dangling, looping); for every path the walk either ends
where ``os.path.realpath`` says the path leads (when that is inside the project) or
refuses — it never ends anywhere else, and never outside.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from codingcode.tools.builtin.safe_path import EscapeError, is_within, locate

NAMES = ["l1", "l2", "a/l3", "b/l4"]
TARGETS = [
    "a",
    "../a",
    "a/f.txt",
    "f.txt",
    "..",
    "../..",
    "../outside",
    "../outside/g.txt",
    "../project/b",
    "{root}/a",
    "{root}/b/../a/f.txt",
    "{outside}",
    "{outside}/back",
    "{outside}/g.txt",
    "missing",
    "l1",
    "l2",
    "/etc",
]
PATHS = [
    "l1",
    "l2/x.txt",
    "l1/f.txt",
    "a/l3",
    "a/l3/f.txt",
    "b/l4/g.txt",
    "l2/l1",
    "l1/new.txt",
    "a/f.txt",
]


@settings(max_examples=150, deadline=None)
@given(links=st.dictionaries(st.sampled_from(NAMES), st.sampled_from(TARGETS), min_size=1))
def test_the_walk_ends_where_the_kernel_does_or_refuses(links: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp).resolve()
        root, outside = base / "project", base / "outside"
        for d in (root / "a", root / "b", outside):
            d.mkdir(parents=True)
        (root / "a/f.txt").write_text("f")
        (outside / "g.txt").write_text("g")
        (outside / "back").symlink_to(root / "a")
        for name, target in links.items():
            (root / name).symlink_to(target.format(root=root, outside=outside))
        for rel in PATHS:
            path = str(root / rel)
            real = os.path.realpath(path)
            try:
                loc = locate(path, str(root))
            except EscapeError:
                assert not is_within(real, str(root)) or _loops(path)
                continue
            except (FileNotFoundError, NotADirectoryError):
                continue  # a missing or non-directory component: nothing is written
            except OSError as exc:  # a loop, as the kernel sees it too (or a way out)
                assert exc.errno == errno.ELOOP
                assert _loops(path) or not is_within(real, str(root))
                continue
            try:
                assert is_within(loc.path, str(root)), f"{rel} walked out to {loc.path}"
                assert (
                    os.path.realpath(f"/proc/self/fd/{loc.dir_fd}") == os.path.dirname(loc.path)
                    or loc.name is None
                )
                assert loc.path == real, f"{rel}: walk {loc.path}, kernel {real}"
            finally:
                os.close(loc.dir_fd)


def _loops(path: str) -> bool:
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False
