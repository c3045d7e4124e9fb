from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never touch the real home: settings, audit log and trust records go to temp dirs."""
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "config"))


def make_corpus_project(root: Path) -> Path:
    """The project the corpus runs in: symlinks that point at protected files."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "data").mkdir(exist_ok=True)
    links = {
        "data/pw": "/etc/passwd",
        "data/sh": "/etc/shadow",
        "etc": "/etc",
        "k": os.path.expanduser("~/.ssh"),
        "config.txt": str(root / ".env"),
    }
    for name, target in links.items():
        link = root / name
        if not link.is_symlink():
            link.symlink_to(target)
    (root / ".env").write_text("SECRET=1\n")
    return root.resolve()
