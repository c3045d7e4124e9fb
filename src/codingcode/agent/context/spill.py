"""Large tool outputs: saved whole to the session's directory, a preview sent to the model.

An output longer than the limit (setting ``toolOutputLimit``) is written atomically to
``<session dir>/outputs/<call id>.txt``; the model gets its head and tail, the bytes and
lines left out, the real size and the path (``read_file`` reads it with offset/limit). This
is the one cut of a result: a tool that cut its own output to the same budget (a command's
streams, saved while they ran) is not cut again.
If the file cannot be written (disk full, ...), the whole output is sent: nothing is lost.
"""

from __future__ import annotations

import re
from pathlib import Path

from codingcode.atomic import atomic_write_bytes
from codingcode.tools.output import cut_note

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
    whole = len(content.encode("utf-8", errors="surrogatepass"))
    lines = content.count("\n") + (0 if content.endswith("\n") else 1)
    note = cut_note(
        what="output",
        left_bytes=len(left.encode("utf-8", errors="surrogatepass")),
        left_lines=left.count("\n"),
        total_bytes=whole,
        total_lines=lines,
        path=path,
        next_line=head.count("\n") + 1,
    )
    return f"{head}\n{note}\n{tail}", path
