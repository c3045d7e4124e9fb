"""Helpers the program grammars share: option splitting, literal words, parts."""

from __future__ import annotations

import re
from typing import Any

from codingcode.shell.model import DYN, Word, literal_word

Part = tuple[str, Any]


def split_opts(
    words: list[Word], with_arg: frozenset[str], *, stop_at_positional: int = 1
) -> tuple[dict[str, list[Word]], list[Word]]:
    """Options (name → values) and the words from the ``stop_at_positional``-th positional
    word on. ``--opt=value`` and ``-oVALUE`` forms are understood for ``with_arg`` names."""
    opts: dict[str, list[Word]] = {}
    i = 0
    positional_seen = 0
    while i < len(words):
        w = words[i]
        t = w.text
        if t == "--":
            return opts, words[i + 1 :]
        if t.startswith("-") and len(t) > 1 and not w.dynamic:
            name, eq, val = t.partition("=")
            if eq and name.startswith("--"):
                opts.setdefault(name, []).append(literal_word(val) if not w.dynamic else w)
                i += 1
                continue
            if t in with_arg:
                if i + 1 < len(words):
                    opts.setdefault(t, []).append(words[i + 1])
                i += 2
                continue
            if not t.startswith("--") and t[:2] in with_arg and len(t) > 2:
                opts.setdefault(t[:2], []).append(literal_word(t[2:]))
                i += 1
                continue
            opts.setdefault(t, []).append(literal_word(""))
            i += 1
            continue
        positional_seen += 1
        if positional_seen >= stop_at_positional:
            return opts, words[i:]
        i += 1
    return opts, []


def ws(s: str) -> frozenset[str]:
    return frozenset(s.split())


def lit_word(text: str) -> Word:
    return Word(DYN) if DYN in text else literal_word(text)


def join_lits(words: list[Word]) -> Word:
    if any(w.dynamic for w in words):
        return Word(DYN)
    return literal_word(" ".join(w.text for w in words))


def kv(value: str) -> tuple[str, str, str]:
    m = re.match(r"\s*([A-Za-z]+)(\s*=\s*|\s+)(.*)$", value, re.DOTALL)
    if not m:
        return value, "", ""
    return m.group(1), m.group(2), m.group(3)
