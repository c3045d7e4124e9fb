"""The bash grammar (tree-sitter-bash): the parser, one parsed text, node helpers."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any


# -- the parser -----------------------------------------------------------------------
@lru_cache(maxsize=1)
def parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


@dataclass
class Source:
    """One parsed text: maps the parser's bytes back to the original characters."""

    parsed: bytes
    #: (byte offset in ``parsed``, original character) for every placeholder put in.
    astral: list[tuple[int, str]]
    #: Searches of the whole text already made (``Walker.mentions``).
    facts: dict[bytes, bool] = field(default_factory=dict)

    def text(self, node: Any) -> str:
        start, end = node.start_byte, node.end_byte
        out = self.parsed[start:end].decode("utf-8", "surrogateescape")
        if not self.astral:
            return out
        import bisect

        i = bisect.bisect_left(self.astral, (start, ""))
        if i >= len(self.astral) or self.astral[i][0] >= end:
            return out
        pieces: list[str] = []
        pos = start
        while i < len(self.astral) and self.astral[i][0] < end:
            offset, char = self.astral[i]
            pieces.append(self.parsed[pos:offset].decode("utf-8", "surrogateescape"))
            pieces.append(char)
            pos = offset + len(ASTRAL_PLACEHOLDER.encode())
            i += 1
        pieces.append(self.parsed[pos:end].decode("utf-8", "surrogateescape"))
        return "".join(pieces)


def make_source(text: str) -> Source:
    if not _ASTRAL.search(text):
        return Source(text.encode("utf-8", "surrogateescape"), [])
    parsed = bytearray()
    astral: list[tuple[int, str]] = []
    for ch in text:
        if ord(ch) >= 0x10000:
            astral.append((len(parsed), ch))
            parsed += ASTRAL_PLACEHOLDER.encode()
        else:
            parsed += ch.encode("utf-8", "surrogateescape")
    return Source(bytes(parsed), astral)


WORD_TYPES = frozenset(
    {
        "word",
        "string",
        "raw_string",
        "ansi_c_string",
        "concatenation",
        "simple_expansion",
        "expansion",
        "number",
        "translated_string",
        "arithmetic_expansion",
        "command_name",
    }
)


#: Stands in for a character outside the Basic Multilingual Plane while parsing:
#: tree-sitter-bash 0.25.1 can crash the process (SIGSEGV) on a ``{`` followed by a 4-byte
#: UTF-8 sequence (tree-sitter/tree-sitter-bash#337). No such character is a shell
#: metacharacter, so a plain word character in its place leaves the structure unchanged,
#: and every node's text is mapped back to the original characters (``Source.text``).
ASTRAL_PLACEHOLDER = "\ue000"


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def node_key(node: Any) -> tuple[int, int]:
    return (node.start_byte, node.end_byte)


def command_nodes(root: Any) -> list[Any]:
    """Every ``command`` node under ``root``, found by the parser's own query engine (a
    Python walk of a 20,000-stage pipeline costs more than its parse)."""
    import tree_sitter

    query = _command_query()
    found = tree_sitter.QueryCursor(query).captures(root)
    return list(found.get("c", ()))


@lru_cache(maxsize=1)
def _command_query() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Query(tree_sitter.Language(tree_sitter_bash.language()), "(command) @c")


def last_simple_command(node: Any) -> Any | None:
    """The simple command a trailing redirect belongs to when the grammar hung it on a
    list, a pipeline or a negation (bash binds it to the last simple command)."""
    found = False
    while node.type in ("list", "pipeline", "negated_command"):
        named = [c for c in node.named_children if c.type != "comment"]
        if not named:
            return None
        node = named[-1]
        found = True
    return node if found and node.type == "command" else None


def words_after_redirect(node: Any) -> list[Any]:
    if node.type == "file_redirect":
        return list(node.children_by_field_name("destination"))[1:]
    if node.type == "heredoc_redirect":
        return list(node.children_by_field_name("argument"))
    return []


PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:=@%+,-]+")


COPROC = re.compile(r"\bcoproc\s+(?:[A-Za-z_]\w*\s+)?(?=[{(])")
