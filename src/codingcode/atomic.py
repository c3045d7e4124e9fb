"""Crash-safe file writes and cross-process file locks.

Writes go to a temporary file in the same directory, are fsynced, and replace the target
with ``os.replace`` — so a reader sees the old file or the new one, never half of either,
and a crash or a failed write leaves the original untouched.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import stat
import tempfile
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import anyio


def atomic_write_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically, keeping an existing file's mode."""
    path = Path(path)
    if mode is None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; not every filesystem allows it, which is harmless.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


_umask_lock = threading.Lock()


def _umask() -> int:
    with _umask_lock:
        current = os.umask(0)
        os.umask(current)
    return current


# One lock per file, shared by every task in this process and every codingcode process of
# this user: an flock on a side file named by the target's real path. A side file (not the
# target) because the target's inode is replaced by every atomic write.
_LOCK_DIR = Path(tempfile.gettempdir()) / f"codingcode-locks-{os.getuid()}"


def _lock_file_for(path: Path) -> Path:
    key = hashlib.sha256(os.fsencode(os.path.realpath(path))).hexdigest()[:32]
    _LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
    return _LOCK_DIR / f"{key}.lock"


@contextlib.asynccontextmanager
async def file_lock(path: Path) -> AsyncIterator[None]:
    """Hold an exclusive lock on ``path`` across tasks and processes."""
    lock_path = _lock_file_for(path)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            # Someone else holds it: wait in a worker thread so the event loop keeps going.
            await anyio.to_thread.run_sync(fcntl.flock, fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock
