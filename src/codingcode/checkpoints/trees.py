"""A new snapshot tree from the last one and a few changed files, without a git process.

The common incremental checkpoint changes a handful of files the snapshot already holds
(edited or deleted). Its tree is the last tree with those entries replaced: the blobs are
hashed here and the trees on their paths rewritten, as loose objects in git's own format
(what ``git write-tree`` would write, byte for byte). Anything else — a new file, a path
whose old tree is not a loose object (packed by ``prune``), a file turned into a directory —
is declined (``None``) and the caller asks git.
"""

from __future__ import annotations

import hashlib
import os
import stat
import zlib
from pathlib import Path

#: A tree's entries: name -> (mode, binary object id).
Entries = dict[bytes, tuple[bytes, bytes]]

TREE = b"40000"
FILE_MODES = (b"100644", b"100755", b"120000")


class Objects:
    """The loose objects of a (SHA-1) store: read trees, write blobs and trees."""

    def __init__(self, git_dir: Path) -> None:
        self.dir = git_dir / "objects"

    def _path(self, sha: str) -> Path:
        return self.dir / sha[:2] / sha[2:]

    def read_tree(self, sha: str) -> Entries | None:
        """The entries of tree ``sha``; None when it is not a loose tree here."""
        try:
            data = zlib.decompress(self._path(sha).read_bytes())
        except (OSError, zlib.error):
            return None
        head, _, body = data.partition(b"\0")
        if not head.startswith(b"tree "):
            return None
        entries: Entries = {}
        pos = 0
        while pos < len(body):
            space = body.index(b" ", pos)
            nul = body.index(b"\0", space)
            entries[body[space + 1 : nul]] = (body[pos:space], body[nul + 1 : nul + 21])
            pos = nul + 21
        return entries

    def write(self, kind: bytes, body: bytes) -> bytes:
        """Store an object (if it is not there yet); its binary id."""
        data = kind + b" %d\0" % len(body) + body
        digest = hashlib.sha1(data, usedforsecurity=False)
        sha = digest.hexdigest()
        path = self._path(sha)
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            tmp = path.parent / f"tmp_obj_{os.getpid()}_{sha[2:10]}"
            with open(tmp, "wb") as f:
                f.write(zlib.compress(data))
            os.chmod(tmp, 0o444)
            os.replace(tmp, path)
        return digest.digest()

    def write_tree(self, entries: Entries) -> bytes:
        # git's order: by name, a tree's name compared as if it ended in "/".
        names = sorted(entries, key=lambda n: n + b"/" if entries[n][0] == TREE else n)
        body = b"".join(entries[n][0] + b" " + n + b"\0" + entries[n][1] for n in names)
        return self.write(b"tree", body)


def file_entry(objects: Objects, full: bytes, max_size: int) -> tuple[bytes, bytes] | bool | None:
    """The (mode, id) a file has now, storing its blob; None: it is gone; False: it is
    something the fast path does not handle (a directory, too big, unreadable)."""
    try:
        st = os.lstat(full)
        if stat.S_ISLNK(st.st_mode):
            return b"120000", objects.write(b"blob", os.fsencode(os.readlink(full)))
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_size:
            return False
        with open(full, "rb") as f:
            data = f.read(max_size + 1)
    except FileNotFoundError:
        return None
    except OSError:
        return False
    if len(data) > max_size:
        return False
    mode = b"100755" if st.st_mode & stat.S_IXUSR else b"100644"
    return mode, objects.write(b"blob", data)


def updated_tree(
    objects: Objects, root: str, project: bytes, paths: set[bytes], max_size: int
) -> str | None:
    """Tree ``root`` with the files at ``paths`` (relative, each already in it as a file)
    as they are now; None when the fast path cannot say (the caller asks git)."""
    changes: dict[bytes, tuple[bytes, bytes] | None] = {}
    for path in paths:
        entry = file_entry(objects, os.path.join(project, path), max_size)
        if entry is False:
            return None
        changes[path] = entry  # type: ignore[assignment]
    new = _rewrite(objects, bytes.fromhex(root), b"", changes)
    return new.hex() if isinstance(new, bytes) else None


def _rewrite(
    objects: Objects,
    tree: bytes,
    prefix: bytes,
    changes: dict[bytes, tuple[bytes, bytes] | None],
) -> bytes | bool | None:
    """The id of ``tree`` (at ``prefix``) with ``changes`` under it applied; None: it is
    empty now (dropped, as git drops empty trees); False: declined."""
    entries = objects.read_tree(tree.hex())
    if entries is None:
        return False
    below: dict[bytes, dict[bytes, tuple[bytes, bytes] | None]] = {}
    for path, entry in changes.items():
        name, slash, rest = path.partition(b"/")
        if slash:
            below.setdefault(name, {})[rest] = entry
            continue
        if entries.get(name, (b"",))[0] not in FILE_MODES:
            return False  # not a file the snapshot holds: new, or a directory before
        if entry is None:
            del entries[name]
        else:
            entries[name] = entry
    for name, sub in below.items():
        old = entries.get(name)
        if old is None or old[0] != TREE:
            return False
        new = _rewrite(objects, old[1], prefix + name + b"/", sub)
        if new is False:
            return False
        if new is None:
            del entries[name]
        else:
            entries[name] = (TREE, new)  # type: ignore[assignment]
    if not entries:
        return None
    return objects.write_tree(entries)
