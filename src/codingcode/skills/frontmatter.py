"""Markdown with YAML front matter, as Claude Code's skills and commands are written.

One function for both: the file's text is split at the ``---`` lines, the front matter must
be a YAML mapping, and every problem is one :class:`SettingsError` line naming the file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from codingcode.approval.rules.syntax import split_rule_list
from codingcode.config import SettingsError

_FENCE = re.compile(r"^---[ \t]*\r?$", re.MULTILINE)


def read_limited(path: Path, limit: int, what: str) -> bytes:
    """The file's bytes, refused in one line when it is over ``limit`` or unreadable.

    At most ``limit + 1`` bytes are read, so a 50 MB file costs nothing; a FIFO or a device
    is refused before it is opened (opening one could block)."""
    try:
        if not path.is_file():
            raise SettingsError(f"{what} {path} is not a regular file; ignored.")
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise SettingsError(f"Cannot read {what} {path}: {exc.strerror or exc}.") from None
    if len(data) > limit:
        raise SettingsError(
            f"{what} {path} is larger than {limit // 1024} KiB; ignored (keep it short and "
            "put long material in separate files next to it)."
        )
    return data


def split_front_matter(
    data: bytes, path: Path, what: str, *, required: bool, warnings: list[str] | None = None
) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a Markdown file; ``required``: a file without it is refused.
    With ``warnings``, front matter that is not valid YAML is read as empty (Claude Code's
    way: the file still loads) and one line there says why."""
    import yaml

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SettingsError(f"{what} {path} is not UTF-8 text; ignored.") from None
    if not text.startswith("---"):
        if required:
            raise SettingsError(
                f"{what} {path} has no front matter; it must start with a --- line, then "
                "`name:` and `description:`, then a closing --- line."
            )
        return {}, text
    parts = _FENCE.split(text, maxsplit=2)
    if len(parts) < 3 or parts[0].strip():
        raise SettingsError(f"{what} {path}: the front matter is not closed by a --- line.")
    simple = _simple_mapping(parts[1])
    if simple is not None:  # plain `key: value` lines (most files): no YAML parser needed
        return simple, parts[2].lstrip("\r\n")
    try:
        # libyaml's loader when present: ~10x faster, and 20,000 skills load at start-up.
        meta = yaml.load(parts[1], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        simple = _simple_mapping(parts[1])
        if simple is not None:  # `description: Use when: ...` — what people write
            return simple, parts[2].lstrip("\r\n")
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 1})" if where is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        message = f"{what} {path}: invalid YAML front matter{at}: {problem}."
        if warnings is not None:
            warnings.append(f"{message} It is loaded without its front matter.")
            return {}, parts[2].lstrip("\r\n")
        raise SettingsError(message) from None
    except RecursionError:
        raise SettingsError(f"{what} {path}: the front matter is nested too deeply.") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise SettingsError(f"{what} {path}: the front matter must be a YAML mapping.")
    return meta, parts[2].lstrip("\r\n")


_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*):[ \t]*(.*)$")


def _simple_mapping(text: str) -> dict[str, Any] | None:
    """``key: value`` lines read literally (a value may hold ``: ``, which YAML refuses),
    or None when the text is not of that shape. Lists and nesting need real YAML."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None or not m.group(2).strip() or m.group(2).lstrip()[0] in "[{|>&*!%@`":
            return None
        value = m.group(2).strip()
        if " #" in value or "\\" in value or m.group(1) in out:
            return None  # a comment, an escape, a repeated key: YAML decides
        if value[0] in "'\"":
            if len(value) < 2 or value[-1] != value[0] or value[0] in value[1:-1]:
                return None  # an unclosed or escaped quote: YAML decides
            value = value[1:-1]
        out[m.group(1)] = value
    return out or None


def tool_list(value: Any, path: Path, what: str) -> tuple[str, ...] | None:
    """``allowed-tools`` as Claude Code writes it: a list, or one string of entries separated
    by commas (or spaces) outside parentheses (``Read, Grep, Bash(git add:*)``)."""
    if value is None:
        return None
    if isinstance(value, list):
        items = [str(v).strip() for v in value if isinstance(v, str | int | float)]
        if len(items) != len(value):
            raise SettingsError(f"{what} {path}: `allowed-tools` must be a list of tool names.")
        return tuple(i for i in items if i)
    if not isinstance(value, str):
        raise SettingsError(f"{what} {path}: `allowed-tools` must be a string or a list.")
    return tuple(split_rule_list([value]))
