"""Placeholders: random strings of the same shape as a secret, unique per session.

Each character class is kept (a digit stays a digit, a lower-case letter a lower-case
letter, an upper-case letter an upper-case letter; punctuation stays as it is) and so is a
token's well-known prefix (``ghp_``, ``npm_``, ``pypi-``, ``AKIA`` ...), so a tool that checks
a token's format before sending it still accepts the placeholder.
"""

from __future__ import annotations

import re
import secrets
import string

#: Prefixes that say which service a token belongs to (kept as they are).
KNOWN_PREFIXES = (
    "github_pat_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "glpat-",
    "npm_",
    "pypi-",
    "AKIA",
    "ASIA",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "sk-ant-",
    "sk-proj-",
    "sk-",
    "hf_",
    "dckr_pat_",
)
#: Shorter secrets are still masked, but a placeholder this short may also occur by chance
#: in a request body (where it would be replaced): said by ``sandbox status``.
MIN_DISTINCT_LENGTH = 8
_CLASSES = (string.digits, string.ascii_lowercase, string.ascii_uppercase)
_PREFIX = re.compile("|".join(re.escape(p) for p in KNOWN_PREFIXES))


def _prefix(value: str) -> str:
    m = _PREFIX.match(value)
    return m.group(0) if m is not None else ""


def same_shape(value: str) -> str:
    """A fresh random string shaped like ``value`` (never equal to it when it has any letter
    or digit after its prefix)."""
    for _ in range(16):
        prefix = _prefix(value)
        out = [prefix]
        for ch in value[len(prefix) :]:
            for cls in _CLASSES:
                if ch in cls:
                    out.append(secrets.choice(cls))
                    break
            else:
                out.append(ch)
        made = "".join(out)
        if made != value:
            return made
    raise ValueError("a secret made only of punctuation has no placeholder")


class Placeholders:
    """The session's placeholders: one real value always gets the same placeholder (so a
    placeholder a command kept stays good for the whole session), no two values share one."""

    def __init__(self) -> None:
        self._by_real: dict[str, str] = {}
        self._taken: set[str] = set()

    def for_value(self, real: str) -> str:
        known = self._by_real.get(real)
        if known is not None:
            return known
        while True:
            made = same_shape(real)
            # Never a placeholder that is (or holds) another secret or placeholder.
            if made in self._taken or made in self._by_real or real in made:
                continue
            self._by_real[real] = made
            self._taken.add(made)
            return made
