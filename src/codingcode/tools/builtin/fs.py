"""File tools: read_file, write_file, edit_file (SPEC T1–T3)."""

from __future__ import annotations

import contextlib
import difflib
import errno
import fcntl
import os
import signal
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import anyio
from pydantic import BaseModel, ConfigDict, Field

from codingcode.atomic import KeepOwnerError, file_lock, replace_at, write_all
from codingcode.errors import (
    AgentError,
    DeniedError,
    InvalidArgumentsError,
    NotFoundError,
    ToolFailureError,
)
from codingcode.paths import CONTROL_FILES
from codingcode.sandbox.masks import check_readable
from codingcode.tools.builtin.file_access import (
    display_path,
    escapable,
    not_regular,
    open_for_reading,
    printable,
)
from codingcode.tools.builtin.safe_path import EscapeError, Located, is_within, located
from codingcode.tools.definition import BUILTIN, ToolAnnotations, ToolDefinition, ToolExecCtx
from codingcode.tools.text_edit import SNIFF_BYTES, apply_edit, looks_binary

READ_DEFAULT_LIMIT = 200
READ_MAX_LIMIT = 500
#: Characters of one line shown before it is cut with a marker.
MAX_LINE_CHARS = 2000
_CHUNK = 1 << 20


class _Args(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")


def _surrogate(text: str) -> tuple[int, str] | None:
    for i, ch in enumerate(text):
        if "\ud800" <= ch <= "\udfff":
            return i, f"U+{ord(ch):04X}"
    return None


def check_path_arg(path: str) -> None:
    """A path must be text a file name can hold; a byte that is not UTF-8 (Python spells
    it \\udc80-\\udcff, surrogateescape) round-trips to that byte."""
    if "\x00" in path:
        raise InvalidArgumentsError("path contains a NUL character, which no file name can hold.")
    if not escapable(path):
        found = _surrogate(path)
        where = f" ({found[1]} at character {found[0] + 1})" if found else ""
        raise InvalidArgumentsError(
            f"path contains a lone surrogate{where}, which is not valid Unicode; "
            "file names must be text."
        )


def check_text_arg(value: str, field: str) -> None:
    """Text to write must be valid Unicode (a lone surrogate cannot be encoded)."""
    found = _surrogate(value)
    if found is not None:
        raise InvalidArgumentsError(
            f"{field} contains a lone surrogate ({found[1]} at character {found[0] + 1}), "
            "which is not valid Unicode and cannot be written as UTF-8. The file is unchanged."
        )


def missing_file_message(path: Path, ctx: ToolExecCtx) -> str:
    shown = display_path(path, ctx)
    parent = path.parent
    if ctx.output_dir is not None and parent == ctx.output_dir:
        return (
            f"File not found: {shown} (a saved output of an earlier call, deleted since; run "
            "that call again if its output is still needed)."
        )
    if not _is_dir(parent):
        return (
            f"File not found: {shown} (the directory {display_path(parent, ctx)} does not exist)."
        )
    try:
        names = os.listdir(parent)
    except (OSError, ValueError):
        names = []
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    if close:
        options = ", ".join(display_path(parent / n, ctx) for n in close)
        note = ""
        if any(printable(n) != n for n in close):
            note = " (\\xNN marks a byte of a name that is not valid UTF-8)"
        return f"File not found: {shown}. Did you mean: {options}?{note}"
    return f"File not found: {shown}."


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


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


def _read_window(f: BinaryIO, name: str, offset: int, limit: int) -> tuple[list[str], int, int]:
    """Stream the file: skip to ``offset``, take ``limit`` lines, count the rest.

    Returns (lines, first line number, total line count). Memory stays bounded by one
    chunk plus the window, whatever the file's size.
    """
    head = f.read(SNIFF_BYTES)
    if looks_binary(head):
        raise InvalidArgumentsError(
            f"{name} looks like a binary file (it contains NUL bytes); read_file shows "
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


def _read_sync(path: Path, shown: str, offset: int, limit: int) -> tuple[list[str], int, int]:
    with open_for_reading(path, shown) as f:
        return _read_window(f, shown, offset, limit)


async def read_file(args: ReadFileArgs, ctx: ToolExecCtx) -> str:
    check_path_arg(args.path)
    path = ctx.resolve_path(args.path)
    shown = display_path(path, ctx)
    check_readable(path, shown, ctx.launcher)  # sandbox.denyRead (issue 11)
    try:
        if ctx.mcp is not None:  # an MCP client can show an image: give it one
            from codingcode.tools.builtin.fs_images import image_type, read_image

            mime = image_type(path)
            image = mime and await anyio.to_thread.run_sync(
                read_image, path, shown, mime, open_for_reading
            )
            if image:
                return image
        lines, first, total = await anyio.to_thread.run_sync(
            _read_sync, path, shown, args.offset, args.limit
        )
    except (FileNotFoundError, NotADirectoryError):
        raise NotFoundError(missing_file_message(path, ctx)) from None
    except PermissionError:
        raise ToolFailureError(f"Permission denied reading {shown}.") from None
    except IsADirectoryError:
        raise InvalidArgumentsError(f"{shown} is a directory, not a file.") from None
    except OSError as exc:
        raise ToolFailureError(f"Could not read {shown}: {_reason(exc)}.") from None
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
    check_path_arg(args.path)
    check_text_arg(args.content, "content")
    path = ctx.resolve_path(args.path)
    shown = display_path(path, ctx)
    data = args.content.encode("utf-8")
    async with file_lock(path, signal=ctx.signal):
        with _FsErrors(path, shown, ctx, "write_file"):
            existed = await anyio.to_thread.run_sync(
                _write_sync, path, _confining_root(path, ctx), data, shown
            )
    lines = args.content.count("\n") + (0 if args.content.endswith("\n") or not args.content else 1)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {shown} ({len(data)} bytes, {lines} lines)."


def _write_sync(path: Path, root: str | None, data: bytes, shown: str) -> bool:
    """Write ``data`` as the file at ``path``; True when it existed."""
    for _ in range(_TRIES):
        with located(str(path), root, create_dirs=True) as loc:
            name = _file_name(loc, shown, "write_file")
            _refuse_control_file_by_link(path, loc, root, shown, "write_file")
            st = _lstat_at(loc.dir_fd, name)
            if st is not None:
                if stat.S_ISLNK(st.st_mode):
                    continue  # became a symlink since the walk: walk again
                if not stat.S_ISREG(st.st_mode):
                    raise not_regular(shown, st.st_mode, "write_file")
                _check_writable(st, shown, "write_file")
            try:
                _store(loc.dir_fd, name, data, st, old=None, check=None)
            except _ChangedError:
                continue
            return st is not None
    raise _kept_changing(shown, "write_file")


# -- shared by write_file and edit_file ---------------------------------------------------
#: Attempts of one write or edit when the file changes under it (another process).
_TRIES = 8
#: A file modified this shortly before we read it may change again within the same
#: timestamp tick (mtime unchanged): then its content is compared too, not just its size
#: and times (git's "racy" check). Generous: timestamp ticks are a few milliseconds.
_RACY_NS = 100_000_000
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


class _ChangedError(Exception):
    """The file changed between the read and the write (or was swapped)."""


class _BusyError(_ChangedError):
    """Another process has the file open for writing: what it writes next could be lost."""


def _confining_root(path: Path, ctx: ToolExecCtx) -> str | None:
    """Writes to a path inside the project stay inside it, symlinks and races included."""
    root = str(ctx.project_path)
    return root if is_within(str(path), root) else None


def _reason(exc: OSError) -> str:
    return os.strerror(exc.errno) if exc.errno else str(exc)


def _kept_changing(shown: str, tool: str, *, busy: bool = False) -> AgentError:
    if busy:
        return ToolFailureError(
            f"{shown} is open for writing by another process (a running program writing to "
            f"it, such as a log), so {tool} did not change it: what that process writes "
            "meanwhile would be lost. The file is unchanged. Stop that process or try again "
            "when it has closed the file."
        )
    return ToolFailureError(
        f"{shown} kept changing while {tool} worked on it (another process is writing to "
        "it), so nothing was written: the file is unchanged. Try again when it is quiet."
    )


class _FsErrors:
    """Turn what the file system says into one clear AgentError for the model."""

    def __init__(self, path: Path, shown: str, ctx: ToolExecCtx, tool: str) -> None:
        self.path, self.shown, self.ctx, self.tool = path, shown, ctx, tool

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if exc is None or isinstance(exc, AgentError) or not isinstance(exc, Exception):
            return
        shown, tool = self.shown, self.tool
        verb = {"write_file": "writing", "edit_file": "editing"}.get(tool, "reading")
        if isinstance(exc, EscapeError):
            link = display_path(Path(exc.link), self.ctx) if exc.link else shown
            leads = printable(exc.leads_to)
            raise DeniedError(
                f"{shown} leads outside the project through the symlink {link} (to {leads}); "
                f"{tool} follows symlinks only while they stay inside the project. To change "
                f"the file there, name it by its real path ({leads}): it is then approved as "
                "a path outside the project. Nothing was written."
            ) from None
        if isinstance(exc, PermissionError):
            raise ToolFailureError(f"Permission denied {verb} {shown}.") from None
        if isinstance(exc, (NotADirectoryError, FileExistsError)):
            if tool == "write_file":
                raise InvalidArgumentsError(
                    f"Cannot create {shown}: a parent of it is a file, not a directory."
                ) from None
            raise NotFoundError(missing_file_message(self.path, self.ctx)) from None
        if isinstance(exc, FileNotFoundError):
            hint = " To create a file, use write_file." if tool == "edit_file" else ""
            raise NotFoundError(missing_file_message(self.path, self.ctx) + hint) from None
        if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
            raise InvalidArgumentsError(
                f"{shown}: too many levels of symbolic links (or the path kept changing)."
            ) from None
        if isinstance(exc, OSError):
            raise ToolFailureError(
                f"Could not finish {verb} {shown}: {_reason(exc)}. The file is unchanged."
            ) from None


def _refuse_control_file_by_link(
    path: Path, loc: Located, root: str | None, shown: str, tool: str
) -> None:
    """A symlink in the project must not turn an ordinary path into one of the files that
    configure codingcode, git hooks or MCP servers (approval judged the path as named, and
    the link may have been swapped in after it did)."""
    if root is None or loc.path == str(path):
        return

    def control(p: str) -> bool:  # as written: ``loc.path`` has its symlinks resolved
        rel = os.path.relpath(p, root)
        return any(rel == c or rel.startswith(c + "/") for c in CONTROL_FILES)

    if control(loc.path) and not control(str(path)):
        real = printable(os.path.relpath(loc.path, root))
        raise DeniedError(
            f"{shown} leads through a symlink to {real}, which configures codingcode, git "
            f"hooks or MCP servers; {tool} does not change such a file through a symlink. "
            "Name it directly if it should change (it is then asked about). Nothing was "
            "written."
        )


def _file_name(loc: Located, shown: str, tool: str) -> str:
    if loc.name is None:
        raise not_regular(shown, stat.S_IFDIR, tool)
    return loc.name


def _lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _check_writable(st: os.stat_result, shown: str, tool: str) -> None:
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o222:
        raise ToolFailureError(
            f"{shown} is read-only (mode {mode:04o}); {tool} does not override that. If it "
            "should change, make it writable first (e.g. chmod u+w), then try again. The file "
            "is unchanged."
        )


def _read_all(fd: int) -> bytes:
    """The whole file behind ``fd``, from offset 0 (the fd's position is not used)."""
    parts = []
    offset = 0
    while chunk := os.pread(fd, _CHUNK, offset):
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


def _store(
    dir_fd: int,
    name: str,
    data: bytes,
    like: os.stat_result | None,
    *,
    old: bytes | None,
    check: Callable[[], None] | None,
    probe_writers: bool = True,
) -> bool:
    """Write ``data`` as the file; True when it was replaced (renamed over), False when
    written in place.

    A rename is atomic, but it would split hard links, give the file our owner, and leave
    a process that has the file open for writing (a logger appending to it) writing to the
    old, unlinked copy. Such files are written in place instead (``probe_writers=False``:
    the caller's ``check`` deals with writers).
    """
    if like is not None and (
        like.st_nlink > 1 or (probe_writers and _open_for_writing_elsewhere(dir_fd, name))
    ):
        _write_in_place(dir_fd, name, data, like, old, check)
        return False
    try:
        replace_at(dir_fd, name, data, like, before_replace=check)
        return True
    except KeepOwnerError:
        pass
    except PermissionError:  # the directory is not writable; the file may be
        if like is None or not os.access(name, os.W_OK, dir_fd=dir_fd, follow_symlinks=False):
            raise
    assert like is not None
    _write_in_place(dir_fd, name, data, like, old, check)
    return False


_F_SETLEASE: int | None = getattr(fcntl, "F_SETLEASE", None)


def _open_for_writing_elsewhere(dir_fd: int, name: str) -> bool:
    """True when some other descriptor has the file open for writing (see _has_writers)."""
    if _F_SETLEASE is None:
        return False
    try:
        fd = os.open(name, os.O_RDONLY | _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        return _has_writers(fd)
    finally:
        os.close(fd)


def _has_writers(fd: int) -> bool:
    """True when the file behind ``fd`` (opened read-only) is open for writing elsewhere.

    Linux grants a read lease only on a file nobody has open for writing: asking for one
    (and dropping it at once) is the probe. Where leases are not available (another OS,
    a file system without them, a file we do not own and no CAP_LEASE) the answer is False.
    """
    if _F_SETLEASE is None:
        return False
    try:
        # A writer that opens the file while we hold the lease (a few microseconds) makes the
        # kernel signal us: SIGURG, ignored by default, instead of SIGIO, which would kill us.
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, _F_SETLEASE, fcntl.F_RDLCK)
    except OSError as exc:
        return exc.errno == errno.EAGAIN
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, _F_SETLEASE, fcntl.F_UNLCK)
    return False


def _write_in_place(
    dir_fd: int,
    name: str,
    data: bytes,
    like: os.stat_result,
    old: bytes | None,
    check: Callable[[], None] | None,
) -> None:
    """Overwrite the file's own inode (links, owner, mode and ACLs stay as they are).

    Space is reserved first, so a full disk fails before a byte changes, and the file is
    at its new length at once, so bytes another process appends meanwhile land after the
    new content and are kept there. A failure while writing puts the old bytes back.
    """
    if check is not None:
        check()  # before our own descriptor for writing exists (it would count as a writer)
    fd = os.open(name, os.O_RDWR | _OPEN_FLAGS, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (like.st_dev, like.st_ino) or not stat.S_ISREG(st.st_mode):
            raise _ChangedError
        if old is None:
            old = _read_all(fd)
        elif st.st_size != len(old):
            raise _ChangedError
        try:
            if len(data) > len(old):
                try:
                    os.posix_fallocate(fd, 0, len(data))
                except OSError as exc:
                    if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                        raise
            write_all(fd, data, 0)
            end = max(len(old), len(data))
            if len(data) < end:  # shrunk: move what was appended meanwhile, then cut
                now = os.fstat(fd).st_size
                extra = _read_range(fd, end, now)
                write_all(fd, extra, len(data))
                os.ftruncate(fd, len(data) + len(extra))
            os.fsync(fd)
        except BaseException:
            try:
                write_all(fd, old, 0)
                os.ftruncate(fd, len(old))
                os.fsync(fd)
            except OSError:
                pass
            raise
    finally:
        os.close(fd)


def _read_range(fd: int, start: int, end: int) -> bytes:
    return b"".join(
        os.pread(fd, min(_CHUNK, end - off), off) for off in range(start, max(start, end), _CHUNK)
    )


# -- edit_file -------------------------------------------------------------------------
class EditFileArgs(_Args):
    path: str = Field(description="Path of the file, absolute or relative to the project root.")
    old_string: str = Field(
        min_length=1,
        description="The exact text to replace; it must occur exactly once in the file. "
        "Include enough surrounding lines to make it unique.",
    )
    new_string: str = Field(description="The text to put in its place.")


async def edit_file(args: EditFileArgs, ctx: ToolExecCtx) -> str:
    check_path_arg(args.path)
    check_text_arg(args.old_string, "old_string")
    check_text_arg(args.new_string, "new_string")
    path = ctx.resolve_path(args.path)
    shown = display_path(path, ctx)
    check_readable(path, shown, ctx.launcher)  # an edit reads the file (sandbox.denyRead)
    # read-modify-write under the lock: concurrent edits never lose one
    async with file_lock(path, signal=ctx.signal):
        with _FsErrors(path, shown, ctx, "edit_file"):
            line, n_new = await anyio.to_thread.run_sync(
                _edit_sync, path, _confining_root(path, ctx), args, shown
            )
    n_old = args.old_string.count("\n") + 1
    from codingcode.tools.output import plural

    return (
        f"Edited {shown}: replaced {plural(n_old, 'line')} at line {line} with "
        f"{plural(n_new, 'line')}."
    )


def _edit_sync(path: Path, root: str | None, args: EditFileArgs, shown: str) -> tuple[int, int]:
    """Read, edit and write back; if the file changes in between (another process writes
    it), do it again on the new content — a bounded number of times, then fail clearly.
    A file another process holds open for writing is not edited (see _unchanged_check)."""
    busy = False
    for attempt in range(_TRIES):
        if attempt:
            time.sleep(min(0.002 * 2**attempt, 0.1))
        with located(str(path), root) as loc:
            name = _file_name(loc, shown, "edit_file")
            _refuse_control_file_by_link(path, loc, root, shown, "edit_file")
            st = _lstat_at(loc.dir_fd, name)
            if st is None:
                raise FileNotFoundError(errno.ENOENT, "No such file", str(path))
            if stat.S_ISLNK(st.st_mode):
                continue  # became a symlink since the walk: walk again
            if not stat.S_ISREG(st.st_mode):
                raise not_regular(shown, st.st_mode, "edit_file")
            _check_writable(st, shown, "edit_file")
            try:
                fd = os.open(name, os.O_RDONLY | _OPEN_FLAGS, dir_fd=loc.dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOENT):
                    continue
                raise
            try:
                seen = os.fstat(fd)
                if (seen.st_dev, seen.st_ino) != (st.st_dev, st.st_ino):
                    continue
                raw = _read_all(fd)
                seen = os.fstat(fd)
                seen_at = time.time_ns()
                if seen.st_size != len(raw):  # grew or shrank while we read it
                    busy = _has_writers(fd)
                    continue
                data, line, n_new = apply_edit(raw, args.old_string, args.new_string, shown)
                try:
                    replaced = _store(
                        loc.dir_fd,
                        name,
                        data,
                        seen,
                        old=raw,
                        check=_unchanged_check(loc.dir_fd, name, fd, seen, seen_at, raw),
                        probe_writers=False,
                    )
                except _ChangedError as exc:
                    busy = isinstance(exc, _BusyError)
                    continue
                if replaced:
                    _carry_over_appends(loc.dir_fd, name, fd, len(raw))
                return line, n_new
            finally:
                os.close(fd)
    raise _kept_changing(shown, "edit_file", busy=busy)


def _unchanged_check(
    dir_fd: int, name: str, fd: int, seen: os.stat_result, seen_at: int, raw: bytes
) -> Callable[[], None]:
    """Raise _ChangedError when the file is no longer what was read (just before writing)."""

    def check() -> None:
        # A writer's next write would go to the replaced copy (rename) or race ours (in place).
        if _has_writers(fd):
            raise _BusyError
        now = os.fstat(fd)
        named = _lstat_at(dir_fd, name)
        if (
            named is None
            or (named.st_dev, named.st_ino) != (seen.st_dev, seen.st_ino)
            or now.st_size != len(raw)
            or now.st_mtime_ns != seen.st_mtime_ns
            or now.st_ctime_ns != seen.st_ctime_ns
        ):
            raise _ChangedError
        if seen_at - seen.st_mtime_ns < _RACY_NS and _read_all(fd) != raw:
            raise _ChangedError

    return check


#: How long an edit waits, after its rename, for a process that still has the replaced
#: file open for writing (one that opened it just before) to finish its write.
_CARRY_WAIT_S = 1.0


def _carry_over_appends(dir_fd: int, name: str, old_fd: int, size: int) -> None:
    """Bytes another process appended to the old file around the rename (it had opened
    the file just before) are appended to the new one, not lost with the old inode."""
    deadline = time.monotonic() + _CARRY_WAIT_S
    while True:
        busy = _has_writers(old_fd)  # first: once nobody writes, the size below is final
        now = os.fstat(old_fd).st_size
        if now > size:
            extra = _read_range(old_fd, size, now)
            fd = os.open(name, os.O_WRONLY | os.O_APPEND | _OPEN_FLAGS, dir_fd=dir_fd)
            try:
                write_all(fd, extra)
                os.fsync(fd)
            finally:
                os.close(fd)
            size = now
        if not busy or time.monotonic() > deadline:
            return
        time.sleep(0.001)


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
            arg_roles={"path": "path", "old_string": "old_text", "new_string": "content"},
            effects=frozenset({"reads", "writes"}),
            origin=BUILTIN,
        ),
    ]
