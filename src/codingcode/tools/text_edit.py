"""Editing a file's text the way every writing tool does, and the preview approval shows.

One place says what an edit of a text file is (the BOM and the encoding kept, CRLF files
edited in LF space, ``old_string`` found exactly once): ``edit_file`` applies it, and the
approval's preview (``Declaration.edit_preview``) shows the same change before anyone is
asked, for any tool that declares it writes a file's content.
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from codingcode.errors import InvalidArgumentsError

#: How much of a file's start decides whether it looks binary.
SNIFF_BYTES = 8192


def looks_binary(head: bytes) -> bool:
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    return b"\x00" in head


_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def decode_text(raw: bytes) -> tuple[str, bytes, str]:
    """Decode a file's bytes; return (text, BOM, encoding) so it can be re-encoded as it was."""
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            return raw[len(bom) :].decode(encoding), bom, encoding
    try:
        return raw.decode("utf-8"), b"", "utf-8"
    except UnicodeDecodeError:
        # latin-1 maps every byte to a character and back: the file's bytes survive the edit.
        return raw.decode("latin-1"), b"", "latin-1"


def _occurrences(text: str, needle: str) -> list[int]:
    found, start = [], 0
    while (i := text.find(needle, start)) != -1:
        found.append(i)
        start = i + 1
    return found


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def apply_edit(raw: bytes, old: str, new: str, shown: str) -> tuple[bytes, int, int]:
    """Return (new bytes, line of the change, lines in new_string) or raise a clear error."""
    if looks_binary(raw[:SNIFF_BYTES]):
        raise InvalidArgumentsError(f"{shown} looks like a binary file; edit_file edits text.")
    text, bom, encoding = decode_text(raw)
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    if crlf:  # edit in LF space, write back CRLF: the model's \n matches the file's \r\n
        text = text.replace("\r\n", "\n")
        old = old.replace("\r\n", "\n")
        new = new.replace("\r\n", "\n")
    if old == new:
        raise InvalidArgumentsError("old_string and new_string are the same; nothing to change.")
    hits = _occurrences(text, old)
    if not hits:
        hint = ""
        first = old.strip().split("\n", 1)[0].strip()
        if first:
            near = [str(n) for n, line in enumerate(text.split("\n"), 1) if first in line][:5]
            if near:
                hint = (
                    f" Its first line appears on line(s) {', '.join(near)}; check the "
                    "whitespace and the following lines (read_file shows them)."
                )
        raise InvalidArgumentsError(
            f"old_string was not found in {shown}.{hint} The file is unchanged."
        )
    if len(hits) > 1:
        lines = ", ".join(str(_line_of(text, i)) for i in hits[:10])
        more = "" if len(hits) <= 10 else f" and {len(hits) - 10} more"
        raise InvalidArgumentsError(
            f"old_string occurs {len(hits)} times in {shown} (lines {lines}{more}); it must occur "
            "exactly once. Include more surrounding context. The file is unchanged."
        )
    at = hits[0]
    result = text[:at] + new + text[at + len(old) :]
    if crlf:
        result = result.replace("\n", "\r\n")
    try:
        encoded = result.encode(encoding)
    except UnicodeEncodeError:
        raise InvalidArgumentsError(
            f"new_string has characters that {shown}'s encoding ({encoding}) cannot hold."
        ) from None
    return bom + encoded, _line_of(text, at), new.count("\n") + 1


@dataclass(frozen=True)
class EditPreview:
    """What a call of a tool that declares it writes a file will change: the arguments that
    name the file, the new content, and (an edit) the text the content replaces."""

    path: str
    content: str
    #: The argument with the text an edit replaces; None for a write of the whole file.
    old: str | None

    def after(self, raw: bytes, args: Mapping[str, Any], shown: str) -> bytes:
        """The file's bytes after the call (an edit: raises the tool's own error when it
        would fail); the new content encoded as UTF-8 for a write."""
        content = str(args.get(self.content, ""))
        if self.old is None:
            return content.encode("utf-8", "surrogateescape")
        return apply_edit(raw, str(args.get(self.old, "")), content, shown)[0]


def text_of(raw: bytes) -> str:
    """A file's text as the preview compares it (decoded as the tools do, LF line ends)."""
    return decode_text(raw)[0].replace("\r\n", "\n")
