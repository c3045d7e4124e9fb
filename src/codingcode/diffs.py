"""Unified diffs people can read: 3 lines of context, right hunk numbers, coloured, cut.

Used by the confirmation of ``edit_file``/``write_file`` (what will change) and by the
interactive app after a change was applied (what did change). Pure text in, text out.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

#: Above this many characters on either side, no line diff is computed (a summary is shown).
MAX_DIFF_CHARS = 2_000_000
_RED, _GREEN, _CYAN, _BOLD, _RESET = "\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[1m", "\x1b[0m"


@dataclass(frozen=True)
class Diff:
    path: str
    lines: tuple[str, ...]  # the unified diff, one line each, without newlines
    added: int
    removed: int
    created: bool = False
    #: Set when the texts were too large to diff line by line.
    summary: str | None = None

    @property
    def empty(self) -> bool:
        return not self.lines and self.summary is None

    def stat(self) -> str:
        if self.summary:
            return self.summary
        verb = "new file" if self.created else "changed"
        return f"{self.path}: {verb}, +{self.added} -{self.removed}"

    def render(self, *, max_lines: int = 60, color: bool = False) -> str:
        """The diff as text; longer than ``max_lines``: cut, with how many lines were left."""
        if self.summary:
            return self.summary
        if not self.lines:
            return f"{self.path}: no change"
        shown = list(self.lines[:max_lines])
        if color:
            shown = [_paint(line) for line in shown]
        text = "\n".join(shown)
        left = len(self.lines) - len(shown)
        if left > 0:
            lines = "diff line" if left == 1 else "diff lines"
            text += f"\n… {left} more {lines} (+{self.added} -{self.removed} in all)"
        return text


def _paint(line: str) -> str:
    if line.startswith(("+++", "---")):
        return f"{_BOLD}{line}{_RESET}"
    if line.startswith("@@"):
        return f"{_CYAN}{line}{_RESET}"
    if line.startswith("+"):
        return f"{_GREEN}{line}{_RESET}"
    if line.startswith("-"):
        return f"{_RED}{line}{_RESET}"
    return line


def unified(before: str | None, after: str, path: str, *, context: int = 3) -> Diff:
    """The unified diff from ``before`` (None: the file does not exist) to ``after``."""
    created = before is None
    old = before or ""
    if len(old) > MAX_DIFF_CHARS or len(after) > MAX_DIFF_CHARS:
        return Diff(
            path,
            (),
            0,
            0,
            created,
            summary=f"{path}: {len(old)} → {len(after)} characters (too large to show as a diff)",
        )
    a = old.splitlines()
    b = after.splitlines()
    raw = difflib.unified_diff(
        a,
        b,
        fromfile="/dev/null" if created else f"a/{path}",
        tofile=f"b/{path}",
        n=context,
        lineterm="",
    )
    lines: list[str] = []
    added = removed = 0
    for line in raw:
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
        lines.append(line)
    if old.endswith("\n") != after.endswith("\n") and lines and (a or b):
        lines.append("\\ the final newline changed")
    return Diff(path, tuple(lines), added, removed, created)
