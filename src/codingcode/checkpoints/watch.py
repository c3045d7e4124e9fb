"""Which paths of a project changed since the last look: inotify on its directories.

Finding what changed by ``stat()``-ing every file costs ~30 ms per 10,000 files on a slow
disk, on every checkpoint. A watcher set up once per session knows it for the price of
reading a few events: every directory git would look at (not ``.git``, not a nested
repository, not an ignored directory such as ``node_modules``) is watched, and `drain`
returns the paths the events named since the previous drain.

The watcher never guesses. When it cannot be sure it saw everything (the kernel's event
queue overflowed, the project root moved, a ``.gitignore`` changed, the watch limit was
reached), `drain` returns ``None`` and the caller does a full stat-based scan instead.
Events are queued by the kernel when the change happens, so a change made before a drain
is always in that drain (or a later one); none is lost between two looks.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from inotify_simple import INotify, flags

#: Watching more directories than this is not worth it (and nears the kernel's limit).
MAX_WATCHED_DIRS = 20_000

_MASK = (
    flags.MODIFY
    | flags.ATTRIB
    | flags.CLOSE_WRITE
    | flags.CREATE
    | flags.DELETE
    | flags.MOVED_FROM
    | flags.MOVED_TO
    | flags.DELETE_SELF
    | flags.MOVE_SELF
    | flags.ONLYDIR
    | flags.DONT_FOLLOW
    | flags.EXCL_UNLINK
)

#: Files whose change alters which other files git looks at.
_IGNORE_FILES = frozenset({b".gitignore"})


@dataclass
class Changes:
    #: Paths (relative to the root, bytes) the events named: files or directories.
    paths: set[bytes] = field(default_factory=set)
    #: Directories created or moved in since the last drain (not watched yet).
    new_dirs: set[bytes] = field(default_factory=set)
    #: Every path the events said is (or was) a directory.
    dirs: set[bytes] = field(default_factory=set)


def _join(directory: bytes, name: bytes) -> bytes:
    return directory + b"/" + name if directory else name


class TreeWatcher:
    """inotify watches on the directories of one project tree."""

    def __init__(self, root: bytes, *, limit: int = MAX_WATCHED_DIRS) -> None:
        self.root = root
        self.limit = limit
        self._inotify = INotify(nonblocking=True)
        self._dirs: dict[int, bytes] = {}
        #: Set when an event may have been missed; `drain` then returns None.
        self._lost = False

    @property
    def watched(self) -> int:
        return len(self._dirs)

    def close(self) -> None:
        self._inotify.close()

    def watch(self, top: bytes, skip: Callable[[bytes], bool]) -> bool:
        """Watch ``top`` and every directory below it that ``skip`` does not exclude (nor
        ``.git``, nor a nested repository). False when the limit was reached."""
        stack = [top]
        while stack:
            rel = stack.pop()
            full = _join(self.root, rel) if rel else self.root
            if len(self._dirs) >= self.limit:
                self._lost = True
                return False
            try:
                wd = self._inotify.add_watch(full, _MASK)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:  # the user's inotify watch limit
                    self._lost = True
                    return False
                continue  # gone or unreadable meanwhile: git cannot read it either
            self._dirs[wd] = rel
            try:
                with os.scandir(full) as entries:
                    for entry in entries:
                        if entry.name == b".git" or not entry.is_dir(follow_symlinks=False):
                            continue
                        child = _join(rel, entry.name)
                        if not skip(child) and not os.path.lexists(entry.path + b"/.git"):
                            stack.append(child)
            except OSError:
                continue
        return True

    def drain(self) -> Changes | None:
        """The paths changed since the last drain, or None when some may have been missed
        (the watcher is then of no further use: make a new one)."""
        changes = Changes()
        while batch := self._inotify.read(timeout=0):
            for event in batch:
                self._take(event.wd, event.mask, os.fsencode(event.name), changes)
        return None if self._lost else changes

    def _take(self, wd: int, mask: int, name: bytes, changes: Changes) -> None:
        if mask & flags.Q_OVERFLOW:
            self._lost = True
            return
        directory = self._dirs.get(wd)
        if directory is None:
            return
        if mask & flags.IGNORED:
            del self._dirs[wd]
            return
        if mask & (flags.DELETE_SELF | flags.MOVE_SELF):
            if not directory:
                self._lost = True  # the project root itself went away
            changes.paths.add(directory)
            changes.dirs.add(directory)
            if mask & flags.MOVE_SELF:  # its new place is walked as a new directory
                self._forget(directory)
            return
        if name in _IGNORE_FILES:
            self._lost = True
            return
        path = _join(directory, name)
        changes.paths.add(path)
        if mask & flags.ISDIR:
            changes.dirs.add(path)
            if mask & (flags.CREATE | flags.MOVED_TO):
                changes.new_dirs.add(path)
            elif mask & flags.MOVED_FROM:
                self._forget(path)

    def _forget(self, directory: bytes) -> None:
        """Drop the watches of a directory that moved away (their paths are stale)."""
        prefix = directory + b"/"
        for wd, rel in list(self._dirs.items()):
            if rel == directory or rel.startswith(prefix):
                del self._dirs[wd]
                with contextlib.suppress(OSError):
                    self._inotify.rm_watch(wd)
