"""The symlink resolution approval uses (``paths._real``, a fast way for plain paths) gives
exactly ``os.path.realpath``'s answer, on trees with symlinks to directories, to files,
dangling, chained and looping."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from codingcode.paths import _real

NAMES = ["a", "b", "c", ".x", "..y"]
KINDS = ["dir", "file", "link-up", "link-dir", "link-file", "dangling", "loop", "absent"]

trees = st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(KINDS)), max_size=8)
paths = st.lists(st.sampled_from([*NAMES, ".", "..", ""]), min_size=0, max_size=5)


def _build(root: Path, layout: list[tuple[str, str]]) -> None:
    where = root
    for name, kind in layout:
        target = where / name
        if os.path.lexists(target):
            where = target if target.is_dir() else where
            continue
        if kind == "dir":
            target.mkdir()
            where = target
        elif kind == "file":
            target.write_text("x")
        elif kind == "link-up":
            target.symlink_to("..")
        elif kind == "link-dir":
            target.symlink_to(root)
        elif kind == "link-file":
            (root / "f").write_text("x")
            target.symlink_to(root / "f")
        elif kind == "dangling":
            target.symlink_to(root / "nowhere")
        elif kind == "loop":
            target.symlink_to(target)


@settings(max_examples=300, deadline=None)
@given(trees, paths)
def test_real_is_realpath(layout: list[tuple[str, str]], parts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(os.path.realpath(tmp))
        _build(root, layout)
        path = str(root) + "".join("/" + p for p in parts)
        assert _real(path) == os.path.realpath(path), path


def test_a_symlinked_project_directory_is_resolved(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    assert _real(str(tmp_path / "link" / "sub")) == str(real / "sub")
    assert _real(str(real / "sub")) == str(real / "sub")
    assert _real(str(real / "missing" / "x")) == str(real / "missing" / "x")
