"""Large tool outputs: saved whole to the session's directory, a preview sent to the model.

An output longer than the limit (setting ``toolOutputLimit``) is written atomically to
``<session dir>/outputs/<call id>.txt``; the model gets its head and tail, the number of
characters and lines left out, and the path (``read_file`` reads it with offset/limit).
If the file cannot be written (disk full, ...), the whole output is sent: nothing is lost.
"""

from __future__ import annotations

import re
from pathlib import Path

from codingcode.atomic import atomic_write_bytes

#: Shares of the limit the preview shows from the start and the end of the output.
HEAD_SHARE = 0.4
TAIL_SHARE = 0.2


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:80] or "call"


def _cut_head(text: str, size: int) -> str:
    head = text[:size]
    nl = head.rfind("\n")
    return head[: nl + 1] if nl > size // 2 else head


def _cut_tail(text: str, size: int) -> str:
    tail = text[-size:] if size else ""
    nl = tail.find("\n")
    return tail[nl + 1 :] if 0 <= nl < size // 2 else tail


def spill_output(
    content: str, *, limit: int, directory: Path, call_id: str, tool: str
) -> tuple[str, Path | None]:
    """(what the model gets, the file holding the whole output or None if not cut)."""
    if len(content) <= limit:
        return content, None
    path = directory / f"{_safe(call_id)}-{_safe(tool)}.txt"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, content.encode("utf-8", errors="surrogatepass"))
    except OSError:
        return content, None
    head = _cut_head(content, int(limit * HEAD_SHARE))
    tail = _cut_tail(content, int(limit * TAIL_SHARE))
    left = content[len(head) : len(content) - len(tail)]
    lines = content.count("\n") + 1
    head_lines = head.count("\n")
    note = (
        f"\n[... output cut: {len(left)} characters ({left.count(chr(10))} lines) not shown. "
        f"The whole output ({len(content)} characters, {lines} lines) is saved in {path} — "
        f"read it with read_file (path={str(path)!r}, offset={head_lines + 1}, limit=...) "
        "or search it with search_code ...]\n"
    )
    return head + note + tail, path
