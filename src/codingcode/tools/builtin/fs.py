"""File tools: read_file, write_file, edit_file (SPEC T1–T3)."""

from __future__ import annotations

import codecs
import difflib
import os
from pathlib import Path

import anyio
from pydantic import BaseModel, ConfigDict, Field

from codingcode.atomic import atomic_write_bytes, file_lock
from codingcode.errors import InvalidArgumentsError, NotFoundError, ToolFailureError
from codingcode.tools.definition import BUILTIN, ToolAnnotations, ToolDefinition, ToolExecCtx

READ_DEFAULT_LIMIT = 200
READ_MAX_LIMIT = 500
#: Characters of one line shown before it is cut with a marker.
MAX_LINE_CHARS = 2000
_SNIFF_BYTES = 8192
_CHUNK = 1 << 20


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


def display_path(path: Path, ctx: ToolExecCtx) -> str:
    """A path as the model should see it: relative inside the project, absolute outside."""
    try:
        return str(path.relative_to(ctx.project_path))
    except ValueError:
        return str(path)


def missing_file_message(path: Path, ctx: ToolExecCtx) -> str:
    shown = display_path(path, ctx)
    parent = path.parent
    if not parent.is_dir():
        return (
            f"File not found: {shown} (the directory {display_path(parent, ctx)} does not exist)."
        )
    try:
        names = os.listdir(parent)
    except OSError:
        names = []
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    if close:
        options = ", ".join(display_path(parent / n, ctx) for n in close)
        return f"File not found: {shown}. Did you mean: {options}?"
    return f"File not found: {shown}."


def _looks_binary(head: bytes) -> bool:
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    return b"\x00" in head


# -- read_file -------------------------------------------------------------------------
class ReadFileArgs(_Args):
    path: str = Field(description="Path of the file, absolute or relative to the project root.")
    offset: int = Field(default=1, ge=1, description="First line to show (1-based).")
    limit: int = Field(
        default=READ_DEFAULT_LIMIT,
        ge=1,
        le=READ_MAX_LIMIT,
        description=f"Number of lines to show (at most {READ_MAX_LIMIT}).",
    )


def _read_window(path: Path, offset: int, limit: int) -> tuple[list[str], int, int]:
    """Stream the file: skip to ``offset``, take ``limit`` lines, count the rest.

    Returns (lines, first line number, total line count). Memory stays bounded by one
    chunk plus the window, whatever the file's size.
    """
    with open(path, "rb") as f:
        head = f.read(_SNIFF_BYTES)
        if _looks_binary(head):
            raise InvalidArgumentsError(
                f"{path.name} looks like a binary file (it contains NUL bytes); read_file shows "
                "text only. Use execute_command with a tool such as `file`, `xxd` or `strings`."
            )
        f.seek(0)
        # Skip offset-1 lines chunk by chunk (far faster than readline on huge files).
        to_skip = offset - 1
        skipped = 0
        while to_skip:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            n = chunk.count(b"\n")
            if n < to_skip:
                to_skip -= n
                skipped += n
                continue
            pos = -1
            for _ in range(to_skip):
                pos = chunk.index(b"\n", pos + 1)
            f.seek(f.tell() - len(chunk) + pos + 1)
            skipped += to_skip
            to_skip = 0
        lines: list[str] = []
        newlines = skipped
        budget = MAX_LINE_CHARS * 4  # bytes; UTF-8 is at most 4 bytes a character
        if to_skip == 0:
            while len(lines) < limit:
                raw = f.readline(budget)
                if not raw:
                    break
                complete = raw.endswith(b"\n")
                while not complete:  # consume the rest of a very long line
                    rest = f.readline(_CHUNK)
                    if not rest:
                        break
                    complete = rest.endswith(b"\n")
                    if len(raw) < budget:
                        raw += rest[: budget - len(raw)]
                newlines += complete
                lines.append(raw.rstrip(b"\r\n").decode("utf-8", errors="replace"))
        while chunk := f.read(_CHUNK):
            newlines += chunk.count(b"\n")
        size = f.tell()
        unterminated = 0
        if size:
            f.seek(size - 1)
            unterminated = f.read(1) != b"\n"
        total = newlines + unterminated
    return lines, offset, total


def _format_line(number: int, text: str) -> str:
    if len(text) > MAX_LINE_CHARS:
        text = (
            text[:MAX_LINE_CHARS]
            + f" [... line cut: {len(text) - MAX_LINE_CHARS}+ more characters]"
        )
    return f"{number:6d}\t{text}"


async def read_file(args: ReadFileArgs, ctx: ToolExecCtx) -> str:
    path = ctx.resolve_path(args.path)
    shown = display_path(path, ctx)
    if path.is_dir():
        raise InvalidArgumentsError(
            f"{shown} is a directory, not a file. Use search_files to list its contents."
        )
    if not path.exists():
        raise NotFoundError(missing_file_message(path, ctx))
    try:
        lines, first, total = await anyio.to_thread.run_sync(
            _read_window, path, args.offset, args.limit
        )
    except PermissionError:
        raise ToolFailureError(f"Permission denied reading {shown}.") from None
    except IsADirectoryError:
        raise InvalidArgumentsError(f"{shown} is a directory, not a file.") from None
    if total == 0:
        return f"{shown} is empty (0 lines)."
    if not lines:
        raise InvalidArgumentsError(
            f"offset {args.offset} is past the end of {shown}, which has {total} lines."
        )
    last = first + len(lines) - 1
    body = "\n".join(_format_line(first + i, t) for i, t in enumerate(lines))
    header = f"{shown}: lines {first}-{last} of {total}"
    if last < total:
        footer = f"\n[{total - last} more lines; continue with offset={last + 1}]"
    else:
        footer = ""
    return f"{header}\n{body}{footer}"


# -- write_file ------------------------------------------------------------------------
class WriteFileArgs(_Args):
    path: str = Field(description="Path of the file, absolute or relative to the project root.")
    content: str = Field(description="The complete new content of the file.")


async def write_file(args: WriteFileArgs, ctx: ToolExecCtx) -> str:
    path = ctx.resolve_path(args.path)
    shown = display_path(path, ctx)
    if path.is_dir():
        raise InvalidArgumentsError(f"{shown} is a directory; write_file writes files.")
    data = args.content.encode("utf-8")
    async with file_lock(path):
        existed = path.exists()
        try:
            await anyio.to_thread.run_sync(_write_with_parents, path, data)
        except PermissionError:
            raise ToolFailureError(f"Permission denied writing {shown}.") from None
        except (NotADirectoryError, FileExistsError):
            raise InvalidArgumentsError(
                f"Cannot create {shown}: a parent of it is a file, not a directory."
            ) from None
    lines = args.content.count("\n") + (0 if args.content.endswith("\n") or not args.content else 1)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {shown} ({len(data)} bytes, {lines} lines)."


def _write_with_parents(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data)


# -- edit_file -------------------------------------------------------------------------
class EditFileArgs(_Args):
    path: str = Field(description="Path of the file, absolute or relative to the project root.")
    old_string: str = Field(
        min_length=1,
        description="The exact text to replace; it must occur exactly once in the file. "
        "Include enough surrounding lines to make it unique.",
    )
    new_string: str = Field(description="The text to put in its place.")


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
    if _looks_binary(raw[:_SNIFF_BYTES]):
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


async def edit_file(args: EditFileArgs, ctx: ToolExecCtx) -> str:
    path = ctx.resolve_path(args.path)
    shown = display_path(path, ctx)
    if path.is_dir():
        raise InvalidArgumentsError(f"{shown} is a directory; edit_file edits files.")
    if not path.exists():
        raise NotFoundError(missing_file_message(path, ctx) + " To create a file, use write_file.")
    async with file_lock(path):  # read-modify-write under the lock: concurrent edits never lose one
        try:
            raw = await anyio.Path(path).read_bytes()
            data, line, n_new = apply_edit(raw, args.old_string, args.new_string, shown)
            await anyio.to_thread.run_sync(atomic_write_bytes, path, data)
        except PermissionError:
            raise ToolFailureError(f"Permission denied editing {shown}.") from None
    n_old = args.old_string.count("\n") + 1
    return f"Edited {shown}: replaced {n_old} line(s) at line {line} with {n_new} line(s)."


def fs_tools() -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name="read_file",
            description=(
                "Read a text file, with line numbers (cat -n style). Shows `limit` lines "
                f"(default {READ_DEFAULT_LIMIT}, at most {READ_MAX_LIMIT}) starting at line "
                "`offset` (default 1), and says how many lines the file has. Very long lines "
                "are cut with a marker."
            ),
            short_description="Read a text file with line numbers",
            parameters=ReadFileArgs,
            execute=read_file,
            annotations=ToolAnnotations(read_only=True, idempotent=True),
            arg_roles={"path": "path"},
            effects=frozenset({"reads"}),
            origin=BUILTIN,
        ),
        ToolDefinition(
            name="write_file",
            description=(
                "Create or overwrite a file with `content` (parent directories are created). "
                "The write is atomic; an existing file keeps its permissions."
            ),
            short_description="Create or overwrite a file",
            parameters=WriteFileArgs,
            execute=write_file,
            annotations=ToolAnnotations(destructive=True, idempotent=True),
            arg_roles={"path": "path", "content": "content"},
            effects=frozenset({"writes"}),
            origin=BUILTIN,
        ),
        ToolDefinition(
            name="edit_file",
            description=(
                "Replace one exact piece of a file: `old_string` must occur exactly once and is "
                "replaced by `new_string`. Line endings, encoding and the final newline are kept."
            ),
            short_description="Replace one exact piece of text in a file",
            parameters=EditFileArgs,
            execute=edit_file,
            annotations=ToolAnnotations(destructive=True),
            arg_roles={"path": "path", "old_string": "text", "new_string": "content"},
            effects=frozenset({"reads", "writes"}),
            origin=BUILTIN,
        ),
    ]
