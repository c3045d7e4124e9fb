"""What a skill's instructions say once its arguments are put in, as Claude Code does it.

``$ARGUMENTS`` is everything typed after ``/name``; ``$ARGUMENTS[N]`` and its short form
``$N`` are the N-th word of it counting from 0 (shell quoting respected; a position past the
last word is empty); ``$name`` is a word named by the front matter's ``arguments`` list;
``${CLAUDE_SKILL_DIR}`` is the skill's folder and ``${CLAUDE_SESSION_ID}`` the session's id.
Instructions that do not name ``$ARGUMENTS`` get ``ARGUMENTS: …`` appended, so what the user
typed is never lost.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

_INDEXED = re.compile(r"\$ARGUMENTS\[(\d+)\]|\$(\d+)(?!\d)")
_NAMED = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def split_words(arguments: str) -> list[str]:
    """The words of ``arguments``, shell quoting respected (unbalanced quotes: plain split)."""
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


def expand_skill_body(
    body: str,
    arguments: str,
    *,
    directory: Path,
    session_id: str = "",
    names: Sequence[str] = (),
) -> str:
    arguments = arguments.strip()
    words = split_words(arguments)
    text = body.replace("${CLAUDE_SKILL_DIR}", str(directory))
    if session_id:
        text = text.replace("${CLAUDE_SESSION_ID}", session_id)
    uses = "$ARGUMENTS" in text

    def indexed(m: re.Match[str]) -> str:
        i = int(m.group(1) or m.group(2))
        return words[i] if i < len(words) else ""

    text = _INDEXED.sub(indexed, text)
    if names:
        named = {n: (words[i] if i < len(words) else "") for i, n in enumerate(names)}

        def by_name(m: re.Match[str]) -> str:
            return named.get(m.group(1), m.group(0))

        text = _NAMED.sub(by_name, text)
    text = text.replace("$ARGUMENTS", arguments)
    if arguments and not uses:
        text = text.rstrip("\n") + f"\n\nARGUMENTS: {arguments}"
    return text
