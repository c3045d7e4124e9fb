"""Where skills live on disk: ``<dir>/<skill>/SKILL.md``. On the ground floor: workspace trust
must list a project's skills without loading them, and the skills package loads them."""

from __future__ import annotations

import os
from pathlib import Path

SKILL_FILE = "SKILL.md"


def skill_files(directory: Path) -> list[Path]:
    """``<directory>/<skill>/SKILL.md`` of every skill folder, sorted (one level, as Claude
    Code has it)."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:  # missing, not a directory, unreadable: no skills there
        return []
    return [
        Path(e.path) / SKILL_FILE
        for e in entries
        if not e.name.startswith(".") and e.is_dir() and (Path(e.path) / SKILL_FILE).exists()
    ]
