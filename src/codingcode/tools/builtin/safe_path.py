"""Race-safe path resolution for the file tools.

A path is walked one component at a time from an open directory descriptor, each step
opened with ``O_NOFOLLOW``: a symlink met on the way is read and followed by this code,
never by the kernel behind our back. When the path lies (as written) inside the project,
the walk is confined to the project: a symlink — there from the start or swapped in during
the call — that leads out of it ends the walk with :class:`EscapeError`, and the directory
finally reached is checked once more by its descriptor (``/proc/self/fd``), so not even a
directory renamed away mid-walk carries a write outside.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_MAX_STEPS = 64  # symlinks followed plus components that changed under us


class EscapeError(Exception):
    """The path leads out of the confining root through a symlink."""

    def __init__(self, link: str, leads_to: str) -> None:
        super().__init__(f"{link} leads to {leads_to}")
        self.link = link
        self.leads_to = leads_to


@dataclass
class Located:
    """The directory that holds the final component (open), and that component's name.

    ``name`` is None when the path names a directory itself (then ``dir_fd`` is it).
    The final component is not a symlink as far as the walk saw (unless it was asked
    not to follow it).
    """

    dir_fd: int
    name: str | None
    dir_path: str

    @property
    def path(self) -> str:
        return self.dir_path if self.name is None else posixpath.join(self.dir_path, self.name)


def is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def kind_of(mode: int) -> str:
    """What a non-regular file is, for a message."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "a special file"


@contextlib.contextmanager
def located(
    path: str, root: str | None, *, create_dirs: bool = False, follow_final: bool = True
) -> Iterator[Located]:
    """Walk ``path`` (absolute, normalised) and yield where it ends; the fd is closed after."""
    loc = locate(path, root, create_dirs=create_dirs, follow_final=follow_final)
    try:
        yield loc
    finally:
        os.close(loc.dir_fd)


def locate(
    path: str, root: str | None, *, create_dirs: bool = False, follow_final: bool = True
) -> Located:
    """Walk ``path``, confined to ``root`` when given (``path`` must then lie inside it).

    Raises EscapeError, FileNotFoundError (a missing directory on the way, unless
    ``create_dirs``), NotADirectoryError (a file on the way), or OSError(ELOOP).
    """
    base = root if root is not None else "/"
    rel = posixpath.relpath(path, base) if path != base else "."
    pending: deque[str] = deque(rel.split("/"))
    fds = [os.open(base, _DIR_FLAGS)]
    names: list[str] = []
    steps = 0
    last_link = ""

    def here() -> str:
        return posixpath.join(base, *names)

    def restart(real: str) -> None:
        """Go on from ``real`` (an absolute path) plus what is still pending."""
        rest = posixpath.join(real, *pending)
        if root is not None:
            # realpath only picks the components to walk; the walk itself checks them again.
            rest = os.path.realpath(rest)
            if not is_within(rest, root):
                raise EscapeError(last_link, rest)
            parts = posixpath.relpath(rest, root).split("/")
        else:
            parts = rest.split("/")  # walked from "/", with any ".." handled by the walk
        while len(fds) > 1:
            os.close(fds.pop())
        names.clear()
        pending.clear()
        pending.extend(parts)

    try:
        while pending:
            name = pending.popleft()
            if name in ("", "."):
                continue
            if name == "..":
                if names:
                    os.close(fds.pop())
                    names.pop()
                elif root is not None:
                    steps += 1
                    if steps > _MAX_STEPS:
                        raise OSError(errno.ELOOP, "Too many levels of symbolic links", path)
                    restart(posixpath.dirname(root))
                continue
            cur = fds[-1]
            try:
                st = os.stat(name, dir_fd=cur, follow_symlinks=False)
            except FileNotFoundError:
                if not pending:
                    return _found(fds, name, here(), root)
                if not create_dirs:
                    raise FileNotFoundError(
                        errno.ENOENT, "No such directory", posixpath.join(here(), name)
                    ) from None
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=cur)
                pending.appendleft(name)
                steps += 1
                if steps > _MAX_STEPS:
                    raise OSError(errno.ELOOP, "path keeps changing", path) from None
                continue
            if stat.S_ISLNK(st.st_mode):
                if not pending and not follow_final:
                    return _found(fds, name, here(), root)
                steps += 1
                if steps > _MAX_STEPS:
                    raise OSError(errno.ELOOP, "Too many levels of symbolic links", path)
                target = os.readlink(name, dir_fd=cur)
                last_link = posixpath.join(here(), name)
                if target.startswith("/"):
                    restart(target)
                else:
                    pending.extendleft(reversed(target.split("/")))
                continue
            if not pending:
                return _found(fds, name, here(), root)
            if not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(
                    errno.ENOTDIR, "Not a directory", posixpath.join(here(), name)
                )
            try:
                fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=cur)
            except OSError as exc:
                # swapped for a symlink (or removed) since the stat: look at it again
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                    raise
                steps += 1
                if steps > _MAX_STEPS:
                    raise
                pending.appendleft(name)
                continue
            fds.append(fd)
            names.append(name)
        return _found(fds, None, here(), root)
    finally:
        for fd in fds:
            os.close(fd)


def _found(fds: list[int], name: str | None, dir_path: str, root: str | None) -> Located:
    fd = fds.pop()
    try:
        if root is not None:
            with contextlib.suppress(FileNotFoundError):  # no /proc: the walk is the check
                real = os.readlink(f"/proc/self/fd/{fd}")
                if not is_within(real, root):
                    raise EscapeError(dir_path, real)
    except BaseException:
        os.close(fd)
        raise
    return Located(fd, name, dir_path)
