"""What the model is told about an output too long to show whole: the one wording.

An output is cut once, to its head and tail, by whoever holds it whole (the session's spill
for any tool's result, ``execute_command`` for a command's streams, which it saves while
they run); the note between the two parts gives the real size, in bytes and lines, and the
file holding the whole of it, with how to read on from where the head stops.
"""

from __future__ import annotations

import re
from pathlib import Path


def plural(n: int, word: str) -> str:
    """``1 line``, ``2 lines`` (thousands separated)."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def cut_note(
    *,
    what: str,
    left_bytes: int,
    left_lines: int,
    total_bytes: int,
    total_lines: int,
    path: Path | None,
    next_line: int,
    saved_bytes: int | None = None,
    why_not_saved: str = "",
) -> str:
    """The line that stands where an output was cut (between its head and its tail)."""
    text = (
        f"[... output cut: {plural(left_bytes, 'byte')} ({plural(left_lines, 'line')}) not "
        f"shown. The whole {what} is {plural(total_bytes, 'byte')}, "
        f"{plural(total_lines, 'line')}"
    )
    if path is None:
        why = f": {why_not_saved}" if why_not_saved else ""
        return text + f"; it was not saved{why}. Run it again with less output.]"
    if saved_bytes is not None and saved_bytes < total_bytes:
        text += (
            f"; its first {plural(saved_bytes, 'byte')} are saved in {path} (the saved copy "
            "stops at that cap; the end shown below is the real end)"
        )
    else:
        text += f"; all of it is saved in {path}"
    return (
        text + f" — read it with read_file (path={str(path)!r}, offset={next_line}, "
        "limit=...) or search it with search_code.]"
    )


_NOTE = re.compile(
    r"\[\.\.\. output cut: .*? The whole (\w+) is ([\d,]+) bytes?, ([\d,]+) lines?"
    r"(?:; (?:all of it is|its first [\d,]+ bytes? are) saved in (\S+))?"
)


def real_sizes(text: str) -> list[tuple[str, int, int, str]]:
    """(what, bytes, lines, saved path or "") of each cut note in a result (for the app)."""
    return [
        (m[1], int(m[2].replace(",", "")), int(m[3].replace(",", "")), m[4] or "")
        for m in _NOTE.finditer(text)
    ]
