"""The ``.git`` entries of repositories nested in a project (the sandbox protects their hooks
and config, and disarms the ones a command creates)."""

from __future__ import annotations

import os
from pathlib import Path

#: How deep below the project nested repositories (submodules, vendored checkouts) are
#: looked for: their hooks run as soon as the user works in them.
NESTED_GIT_DEPTH = 2
_SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages"})


def nested_git(project: Path) -> list[Path]:
    """``.git`` entries (directories or pointer files, not symlinks) of nested repositories."""
    found: list[Path] = []
    level = [project]
    for _ in range(NESTED_GIT_DEPTH):
        next_level = []
        for directory in level:
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") or entry.name in _SKIP_DIRS:
                    continue
                if not entry.is_dir(follow_symlinks=False):
                    continue
                git = Path(entry.path, ".git")
                if git.exists() and not git.is_symlink():
                    found.append(git)
                next_level.append(Path(entry.path))
        level = next_level
    return found
