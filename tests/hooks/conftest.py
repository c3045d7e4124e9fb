from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never touch the real home: settings, audit log and trust records go to temp dirs."""
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "config"))
