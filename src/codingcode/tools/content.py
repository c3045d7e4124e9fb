"""A tool result made of MCP content blocks (text, image, audio, resource, resource_link).

A custom tool may return a list of content blocks in MCP wire form instead of a string
(``[{"type": "image", "data": ..., "mimeType": "image/png"}, ...]``). The service turns it
into a :class:`ContentResult`: a ``str`` — what the agent, the audit and every text front
end see, one readable line per block — that keeps the blocks, which ``codingcode mcp``
serves unchanged.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from codingcode.errors import ToolFailureError

#: The block kinds MCP defines (2025-11-25).
BLOCK_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})
#: At most this many blocks in one result.
MAX_BLOCKS = 1000


class ContentResult(str):
    """The text form of a result whose MCP content blocks are kept in :attr:`blocks`."""

    blocks: tuple[dict[str, Any], ...]

    def __new__(cls, text: str, blocks: list[dict[str, Any]]) -> ContentResult:
        made = super().__new__(cls, text)
        made.blocks = tuple(blocks)
        return made


def _b64_size(data: Any) -> int:
    if not isinstance(data, str):
        return -1
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return -1


def _describe(block: dict[str, Any]) -> str:
    kind = block["type"]
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        size = _b64_size(block.get("data"))
        return f"[{kind}: {block.get('mimeType', '?')}, {size} bytes]"
    if kind == "resource_link":
        return f"[resource link: {block.get('uri', '?')}]"
    resource = block.get("resource") or {}
    if isinstance(resource.get("text"), str):
        return f"[resource {resource.get('uri', '?')}]\n{resource['text']}"
    size = _b64_size(resource.get("blob"))
    return f"[resource {resource.get('uri', '?')}: {resource.get('mimeType', '?')}, {size} bytes]"


def content_result(tool: str, blocks: list[Any]) -> ContentResult:
    """Check ``blocks`` (a tool's returned list) and make its :class:`ContentResult`."""
    if len(blocks) > MAX_BLOCKS:
        raise ToolFailureError(
            f"{tool} returned {len(blocks)} content blocks; at most {MAX_BLOCKS}."
        )
    checked: list[dict[str, Any]] = []
    for i, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
            raise ToolFailureError(
                f"{tool} returned a list whose item {i} is not an MCP content block (a dict "
                f"with type one of {', '.join(sorted(BLOCK_TYPES))})."
            )
        if block["type"] == "text" and not isinstance(block.get("text"), str):
            raise ToolFailureError(f"{tool}: text block {i} has no string 'text'.")
        if block["type"] in ("image", "audio") and _b64_size(block.get("data")) < 0:
            raise ToolFailureError(f"{tool}: {block['type']} block {i} has no base64 'data'.")
        if block["type"] == "resource" and not isinstance(block.get("resource"), dict):
            raise ToolFailureError(f"{tool}: resource block {i} has no 'resource' object.")
        checked.append(block)
    return ContentResult("\n".join(_describe(b) for b in checked), checked)
