"""Crash-safe file writes and cross-process file locks.

Writes go to a temporary file in the same directory, are fsynced, and replace the target
with a rename — so a reader sees the old file or the new one, never half of either, and a
crash or a failed write leaves the original untouched. The replaced file's owner, group
and mode are given to the new one before the rename; a symlink is kept (its target is
written).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import stat
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio

from codingcode.cancel import CancelSignal
from codingcode.errors import CancelledError, ToolTimeoutError


class KeepOwnerError(PermissionError):
    """The new file could not be given the old file's owner or group (not root)."""


def write_all(fd: int, data: bytes, offset: int | None = None) -> None:
    view = memoryview(data)
    done = 0
    while done < len(view):
        if offset is None:
            done += os.write(fd, view[done:])
        else:
            done += os.pwrite(fd, view[done:], offset + done)


def replace_at(
    dir_fd: int,
    name: str,
    data: bytes,
    like: os.stat_result | None,
    *,
    mode: int | None = None,
    before_replace: Callable[[], None] | None = None,
) -> None:
    """Atomically make ``name`` in the directory ``dir_fd`` hold ``data``.

    ``like`` is the file being replaced (None for a new file): its owner, group and mode
    are set on the temporary file before the rename. A new file gets 0666 less the umask
    (or ``mode``). ``before_replace`` runs just before the rename and may raise to stop it.
    Raises :class:`KeepOwnerError` (nothing changed) when the owner cannot be kept.
    """
    stem = name if len(os.fsencode(name)) <= 200 else "file"
    import secrets

    tmp = f".{stem}.{secrets.token_hex(4)}.tmp"
    create_mode = 0o600 if (like is not None or mode is not None) else 0o666
    fd = os.open(
        tmp,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        create_mode,
        dir_fd=dir_fd,
    )
    try:
        try:
            write_all(fd, data)
            if like is not None:
                mine = os.fstat(fd)
                if (mine.st_uid, mine.st_gid) != (like.st_uid, like.st_gid):
                    try:
                        os.fchown(fd, like.st_uid, like.st_gid)
                    except PermissionError:
                        raise KeepOwnerError(errno.EPERM, "cannot keep the owner") from None
            if mode is None and like is not None:
                mode = stat.S_IMODE(like.st_mode)
            if mode is not None:  # after fchown, which clears set-user-ID bits
                os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    # Makes the rename itself durable; not every filesystem allows it, which is harmless.
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)


def atomic_write_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically, keeping an existing file's owner and mode.

    A symlink stays a symlink: the file it points to is replaced.
    """
    path = Path(path)
    with contextlib.suppress(OSError):
        if path.is_symlink():
            path = Path(os.path.realpath(path))
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            like: os.stat_result | None = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            like = None
        if like is not None and not stat.S_ISREG(like.st_mode):
            like = None
        try:
            replace_at(dir_fd, path.name, data, like, mode=mode)
        except KeepOwnerError:
            # not root: the file becomes ours, with its mode
            keep = stat.S_IMODE(like.st_mode) if like is not None else None
            replace_at(dir_fd, path.name, data, None, mode=mode if mode is not None else keep)
    finally:
        os.close(dir_fd)


# One lock per file, shared by every task in this process and every codingcode process of
# this user: an flock on a side file named by the target's real path. A side file (not the
# target) because the target's inode is replaced by every atomic write.
@functools.cache
def _lock_dir() -> Path:
    import tempfile

    return Path(tempfile.gettempdir()) / f"codingcode-locks-{os.getuid()}"


#: How long a call waits for a lock another process holds before it gives up.
LOCK_TIMEOUT_S = 30.0
_POLL_MIN_S = 0.002
_POLL_MAX_S = 0.05


def _lock_file_for(path: Path) -> Path:
    import hashlib

    key = hashlib.sha256(os.fsencode(os.path.realpath(path))).hexdigest()[:32]
    _lock_dir().mkdir(mode=0o700, exist_ok=True)
    return _lock_dir() / f"{key}.lock"


def _holder(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        pid = int(os.pread(fd, 32, 0).decode("ascii").strip() or "0")
        if pid:
            return f"another process (pid {pid})"
    return "another process"


def _shown(path: Path) -> str:
    return os.fsencode(str(path)).decode("utf-8", "backslashreplace")


def flock_within(fd: int, max_wait: float) -> bool:
    """Take an exclusive ``flock`` on ``fd`` from synchronous code, waiting at most
    ``max_wait`` seconds for another process (False then). A poll like :func:`file_lock`'s:
    Ctrl-C ends the wait at once (the sleep is interruptible)."""
    deadline = time.monotonic() + max_wait
    pause = _POLL_MIN_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
        time.sleep(pause)
        pause = min(pause * 2, _POLL_MAX_S)


@contextlib.asynccontextmanager
async def file_lock(
    path: Path | str,
    *,
    max_wait: float = LOCK_TIMEOUT_S,
    signal: CancelSignal | None = None,
) -> AsyncIterator[None]:
    """Hold an exclusive lock on ``path`` across tasks and processes.

    The wait is a poll (no thread blocked in ``flock``): anyio cancellation and ``signal``
    end it at once, and after ``max_wait`` seconds it fails with a ToolTimeoutError that
    names the holder's pid.
    """
    path = Path(path)
    lock_path = _lock_file_for(path)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + max_wait
        pause = _POLL_MIN_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            if signal is not None and signal.is_set():
                raise CancelledError(
                    f"Cancelled ({signal.reason}) while waiting for the lock on {_shown(path)}; "
                    "the file was not changed."
                )
            if time.monotonic() >= deadline:
                raise ToolTimeoutError(
                    f"{_holder(fd).capitalize()} has held the lock on {_shown(path)} for over "
                    f"{max_wait:g} s; the file was not changed. If that process is stuck, stop "
                    "it, then try again."
                )
            await anyio.sleep(pause)
            pause = min(pause * 2, _POLL_MAX_S)
        with contextlib.suppress(OSError):  # who holds it, for the message of a waiter
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock
