"""Placeholder replacement in a byte stream, chunk by chunk (never the whole body at once).

A :class:`Rewriter` has a table ``needle -> replacement`` (``None``: only note that it was
seen). Each chunk is joined to the tail kept from the one before (one byte less than the
longest needle), so a needle split across two chunks is still found; what cannot start a
needle any more is passed on at once. Needles are found with ``bytes.find`` (a C scan), so
a chunk that holds none costs a few passes at memory speed.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping


class Rewriter:
    def __init__(
        self,
        table: Mapping[bytes, bytes | None],
        on_match: Callable[[bytes, bool], None] | None = None,
    ) -> None:
        self.table = {k: v for k, v in table.items() if k}
        self.on_match = on_match
        self.keep = max((len(k) for k in self.table), default=1) - 1
        self.tail = b""

    def _apply(self, buf: bytes, cut: int) -> tuple[bytes, int]:
        """Rewrite the needles of ``buf`` that start before ``cut``: (output, end consumed)."""
        hits: list[tuple[int, bytes]] = []
        for needle in self.table:
            start = buf.find(needle)
            while 0 <= start < cut:
                hits.append((start, needle))
                start = buf.find(needle, start + len(needle))
        if not hits:
            return buf[:cut], cut
        hits.sort(key=lambda h: (h[0], -len(h[1])))
        out: list[bytes] = []
        pos = 0
        for start, needle in hits:
            if start < pos:
                continue
            out.append(buf[pos:start])
            replacement = self.table[needle]
            if self.on_match is not None:
                self.on_match(needle, replacement is not None)
            out.append(needle if replacement is None else replacement)
            pos = start + len(needle)
        end = max(pos, cut)
        out.append(buf[pos:end])
        return b"".join(out), end

    def feed(self, chunk: bytes) -> bytes:
        if not self.table:
            return chunk
        buf = self.tail + chunk if self.tail else chunk
        cut = len(buf) - self.keep
        if cut <= 0:
            self.tail = buf
            return b""
        out, end = self._apply(buf, cut)
        self.tail = buf[end:]
        return out

    def flush(self) -> bytes:
        buf, self.tail = self.tail, b""
        if not buf:
            return b""
        return self._apply(buf, len(buf))[0]

    def whole(self, data: bytes) -> bytes:
        """``data`` rewritten at once (a header value)."""
        return self.feed(data) + self.flush()


def rewrite_header(name: bytes, value: bytes, rewriter: Rewriter) -> bytes:
    """A header value rewritten; a ``Basic`` authorization is decoded, rewritten inside (git
    sends ``user:token`` that way) and encoded again."""
    value = rewriter.whole(value)
    if name.lower() in (b"authorization", b"proxy-authorization"):
        scheme, _, encoded = value.partition(b" ")
        if scheme.lower() == b"basic" and encoded:
            try:
                decoded = base64.b64decode(encoded.strip(), validate=True)
            except (binascii.Error, ValueError):
                return value
            changed = rewriter.whole(decoded)
            if changed != decoded:
                return scheme + b" " + base64.b64encode(changed)
    return value
