"""What the audit stores of a call's arguments: long values shortened, secrets redacted."""

from __future__ import annotations

import re
from typing import Any

#: Characters of one value kept; a longer one is cut with its full length said.
MAX_VALUE_CHARS = 200
#: Nesting deeper than this is stored as a note (a record stays small and readable).
MAX_DEPTH = 20


def shorten(value: Any, limit: int = MAX_VALUE_CHARS, depth: int = 0) -> Any:
    """Arguments as stored: long strings cut with their full length said, deep nesting cut."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return value[:limit] + f"... [{len(value)} characters]"
    if isinstance(value, (dict, list)) and depth >= MAX_DEPTH:
        return f"... [nested deeper than {MAX_DEPTH} levels]"
    if isinstance(value, dict):
        return {k: shorten(v, limit, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        shown = [shorten(v, limit, depth + 1) for v in value[:20]]
        if len(value) > 20:
            shown.append(f"... [{len(value)} items]")
        return shown
    return value


#: Argument names whose values are secrets, and secrets inside text (tokens, passwords).
_SECRET_KEY = re.compile(
    r"(?i)(pass(word|wd)?|secret|token|api[_-]?key|auth(orization)?|cookie|credential)"
)
_SECRET_TEXT = re.compile(
    r"(?i)(?P<keep>(?:authorization:\s*)?bearer\s+|(?:pass(?:word|wd)?|secret|token|api[_-]?key)"
    r"[\"']?\s*[=:]\s*[\"']?)(?P<value>[^\s\"'&]{4,})"
    r"|(?P<bare>\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}"
    r"|xox[abpr]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{16,})\b)"
)
REDACTED = "[redacted]"


def redact(value: Any, key: str = "") -> Any:
    """Arguments as stored: secrets replaced by ``[redacted]`` (names and values that look
    like credentials: passwords, tokens, API keys, Bearer headers)."""
    if isinstance(value, str):
        if key and _SECRET_KEY.search(key) and value:
            return REDACTED
        return _SECRET_TEXT.sub(
            lambda m: REDACTED if m.group("bare") else m.group("keep") + REDACTED, value
        )
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    return value
