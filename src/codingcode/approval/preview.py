"""What an ``edit_file``/``write_file`` call will change, computed before anyone is asked.

:func:`preview` reads the file (a regular file only, bounded) and applies the edit in
memory exactly as the tool will (``tools.builtin.fs.apply_edit``: CRLF, BOM, encodings), so
the confirmation shows the real diff and an edit that would fail (old_string missing or
found 3 times) is reported to the model without asking anyone.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codingcode.diffs import MAX_DIFF_CHARS, Diff, unified
from codingcode.errors import AgentError

EDIT_TOOLS = ("edit_file", "write_file")


@dataclass(frozen=True)
class Preview:
    diff: Diff | None
    #: The tool's own error, when the call would fail (nothing would change).
    error: str | None = None


def _shown(path: Path, project: Path) -> str:
    try:
        return str(path.relative_to(project))
    except ValueError:
        return str(path)


def _read_text(path: Path) -> tuple[bytes | None, str | None]:
    """(bytes, None) for a readable regular file, (None, None) when absent, else an error."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror}"
    if stat.S_ISDIR(st.st_mode):
        return None, "is a directory"
    if not stat.S_ISREG(st.st_mode):
        return None, "is not a regular file"
    if st.st_size > MAX_DIFF_CHARS:
        return None, "too large"
    try:
        with open(path, "rb") as f:
            return f.read(MAX_DIFF_CHARS + 1), None
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror}"


def preview(tool: str, args: dict[str, Any], project: Path) -> Preview | None:
    """The change an edit/write call will make; None for other tools or what cannot be read."""
    if tool not in EDIT_TOOLS or not isinstance(args.get("path"), str):
        return None
    from codingcode.tools.builtin.fs import apply_edit, decode_text

    path = Path(os.path.normpath(project / Path(args["path"]).expanduser()))
    shown = _shown(path, project)
    raw, problem = _read_text(path)
    if tool == "write_file":
        if problem == "is a directory":
            return Preview(None, f"{shown} is a directory; write_file writes files.")
        if problem is not None:
            return None
        content = str(args.get("content", ""))
        before = decode_text(raw)[0] if raw is not None else None
        return Preview(unified(before, content, shown))
    # edit_file
    if problem == "is a directory":
        return Preview(None, f"{shown} is a directory; edit_file edits files.")
    if problem is not None:
        return None
    if raw is None:
        return Preview(None, f"File not found: {shown}. To create a file, use write_file.")
    try:
        data, _, _ = apply_edit(
            raw, str(args.get("old_string", "")), str(args.get("new_string", "")), shown
        )
    except AgentError as exc:
        return Preview(None, exc.message)
    text_before = decode_text(raw)[0].replace("\r\n", "\n")
    text_after = decode_text(data)[0].replace("\r\n", "\n")
    return Preview(unified(text_before, text_after, shown))


def snapshot(tool: str, args: dict[str, Any], project: Path) -> str | None:
    """The file's text before a change (for the diff after it); None when absent/unreadable."""
    if tool not in EDIT_TOOLS or not isinstance(args.get("path"), str):
        return None
    from codingcode.tools.builtin.fs import decode_text

    path = Path(os.path.normpath(project / Path(args["path"]).expanduser()))
    raw, _ = _read_text(path)
    return decode_text(raw)[0].replace("\r\n", "\n") if raw is not None else None


def applied_diff(tool: str, args: dict[str, Any], project: Path, before: str | None) -> Diff | None:
    """What a change that ran did: the file now against ``before``."""
    if tool not in EDIT_TOOLS or not isinstance(args.get("path"), str):
        return None
    from codingcode.tools.builtin.fs import decode_text

    path = Path(os.path.normpath(project / Path(args["path"]).expanduser()))
    raw, _ = _read_text(path)
    if raw is None:
        return None
    return unified(before, decode_text(raw)[0].replace("\r\n", "\n"), _shown(path, project))
