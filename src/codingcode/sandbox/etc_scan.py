"""The root-only files under /etc, found by a bounded, cached walk: a regular file "other" may
not read, or a directory "other" may not enter, is a secret by rule (the sandbox masks them;
:mod:`codingcode.sandbox.secrets` lists the rule with the other secret classes)."""

from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass, field

#: The directory whose root-only entries are masked by rule.
ETC = "/etc"
#: Entries of /etc the root-only scan looks at, at most (a normal /etc has 1,000-3,000).
MAX_ETC_ENTRIES = 20_000
#: A scan result older than this is redone even when no directory changed (a chmod).
ETC_RESCAN_S = 60.0
#: File names the /etc scan masks whatever their mode (a keytab made world-readable by
#: mistake is still a key).
ETC_ALWAYS = re.compile(r".*\.keytab\Z")


def is_root_only(st: os.stat_result) -> bool:
    """The rule: a regular file "other" may not read, or a directory "other" may not enter."""
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return not mode & stat.S_IROTH
    if stat.S_ISDIR(mode):
        return not mode & stat.S_IXOTH
    return False


@dataclass
class _EtcDir:
    mtime_ns: int
    found: list[str]
    subdirs: list[str]
    entries: int


@dataclass
class RootOnlyScan:
    """The root-only entries under ``root`` (default /etc): found by a bounded walk, kept
    while no directory changed (one ``stat`` per directory per call) and for at most
    :data:`ETC_RESCAN_S` seconds."""

    root: str = ETC
    max_entries: int = MAX_ETC_ENTRIES
    _cache: dict[str, _EtcDir] = field(default_factory=dict)
    _scanned_at: float = 0.0
    notes: list[str] = field(default_factory=list)

    def paths(self) -> list[str]:
        now = time.monotonic()
        if now - self._scanned_at > ETC_RESCAN_S:
            self._cache = {}
            self._scanned_at = now
        self.notes = []
        out: list[str] = []
        fresh: dict[str, _EtcDir] = {}
        stack = [self.root]
        seen = 0
        while stack:
            directory = stack.pop()
            try:
                mtime = os.lstat(directory).st_mtime_ns
            except OSError:
                continue
            cached = self._cache.get(directory)
            if cached is None or cached.mtime_ns != mtime:
                cached = _list_etc(directory, mtime)
            fresh[directory] = cached
            out.extend(cached.found)
            seen += cached.entries
            if seen > self.max_entries:
                self.notes.append(
                    f"{self.root} has more than {self.max_entries} entries: root-only files "
                    "past the first ones scanned are not masked"
                )
                break
            stack.extend(cached.subdirs)
        self._cache = fresh
        return out


def _list_etc(directory: str, mtime: int) -> _EtcDir:
    found: list[str] = []
    subdirs: list[str] = []
    count = 0
    try:
        with os.scandir(directory) as it:
            entries = list(it)
    except OSError:
        return _EtcDir(mtime, [], [], 0)
    for entry in entries:
        count += 1
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if is_root_only(st) or (stat.S_ISREG(st.st_mode) and ETC_ALWAYS.match(entry.name)):
            found.append(entry.path)
        elif stat.S_ISDIR(st.st_mode):
            subdirs.append(entry.path)
    return _EtcDir(mtime, sorted(found), sorted(subdirs, reverse=True), count)
