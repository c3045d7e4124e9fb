"""What a call that writes a file (``edit_file``, ``write_file``, or any tool declaring the
same argument roles) will change, computed before anyone is asked.

What a call changes is the tool's declared preview (``Declaration.edit_preview``): a tool
whose declared effects include ``writes``, with a ``path`` argument and a ``content``
argument, writes that content (a whole file); with an ``old_text`` argument too, it
replaces that text with the content (an edit). What the tool is called does not matter.

:func:`preview` reads the file (a regular file only, bounded) and applies the edit in
memory exactly as the tools do (``codingcode.tools.text_edit``: CRLF, BOM, encodings), so
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
from codingcode.tools.declarations import Declaration, builtin_declaration
from codingcode.tools.text_edit import EditPreview, decode_text, text_of


def _change(tool: str, args: dict[str, Any], declared: Declaration | None) -> EditPreview | None:
    found = declared if declared is not None else builtin_declaration(tool)
    change = found.edit_preview if found is not None else None
    if change is None or not isinstance(args.get(change.path), str):
        return None
    return change


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


def preview(
    tool: str, args: dict[str, Any], project: Path, declared: Declaration | None = None
) -> Preview | None:
    """The change a call that writes a file will make; None for other calls or what cannot
    be read. ``declared``: the tool's declaration (default: the built-in's of that name)."""
    change = _change(tool, args, declared)
    if change is None:
        return None
    path = Path(os.path.normpath(project / Path(args[change.path]).expanduser()))
    shown = _shown(path, project)
    raw, problem = _read_text(path)
    if change.old is None:  # a write of the whole file
        if problem == "is a directory":
            return Preview(None, f"{shown} is a directory; {tool} writes files.")
        if problem is not None:
            return None
        content = str(args.get(change.content, ""))
        before = decode_text(raw)[0] if raw is not None else None
        return Preview(unified(before, content, shown))
    # an edit: old text replaced by the content
    if problem == "is a directory":
        return Preview(None, f"{shown} is a directory; {tool} edits files.")
    if problem is not None:
        return None
    if raw is None:
        return Preview(None, f"File not found: {shown}. To create a file, use write_file.")
    try:
        data = change.after(raw, args, shown)
    except AgentError as exc:
        return Preview(None, exc.message)
    return Preview(unified(text_of(raw), text_of(data), shown))


def snapshot(
    tool: str, args: dict[str, Any], project: Path, declared: Declaration | None = None
) -> str | None:
    """The file's text before a change (for the diff after it); None when absent/unreadable."""
    change = _change(tool, args, declared)
    if change is None:
        return None
    path = Path(os.path.normpath(project / Path(args[change.path]).expanduser()))
    raw, _ = _read_text(path)
    return text_of(raw) if raw is not None else None


def applied_diff(
    tool: str,
    args: dict[str, Any],
    project: Path,
    before: str | None,
    declared: Declaration | None = None,
) -> Diff | None:
    """What a change that ran did: the file now against ``before``."""
    change = _change(tool, args, declared)
    if change is None:
        return None
    path = Path(os.path.normpath(project / Path(args[change.path]).expanduser()))
    raw, _ = _read_text(path)
    if raw is None:
        return None
    return unified(before, text_of(raw), _shown(path, project))
