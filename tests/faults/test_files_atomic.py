"""atomic_write_bytes (settings and trust records): links, owner and mode kept."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from codingcode.atomic import atomic_write_bytes


def test_a_symlinked_settings_file_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text("{}")
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    atomic_write_bytes(link, b'{"a": 1}')
    assert link.is_symlink() and real.read_bytes() == b'{"a": 1}'


def test_owner_and_mode_are_kept_and_mode_can_be_set(tmp_path: Path) -> None:
    f = tmp_path / "f.json"
    f.write_text("{}")
    f.chmod(0o640)
    if os.geteuid() == 0:
        os.chown(f, 4321, 8765)
    atomic_write_bytes(f, b"1")
    st = f.stat()
    assert stat.S_IMODE(st.st_mode) == 0o640
    if os.geteuid() == 0:
        assert (st.st_uid, st.st_gid) == (4321, 8765)
    atomic_write_bytes(f, b"2", mode=0o600)
    assert stat.S_IMODE(f.stat().st_mode) == 0o600 and f.read_bytes() == b"2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        atomic_write_bytes(tmp_path / "n", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "n").stat().st_mode) == 0o600


@pytest.mark.parametrize("data", [b"", b"x" * (1 << 20)])
def test_contents(tmp_path: Path, data: bytes) -> None:
    atomic_write_bytes(tmp_path / "d", data)
    assert (tmp_path / "d").read_bytes() == data
