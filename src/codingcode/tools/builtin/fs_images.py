"""read_file on an image, for a caller that can show one (a call through ``codingcode mcp``).

The result is a :class:`~codingcode.tools.content.ContentResult`: a line naming the image
and an MCP image block (base64). Only PNG, JPEG, GIF and WebP whose bytes say so, at most
:data:`MAX_IMAGE_BYTES`; anything else is read as text, as before.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from codingcode.errors import ToolFailureError
from codingcode.tools.content import ContentResult, content_result

MAX_IMAGE_BYTES = 5 * 1024 * 1024
_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


def image_type(path: Path) -> str | None:
    """The image MIME type the name suggests, if it is one read_file can return as an image."""
    mime = mimetypes.guess_type(path.name)[0]
    return mime if mime in _MAGIC else None


def read_image(
    path: Path, shown: str, mime: str, opener: Callable[[Path, str], BinaryIO]
) -> ContentResult | None:
    """The image as content blocks; None when its bytes are not that image (read as text).
    ``opener`` opens the file as read_file does (never blocking on a FIFO)."""
    with opener(path, shown) as f:
        data = f.read(MAX_IMAGE_BYTES + 1)
    if len(data) > MAX_IMAGE_BYTES:
        raise ToolFailureError(
            f"{shown} is an image larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MiB; "
            "read_file returns images up to that size."
        )
    if not data.startswith(_MAGIC[mime]) or (mime == "image/webp" and data[8:12] != b"WEBP"):
        return None
    return content_result(
        "read_file",
        [
            {"type": "text", "text": f"{shown}: {mime} image, {len(data)} bytes"},
            {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime},
        ],
    )
