"""MCP results as the text the model sees.

Text as text, ``structuredContent`` as JSON, images/audio/resources described (never their
base64), ``isError`` as a :class:`ToolFailureError`. A result longer than
:data:`MAX_RESULT_CHARS` is cut there, and the whole of it is kept in a file under the
user's state directory (:func:`spill_dir`), whose path the model is told so it can read the
rest. Only the newest :data:`KEEP_SPILLS` such files are kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import mcp_types as types

from codingcode.errors import ToolFailureError

#: Cap on the text a single MCP result may put in front of the model.
MAX_RESULT_CHARS = 100_000
#: How many whole results (the files of cut results) are kept; older ones are removed.
KEEP_SPILLS = 50
_WRITE_CHARS = 4 << 20


def spill_dir() -> Path:
    from codingcode.config import user_state_dir

    return user_state_dir() / "mcp-results"


def _describe_block(block: Any) -> str | None:
    """A non-text content block as one line: what it is, never its bytes."""
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, (types.ImageContent, types.AudioContent)):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        size = len(block.data) * 3 // 4  # base64 -> bytes, near enough
        return f"[{kind}: {block.mime_type}, about {size} bytes, not shown]"
    if isinstance(block, types.ResourceLink):
        mime = f", {block.mime_type}" if block.mime_type else ""
        about = f" — {block.description}" if block.description else ""
        return f"[resource link: {block.name} <{block.uri}>{mime}]{about}"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        mime = f", {res.mime_type}" if res.mime_type else ""
        if isinstance(res, types.TextResourceContents):
            return f"[resource <{res.uri}>{mime}]\n{res.text}"
        size = len(res.blob) * 3 // 4
        return f"[resource <{res.uri}>{mime}: about {size} bytes of binary data, not shown]"
    return f"[{getattr(block, 'type', type(block).__name__)} content, not shown]"


_BASE64 = re.compile(r"^[A-Za-z0-9+/_-]{64,}={0,2}$")


def _scrub(value: Any) -> Any:
    """Structured content with base64 payloads replaced by a note of their size."""
    if isinstance(value, str) and _BASE64.match(value):
        return f"[about {len(value) * 3 // 4} bytes of base64 data, not shown]"
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


_JSONISH = re.compile(r"\s*[\[{]")


def _is_json_of(text: str, value: Any) -> bool:
    if not _JSONISH.match(text):  # cheap, no copy: most text is not JSON at all
        return False
    try:
        return bool(json.loads(text) == value)
    except (ValueError, TypeError, RecursionError):
        return False


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:80] or "result"


def spill(tool_name: str, text: str) -> Path | None:
    """Keep ``text`` in a new private file under :func:`spill_dir`; None if that failed."""
    directory = spill_dir()
    path = directory / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{_safe_name(tool_name)}"
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        for n in range(1000):
            candidate = path.with_name(f"{path.name}-{n}.txt")
            try:
                fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            break
        else:
            return None
        try:
            with os.fdopen(fd, "wb") as f:
                for i in range(0, len(text), _WRITE_CHARS):  # no whole-text encoded copy
                    f.write(text[i : i + _WRITE_CHARS].encode("utf-8", "replace"))
        except OSError:
            with contextlib.suppress(OSError):
                candidate.unlink()
            return None
    except OSError:
        return None
    _prune(directory)
    return candidate


def _prune(directory: Path) -> None:
    with contextlib.suppress(OSError):
        files = sorted(
            (p for p in directory.iterdir() if p.suffix == ".txt"),
            key=lambda p: p.stat().st_mtime,
        )
        for old in files[:-KEEP_SPILLS]:
            with contextlib.suppress(OSError):
                old.unlink()


def cap_text(tool_name: str, text: str) -> str:
    """``text`` if it fits, else its head and where the whole of it was kept."""
    if len(text) <= MAX_RESULT_CHARS:
        return text
    more = len(text) - MAX_RESULT_CHARS
    path = spill(tool_name, text)
    where = (
        f"the whole result ({len(text):,} characters) is in {path}; read it in parts there"
        if path is not None
        else "the whole result could not be kept (the state directory is not writable)"
    )
    return text[:MAX_RESULT_CHARS] + f"\n[... cut: {more:,} more characters; {where}]"


def render_result(tool_name: str, result: types.CallToolResult) -> str:
    """The text the model sees for an MCP result; raises ToolFailureError for isError."""
    parts: list[str] = []
    structured = result.structured_content
    texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
    if (
        isinstance(structured, dict)
        and list(structured) == ["result"]
        and structured["result"] in texts
    ):
        # SDK servers wrap a plain string return as {"result": text} beside the text itself.
        structured = None
    if structured is not None and not result.is_error:
        parts.append(json.dumps(_scrub(structured), ensure_ascii=False, indent=2))
    for block in result.content:
        # A text block that only repeats the structured content as JSON is left out.
        if (
            structured is not None
            and isinstance(block, types.TextContent)
            and _is_json_of(block.text, structured)
        ):
            continue
        line = _describe_block(block)
        if line:
            parts.append(line)
    text = cap_text(tool_name, "\n".join(parts))
    if result.is_error:
        raise ToolFailureError(f"{tool_name} failed: {text or '(the server gave no message)'}")
    return text or "(no output)"
