"""Bash word expansion done statically: quotes, escapes, ``$'...'``, braces, ``~``."""

from __future__ import annotations

import posixpath
import shlex


def expand_tilde(head: str) -> str:
    try:
        return posixpath.expanduser(head)
    except (ValueError, KeyError):
        return head


def unescape_unquoted(raw: str, parts: list[tuple[str, bool]]) -> None:
    buf: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            if raw[i + 1] != "\n":
                if buf:
                    parts.append(("".join(buf), False))
                    buf = []
                parts.append((raw[i + 1], True))
            i += 2
            continue
        buf.append(c)
        i += 1
    if buf:
        parts.append(("".join(buf), False))


def unescape_double(raw: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw) and raw[i + 1] in '$`"\\\n':
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


_SIMPLE_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def decode_ansi_c(body: str) -> str:
    """The value of ``$'...'`` (bash's ANSI-C quoting)."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[nxt])
            i += 2
        elif nxt == "x":
            digits = _take(body, i + 2, "0123456789abcdefABCDEF", 2)
            out.append(chr(int(digits, 16)) if digits else "\\x")
            i += 2 + len(digits)
        elif nxt in "uU":
            digits = _take(body, i + 2, "0123456789abcdefABCDEF", 4 if nxt == "u" else 8)
            try:
                out.append(chr(int(digits, 16)) if digits else "\\" + nxt)
            except (ValueError, OverflowError):
                out.append("")
            i += 2 + len(digits)
        elif nxt in "01234567":
            digits = _take(body, i + 1, "01234567", 3)
            out.append(chr(int(digits, 8) & 0xFF))
            i += 1 + len(digits)
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


def _take(s: str, start: int, allowed: str, limit: int) -> str:
    end = start
    while end < len(s) and end - start < limit and s[end] in allowed:
        end += 1
    return s[start:end]


def expand_braces(text: str, limit: int = 256) -> list[str]:
    """Bash brace expansion of ``a{b,c}d`` and ``{1..3}`` (bounded)."""
    start = -1
    depth = 0
    for i, c in enumerate(text):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                body = text[start + 1 : i]
                alts = _split_top(body)
                if len(alts) == 1:
                    rng = _range(body)
                    if rng is None:
                        continue
                    alts = rng
                head, tail = text[:start], text[i + 1 :]
                out: list[str] = []
                for alt in alts:
                    for rest in expand_braces(head + alt + tail, limit):
                        out.append(rest)
                        if len(out) >= limit:
                            return out
                return out
    return [text]


def _split_top(body: str) -> list[str]:
    alts: list[str] = []
    cur: list[str] = []
    depth = 0
    for c in body:
        if c == "," and depth == 0:
            alts.append("".join(cur))
            cur = []
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        cur.append(c)
    alts.append("".join(cur))
    return alts


def _range(body: str) -> list[str] | None:
    a, sep, b = body.partition("..")
    if not sep:
        return None
    if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
        x, y = int(a), int(b)
        step = 1 if y >= x else -1
        if abs(y - x) > 256:
            return None
        return [str(v) for v in range(x, y + step, step)]
    if len(a) == 1 and len(b) == 1:
        x, y = ord(a), ord(b)
        step = 1 if y >= x else -1
        return [chr(v) for v in range(x, y + step, step)]
    return None


def fallback_words(text: str) -> list[str]:
    try:
        tokens = shlex.split(text, comments=False, posix=True)
    except ValueError:
        tokens = text.split()
    words: list[str] = []
    for tok in tokens:
        for piece in expand_braces(tok):
            for part in piece.replace("{", " ").replace("}", " ").replace(";", " ").split():
                words.append(part)
    return words
