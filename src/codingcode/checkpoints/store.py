"""Checkpoints of a project's files, kept outside the project, and restoring them.

Before each call that can change the project (an edit, a write, a command, an MCP tool that
is not read-only) the runner takes a checkpoint: a snapshot of every file that is not
``.gitignore``d, stored as a git tree in a bare repository under the user's state directory
(``<state>/checkpoints/<project key>/store.git``), never in the project's own ``.git``. After
the call it records the state the call left (its "after" tree), which is how a restore later
tells what the agent changed from what someone else changed since.

Snapshots are incremental: one index per project keeps git's stat cache, so only files whose
stat data changed are read again (``git ls-files --modified --others``, then ``update-index``
on exactly those). A session's store goes further: it watches the project with inotify
(watch.py) and hands git only the paths that changed, falling back to the scan whenever the
watcher cannot vouch for having seen everything; when those paths are files the last tree
holds, it makes the new tree itself, with no git process (trees.py). Files over ``maxFileSizeMB`` are not stored, only their size and SHA-256,
and a restore names them. Symlinks and the executable bit are kept exactly; nested
repositories (a directory with its own ``.git``) are skipped.

Everything that touches the store holds a file lock, so concurrent sessions in one project
take turns instead of corrupting the index or the log.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codingcode.checkpoints.git import CheckpointError, ShadowGit
from codingcode.checkpoints.trees import Objects, updated_tree
from codingcode.checkpoints.watch import Changes, TreeWatcher
from codingcode.errors import InvalidArgumentsError

#: Defaults of the ``checkpoints`` settings (docs/configuration.md).
MAX_FILE_SIZE_MB = 10
MAX_FILES = 100_000
MAX_AGE_DAYS = 30
MAX_STORE_MB = 2048
LOCK_TIMEOUT_S = 30.0
#: More changed paths than this since the last snapshot: a full stat-based scan is cheaper.
MAX_WATCHED_CHANGES = 256
#: inotify does not see writes through mmap, through a hard link from outside the project,
#: or by another machine on a network filesystem: a full scan at least this often does.
RESCAN_AFTER_S = 60.0
ZERO = "0" * 40
#: The log's format: its first record says which (a log without one is of version 1, read
#: the same way). A newer version's store is refused with one line, never misread.
STORE_VERSION = 2
#: codingcode's own files in a project (what approvals and ``rules add`` write, and the
#: ``.gitignore`` that keeps the personal settings out of git; Claude Code's personal
#: settings too): they are not the agent's changes, so no checkpoint holds them and no
#: restore puts them back or deletes them.
OWN_FILES = (
    ".codingcode/settings.local.json",
    ".codingcode/.gitignore",
    ".claude/settings.local.json",
)


def is_own_file(path: str) -> bool:
    return path in OWN_FILES


class UnknownCheckpointError(InvalidArgumentsError):
    """No checkpoint has that id."""


@dataclass(frozen=True)
class BigFile:
    size: int
    sha256: str


@dataclass
class Checkpoint:
    id: str
    commit: str
    tree: str
    time: float
    session: str
    turn: int
    kind: str = "before"  # "before" a call, or "pre-restore"
    big: dict[str, BigFile] = field(default_factory=dict)
    calls: list[dict[str, Any]] = field(default_factory=list)
    #: The state the last of its calls left (None while a call runs or if it crashed).
    after: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "time": self.time,
            "session": self.session,
            "turn": self.turn,
            "kind": self.kind,
            "calls": self.calls,
            "big_files": sorted(self.big),
        }


@dataclass
class Turn:
    """One prompt of one session: the checkpoints taken before its calls, oldest first.

    Restoring its first checkpoint puts the project back as it was before the prompt.
    """

    session: str
    turn: int
    points: list[Checkpoint]

    @property
    def first(self) -> Checkpoint:
        return self.points[0]

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [c for p in self.points for c in p.calls]

    @property
    def after(self) -> str | None:
        """The state its last call left (None while unknown)."""
        return self.points[-1].after

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.first.id,
            "time": self.first.time,
            "session": self.session,
            "turn": self.turn,
            "kind": self.first.kind,
            "calls": self.calls,
            "checkpoints": [p.id for p in self.points],
            "big_files": sorted({name for p in self.points for name in p.big}),
        }


def root_session(session: str) -> str:
    """The user's session a (sub-agent's) session id belongs to."""
    return session.split("/", 1)[0]


def group_turns(points: Iterable[Checkpoint]) -> list[Turn]:
    """Checkpoints grouped by prompt (session and turn), in the order the prompts began; a
    pre-restore point is an entry of its own."""
    turns: dict[tuple[str, int, str], Turn] = {}
    for point in points:
        # A sub-agent's calls (session "parent/agent-1") belong to the parent's prompt.
        root = root_session(point.session)
        key = (root, point.turn, point.id if point.kind != "before" else "")
        found = turns.get(key)
        if found is None:
            turns[key] = Turn(root, point.turn, [point])
        else:
            found.points.append(point)
    return list(turns.values())


@dataclass(frozen=True)
class Change:
    path: str
    #: What the checkpoint had (mode "000000": the file did not exist then).
    old_mode: str
    old_sha: str
    #: What is there now (mode "000000": the file is gone).
    new_mode: str
    new_sha: str

    @property
    def action(self) -> str:
        if self.old_mode == "000000":
            return "delete"  # created since: the restore removes it
        if self.new_mode == "000000":
            return "recreate"
        return "revert"


@dataclass
class RestorePlan:
    checkpoint: Checkpoint
    changes: list[Change]
    #: Paths the restore would change that someone else changed after the agent's last call.
    conflicts: list[str]
    #: Files kept by hash only that differ from the checkpoint (cannot be restored).
    unrestorable: list[str]
    now_tree: str


@dataclass
class RestoreReport:
    restored: list[str]
    deleted: list[str]
    unrestorable: list[str]
    skipped: list[str]
    #: The checkpoint of the state before the restore (to undo the restore).
    undo_id: str


def project_key(project: Path) -> str:
    real = os.path.realpath(project)
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:16]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(real).name)[:40]
    return f"{name or 'root'}-{digest}"


class CheckpointStore:
    """The checkpoints of one project (shared by every session in it)."""

    def __init__(
        self,
        project: Path,
        state_dir: Path,
        *,
        max_file_size: int = MAX_FILE_SIZE_MB * 1024 * 1024,
        max_files: int = MAX_FILES,
        watch: bool = False,
    ) -> None:
        self.project = Path(os.path.realpath(project))
        self.dir = Path(os.path.abspath(state_dir / "checkpoints" / project_key(self.project)))
        self.git = ShadowGit(self.dir / "store.git", self.project, self.dir / "index")
        self.log_path = self.dir / "log.jsonl"
        self.max_file_size = max_file_size
        self.max_files = max_files
        #: Lines of the log that could not be read (reported once by the front end).
        self.corrupt_lines = 0
        #: The log's format (1 until a store record says otherwise).
        self.version = 1
        self._found: dict[str, Checkpoint] = {}
        self._offset = 0
        self._tree_cache: tuple[tuple[int, ...], str] | None = None
        #: A long-lived store (a session's) learns what changed from inotify (see watch.py).
        self._watch = watch
        self._watcher: TreeWatcher | None = None
        #: The files kept by hash only, as of the last snapshot.
        self._big: dict[str, BigFile] = {}
        #: How many snapshots stat()ed the whole project (the rest used the watcher).
        self.full_scans = 0
        self._scanned_at = 0.0
        #: The tree of the last snapshot (the index's): the base of the next one's fast path.
        self._last_tree: str | None = None
        #: How many snapshots made their tree without git (see trees.py).
        self.fast_trees = 0
        #: Paths those snapshots changed that the index has not been told of yet.
        self._unindexed: set[bytes] = set()

    def close(self) -> None:
        """Stop watching the project (a store can still be used afterwards, scanning)."""
        self._stop_watching()
        if self._unindexed:
            # Not needed (a scan finds them by stat), but the next scan is cheaper.
            with contextlib.suppress(CheckpointError), self.locked():
                self._sync_index()

    def _stop_watching(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None

    # -- locking and set-up -------------------------------------------------------------
    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise CheckpointError(
                f"cannot open the checkpoint store in {self.dir}: {exc.strerror}."
            ) from None
        try:
            deadline = time.monotonic() + LOCK_TIMEOUT_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise CheckpointError(
                            f"the checkpoint store {self.dir} stayed locked by another "
                            f"session for {LOCK_TIMEOUT_S:.0f} s."
                        ) from None
                    time.sleep(0.02)
            self._init()
            yield
        finally:
            os.close(fd)

    def _init(self) -> None:
        self.git.init()
        exclude = self.git.git_dir / "info" / "exclude"
        lines = [f"/{name}\n" for name in OWN_FILES]
        # The store must never snapshot itself (a state dir inside the project, as in tests).
        with contextlib.suppress(ValueError):
            rel = self.dir.resolve().relative_to(self.project)
            lines.append(f"/{rel.as_posix()}/\n")
        try:
            current = exclude.read_text() if exclude.exists() else ""
            missing = [line for line in lines if line not in current.splitlines(keepends=True)]
            if missing:
                exclude.parent.mkdir(parents=True, exist_ok=True)
                tmp = exclude.with_name("exclude.tmp")
                tmp.write_text(current + "".join(missing))
                os.replace(tmp, exclude)
        except OSError as exc:
            raise CheckpointError(f"cannot write {exclude}: {exc.strerror}.") from None
        if missing and self.git.index.exists():
            # An index of an earlier version may hold them: they leave it.
            self.git.run(
                "update-index", "--force-remove", "-z", "--stdin",
                input=b"\0".join(os.fsencode(n) for n in OWN_FILES), check=False,
            )  # fmt: skip
            self._tree_cache = None
            self._last_tree = None

    # -- the log ------------------------------------------------------------------------
    def _append(self, *records: dict[str, Any]) -> None:
        """Append records to the log in one write, synced (a crash loses none of them)."""
        if not self.log_path.exists():
            records = ({"type": "store", "version": STORE_VERSION}, *records)
        line = "".join(json.dumps(record, ensure_ascii=True) + "\n" for record in records)
        try:
            fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode())
                os.fdatasync(fd)  # the appended bytes and the size that reaches them
            finally:
                os.close(fd)
        except OSError as exc:
            raise CheckpointError(
                f"cannot write the checkpoint log {self.log_path}: {exc.strerror}."
            ) from None

    def checkpoints(self) -> list[Checkpoint]:
        """Every checkpoint, oldest first, with its calls and after-state.

        The log is append-only, so only what was appended since the last read is parsed.
        """
        try:
            with open(self.log_path, "rb") as f:
                if f.seek(0, os.SEEK_END) < self._offset:
                    self._found, self._offset, self.corrupt_lines = {}, 0, 0  # replaced
                    self.version = 1
                f.seek(self._offset)
                raw = f.read()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise CheckpointError(f"cannot read {self.log_path}: {exc.strerror}.") from None
        end = raw.rfind(b"\n") + 1  # a line still being written is read next time
        self._offset += end
        for line in raw[:end].splitlines():
            if line.strip():
                self._apply(line)
        if self.version > STORE_VERSION:
            raise CheckpointError(
                f"the checkpoint store in {self.dir} was written by a newer codingcode (format "
                f"{self.version}; this one reads up to {STORE_VERSION}); upgrade codingcode, or "
                "move that directory aside to start a new store."
            )
        return list(self._found.values())

    def _apply(self, line: bytes) -> None:
        found = self._found
        try:
            rec = json.loads(line)
            kind = rec["type"]
            if kind == "store":
                self.version = int(rec["version"])
            elif kind == "checkpoint":
                found[rec["id"]] = Checkpoint(
                    id=rec["id"],
                    commit=rec["commit"],
                    tree=rec["tree"],
                    time=float(rec["time"]),
                    session=str(rec["session"]),
                    turn=int(rec["turn"]),
                    kind=str(rec.get("kind", "before")),
                    big={k: BigFile(int(v[0]), str(v[1])) for k, v in rec["big"].items()},
                )
            elif kind == "call" and rec["checkpoint"] in found:
                found[rec["checkpoint"]].calls.append(
                    {k: rec[k] for k in ("tool", "summary", "session", "turn") if k in rec}
                )
            elif kind == "after" and rec["checkpoint"] in found:
                found[rec["checkpoint"]].after = rec["tree"]
            elif kind == "pruned":
                for cid in rec["ids"]:
                    found.pop(cid, None)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError):
            self.corrupt_lines += 1

    def find(self, ref: str) -> Checkpoint:
        ref = ref.strip()
        matches = [c for c in self.checkpoints() if c.id.startswith(ref)] if ref else []
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UnknownCheckpointError(
                f"no checkpoint {ref!r} in this project; `codingcode checkpoints list` shows them."
            )
        raise UnknownCheckpointError(
            f"{ref!r} names {len(matches)} checkpoints; give more of the id."
        )

    def turns(self) -> list[Turn]:
        """The checkpoints grouped by prompt (see :class:`Turn`)."""
        return group_turns(self.checkpoints())

    def turn_changed_files(self, turn: Turn) -> list[str]:
        """The files a prompt's calls changed (empty while unknown)."""
        after = turn.after
        if after is None or after == turn.first.tree:
            return []
        return [c.path for c in self._diff(turn.first.tree, after) if not is_own_file(c.path)]

    def latest_turn_start(self) -> Checkpoint:
        """The state before the latest prompt (turn) of the latest session."""
        points = [c for c in self.checkpoints() if c.kind == "before"]
        if not points:
            raise UnknownCheckpointError("this project has no checkpoints yet.")
        last = points[-1]
        root = root_session(last.session)
        return next(c for c in points if root_session(c.session) == root and c.turn == last.turn)

    # -- snapshots ----------------------------------------------------------------------
    def _hash_big(self, path: Path, st: os.stat_result) -> BigFile:
        cache_path = self.dir / "bighash.json"
        key = f"{path}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
        try:
            cache = json.loads(cache_path.read_text())
            if not isinstance(cache, dict):
                cache = {}
        except (OSError, ValueError):
            cache = {}
        if key not in cache:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
            cache[key] = h.hexdigest()
            with contextlib.suppress(OSError):
                tmp = cache_path.with_suffix(".tmp")
                tmp.write_text(json.dumps(cache))
                os.replace(tmp, cache_path)
        return BigFile(st.st_size, str(cache[key]))

    def _snapshot(self) -> tuple[str, dict[str, BigFile]]:
        """Bring the index up to date with the project and write its tree."""
        tree, big = self._snapshot_tree()
        self._last_tree = tree
        return tree, big

    def _snapshot_tree(self) -> tuple[str, dict[str, BigFile]]:
        if self._watcher is not None and self.git.index.exists():
            changes = self._watcher.drain()
            if changes is None or time.monotonic() - self._scanned_at > RESCAN_AFTER_S:
                # It may have missed something (or it is time for the periodic scan):
                # a new watcher, then a scan.
                self._stop_watching()
            elif (done := self._snapshot_changes(changes)) is not None:
                return done
        if self._watch and self._watcher is None:
            self._start_watching()  # before the scan: whatever changes during it is seen
        return self._snapshot_scan()

    def _start_watching(self) -> None:
        ignored = self._ignored_dirs()
        try:
            watcher = TreeWatcher(os.fsencode(self.project))
        except OSError:
            self._watch = False  # no inotify here: every snapshot scans
            return
        if watcher.watch(b"", ignored.__contains__):
            self._watcher = watcher
        else:
            watcher.close()
            self._watch = False  # too many directories to watch: scanning it is

    def _ignored_dirs(self, *under: bytes) -> set[bytes]:
        """The directories git ignores as a whole (at or below ``under``, else anywhere)."""
        specs = [_literal(p) for p in under]
        listed = self.git.run(
            "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory",
            *(["--", *specs] if specs else []),
        ).stdout  # fmt: skip
        return {p[:-1] for p in listed.split(b"\0") if p.endswith(b"/")}

    def _snapshot_changes(self, changes: Changes) -> tuple[str, dict[str, BigFile]] | None:
        """Bring the index up to date from the paths the watcher saw change (only those are
        listed and read). None: a scan is needed instead."""
        watcher = self._watcher
        assert watcher is not None
        paths, new_dirs = changes.paths, changes.new_dirs
        changes.dirs |= new_dirs
        for _ in range(4):
            if not new_dirs:
                break
            # New directories are watched before they are listed, so a file made in one
            # meanwhile is either listed now or reported by the next drain.
            ignored = self._ignored_dirs(*new_dirs)
            for directory in new_dirs - ignored:
                if not watcher.watch(directory, ignored.__contains__):
                    self._stop_watching()
                    return None
            more = watcher.drain()
            if more is None:
                self._stop_watching()
                return None
            paths |= more.paths
            changes.dirs |= more.dirs
            new_dirs = more.new_dirs - new_dirs
        else:
            return None
        if len(paths) > MAX_WATCHED_CHANGES:
            return None
        if not paths and self._last_tree is not None:
            return self._last_tree, dict(self._big)  # nothing changed since the last one
        if paths and not (changes.new_dirs or changes.dirs):
            tree = self._fast_tree(paths)
            if tree is not None:
                self._unindexed |= paths
                return tree, dict(self._big)
        if not self._sync_index():
            return None
        if not paths:
            return self._write_tree(), dict(self._big)
        if not (changes.new_dirs or changes.dirs) and self._update_tracked(paths):
            return self._write_tree(), dict(self._big)
        listed = self.git.run(
            "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--",
            *(_literal(p) for p in paths),
        ).stdout  # fmt: skip
        update, too_big, found, dirs = self._sort(p for p in listed.split(b"\0") if p)
        if dirs:
            return None  # a file became a directory: the scan's fallback handles it
        if update:
            done = self.git.run(
                "update-index", "--add", "--remove", "-z", "--stdin",
                input=b"\0".join(update), check=False,
            )  # fmt: skip
            if done.returncode != 0:
                return None
        if too_big:
            self.git.run(
                "update-index", "--force-remove", "-z", "--stdin", input=b"\0".join(too_big)
            )
        big = {
            name: info
            for name, info in self._big.items()
            if not any(_under(os.fsencode(name), p) for p in paths)
        }
        big.update(found)
        self._big = big
        return self._write_tree(), dict(big)

    def _update_tracked(self, paths: set[bytes]) -> bool:
        """The common case in one git process: every changed path is a file the index
        already has (edited, or deleted). False: something else, nothing was changed."""
        big = {os.fsencode(name) for name in self._big}
        update, too_big, _, dirs = self._sort(sorted(paths))
        if dirs or too_big or len(update) != len(paths) or big & paths:
            return False
        # Without --add, a path the index does not have fails the whole command.
        done = self.git.run(
            "update-index", "--remove", "-z", "--stdin", input=b"\0".join(update), check=False
        )
        return done.returncode == 0

    def _fast_tree(self, paths: set[bytes]) -> str | None:
        """The new tree when ``paths`` are files the last tree holds (edited, deleted, their
        mode changed): made from it without a git process (trees.py). None: git makes it.

        The index learns of these paths later (:meth:`_sync_index`), before git next reads
        it; until then it is behind only on files whose stat data says so to any scan."""
        if self._last_tree is None or not self.git.sha1():
            return None
        big = {os.fsencode(name) for name in self._big}
        if big & paths:
            return None
        tree = updated_tree(
            Objects(self.git.git_dir),
            self._last_tree,
            os.fsencode(self.project),
            paths,
            self.max_file_size,
        )
        if tree is not None:
            self.fast_trees += 1
        return tree

    def _sync_index(self) -> bool:
        """Bring the index up to date on the paths fast snapshots left out of it; False:
        git refused (a path is something else now), and a scan sorts it out."""
        if not self._unindexed:
            return True
        pending, self._unindexed = sorted(self._unindexed), set()
        done = self.git.run(
            "update-index", "--remove", "-z", "--stdin", input=b"\0".join(pending), check=False
        )
        if done.returncode != 0:
            self._last_tree = None
            return False
        return True

    def _sort(
        self, paths: Iterable[bytes]
    ) -> tuple[list[bytes], list[bytes], dict[str, BigFile], bool]:
        """Split listed paths into index updates (files, links, deletions), files kept by
        hash only, and say whether any listed path is now a directory."""
        root = os.fsencode(self.project)
        update: list[bytes] = []
        too_big: list[bytes] = []
        big: dict[str, BigFile] = {}
        dirs = False
        for raw in paths:
            if raw.endswith(b"/"):
                continue  # a nested repository: not snapshotted
            full = os.path.join(root, raw)
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                update.append(raw)  # deleted: --remove drops it
                continue
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size > self.max_file_size:
                too_big.append(raw)
                with contextlib.suppress(OSError):
                    big[os.fsdecode(raw)] = self._hash_big(Path(os.fsdecode(full)), st)
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                update.append(raw)
            elif stat.S_ISDIR(st.st_mode):
                dirs = True
        return update, too_big, big, dirs

    def _snapshot_scan(self) -> tuple[str, dict[str, BigFile]]:
        """Find what changed by the index's stat data (every file is stat()ed)."""
        self.full_scans += 1
        self._scanned_at = time.monotonic()
        self._sync_index()  # when git refuses, the scan below finds those paths by stat
        fresh = not self.git.index.exists()
        if fresh:
            # Nothing is in the index yet: only the untracked walk is needed.
            listed = self.git.listings(("ls-files", "-z", "--others", "--exclude-standard"))
        else:
            # The untracked walk and the index's stat check run side by side.
            listed = self.git.listings(
                ("ls-files", "-z", "--others", "--exclude-standard"),
                ("ls-files", "-z", "--modified", "--deleted"),
            )
        paths = list(dict.fromkeys(p for out in listed for p in out.split(b"\0") if p))
        if fresh and len(paths) > self.max_files:
            raise CheckpointError(
                f"the project has more than {self.max_files:,} files to checkpoint "
                "(`checkpoints.maxFiles` in settings); checkpoints are off for it."
            )
        update, too_big, big, _ = self._sort(paths)
        if fresh or not update:
            pass
        else:
            done = self.git.run(
                "update-index", "--add", "--remove", "-z", "--stdin",
                input=b"\0".join(update), check=False,
            )  # fmt: skip
            fresh = done.returncode != 0  # a file became a directory or the like
        if fresh:
            # The whole tree at once (git's own parallel add), the big files left out.
            # A tiny core.bigFileThreshold streams every blob into one pack instead of
            # thousands of loose object files (the same bytes, far fewer file creations);
            # it is given to this command only, so diffs still see text as text.
            specs = [b".", *(b":(top,literal,exclude)" + raw for raw in too_big)]
            self.git.run(
                "-c", "core.bigFileThreshold=1",
                "add", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul",
                input=b"\0".join(specs), check=False,
            )  # fmt: skip
        if too_big:
            self.git.run(
                "update-index", "--force-remove", "-z", "--stdin", input=b"\0".join(too_big)
            )
        self._big = big
        return self._write_tree(), dict(big)

    def _write_tree(self) -> str:
        """The index's tree; an index unchanged since the last call gives the same tree."""
        try:
            st = os.stat(self.git.index)
            key: tuple[int, ...] | None = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        except OSError:
            key = None
        if key is not None and self._tree_cache is not None and self._tree_cache[0] == key:
            return self._tree_cache[1]
        tree = self.git.out("write-tree")
        self._tree_cache = (key, tree) if key is not None else None
        return tree

    def snapshot_tree(self) -> str:
        """The tree of the project as it is now (no checkpoint recorded)."""
        with self.locked():
            return self._snapshot()[0]

    def checkpoint(
        self, *, session: str, turn: int, tool: str, summary: str, kind: str = "before"
    ) -> Checkpoint:
        """Record the project's state before a call (reusing an identical one of the turn)."""
        with self.locked():
            tree, big = self._snapshot()
            points = self.checkpoints()
            last = next((c for c in reversed(points) if c.session == session), None)
            call = {"tool": tool, "summary": summary[:200], "session": session, "turn": turn}
            if (
                kind == "before"
                and last is not None
                and last.tree == tree
                and last.turn == turn
                and last.kind == "before"
            ):
                point = last
                self._append({"type": "call", "checkpoint": point.id, **call})
            else:
                commit = self.git.commit_tree(tree, f"codingcode checkpoint: {session} turn {turn}")
                point = Checkpoint(commit[:12], commit, tree, time.time(), session, turn, kind, big)
                self._write_ref(point.id, commit)
                self._append(
                    {
                        "type": "checkpoint",
                        "id": point.id,
                        "commit": commit,
                        "tree": tree,
                        "time": point.time,
                        "session": session,
                        "turn": turn,
                        "kind": kind,
                        "big": {k: [v.size, v.sha256] for k, v in big.items()},
                    },
                    {"type": "call", "checkpoint": point.id, **call},
                )
            self.checkpoints()  # read back what was just logged (and anything before it)
            return self._found.get(point.id, point)

    def _write_ref(self, cid: str, commit: str) -> None:
        """Keep the commit reachable: a loose ref, written as git writes one (under our lock)."""
        ref = self.git.git_dir / "refs" / "checkpoints" / cid
        try:
            ref.parent.mkdir(parents=True, exist_ok=True)
            tmp = ref.with_name(f"{cid}.lock")
            tmp.write_text(commit + "\n")
            os.replace(tmp, ref)
        except OSError as exc:
            raise CheckpointError(f"cannot write {ref}: {exc.strerror}.") from None

    def record_after(self, point: Checkpoint) -> None:
        """Record the state a checkpoint's call left (what the agent made of it)."""
        with self.locked():
            tree, _ = self._snapshot()
            self._append({"type": "after", "checkpoint": point.id, "tree": tree})
            self.checkpoints()
            point.after = tree

    # -- what changed -------------------------------------------------------------------
    def _diff(self, a: str, b: str) -> list[Change]:
        out = self.git.run("diff-tree", "-r", "-z", "--no-renames", "--raw", a, b).stdout
        parts = out.split(b"\0")
        changes: list[Change] = []
        i = 0
        while i + 1 < len(parts):
            head = parts[i].decode()
            if not head.startswith(":"):
                i += 1
                continue
            old_mode, new_mode, old_sha, new_sha, _status = head[1:].split(" ")
            changes.append(Change(os.fsdecode(parts[i + 1]), old_mode, old_sha, new_mode, new_sha))
            i += 2
        return changes

    def changed_files(self, point: Checkpoint) -> list[str]:
        """The files the checkpoint's calls changed (empty while unknown)."""
        if point.after is None or point.after == point.tree:
            return []
        return [c.path for c in self._diff(point.tree, point.after) if not is_own_file(c.path)]

    def diff_text(self, ref: str, *, color: bool = False) -> str:
        point = self.find(ref)
        now = self.snapshot_tree()
        args = ["diff-tree", "-p", "-r", "--no-renames", "--stat", point.tree, now]
        if color:
            args.insert(1, "--color=always")
        return self.git.run(*args).stdout.decode(errors="replace")

    # -- restore ------------------------------------------------------------------------
    def plan_restore(self, point: Checkpoint) -> RestorePlan:
        with self.locked():
            now, now_big = self._snapshot()
            points = self.checkpoints()
        # codingcode's own files are left as they are (a checkpoint of an earlier version
        # may hold them).
        changes = [c for c in self._diff(point.tree, now) if not is_own_file(c.path)]
        known = next((c.after for c in reversed(points) if c.after is not None), None)
        touched = {c.path for c in changes}
        outside = touched if known is None else {c.path for c in self._diff(known, now)}
        unrestorable = [path for path, info in point.big.items() if now_big.get(path) != info]
        return RestorePlan(point, changes, sorted(touched & outside), sorted(unrestorable), now)

    def restore(self, plan: RestorePlan, *, force: bool = False) -> RestoreReport:
        if plan.conflicts and not force:
            shown = ", ".join(plan.conflicts[:5]) + (" …" if len(plan.conflicts) > 5 else "")
            raise CheckpointError(
                f"{len(plan.conflicts)} file(s) were changed outside the agent since its last "
                f"call ({shown}); restoring would overwrite that. Use --force to restore anyway."
            )
        undo = self.checkpoint(
            session="restore",
            turn=0,
            tool="restore",
            summary=plan.checkpoint.id,
            kind="pre-restore",
        )
        blobs = self._read_blobs(
            [c.old_sha for c in plan.changes if c.action != "delete" and c.old_mode != "160000"]
        )
        report = RestoreReport([], [], list(plan.unrestorable), [], undo.id)
        for change in plan.changes:
            target = self.project / change.path
            try:
                if change.action == "delete":
                    if target.is_symlink() or target.is_file():
                        target.unlink()
                        report.deleted.append(change.path)
                        _remove_empty_parents(target.parent, self.project)
                    continue
                if change.old_mode == "160000":
                    report.skipped.append(change.path)
                    continue
                _write_entry(target, change.old_mode, blobs[change.old_sha], self.project)
                report.restored.append(change.path)
            except OSError as exc:
                report.skipped.append(f"{change.path} ({exc.strerror})")
        with self.locked():
            tree, _ = self._snapshot()
            self._append({"type": "after", "checkpoint": undo.id, "tree": tree})
        return report

    def _read_blobs(self, shas: list[str]) -> dict[str, bytes]:
        wanted = list(dict.fromkeys(shas))
        if not wanted:
            return {}
        out = self.git.run("cat-file", "--batch", input="\n".join(wanted).encode() + b"\n").stdout
        blobs: dict[str, bytes] = {}
        pos = 0
        for sha in wanted:
            end = out.index(b"\n", pos)
            header = out[pos:end].split(b" ")
            if len(header) != 3:
                raise CheckpointError(f"the checkpoint store lost object {sha}.")
            size = int(header[2])
            blobs[sha] = out[end + 1 : end + 1 + size]
            pos = end + 1 + size + 1
        return blobs

    # -- retention ----------------------------------------------------------------------
    def prune(
        self,
        *,
        max_age_days: float = MAX_AGE_DAYS,
        max_store_bytes: int | None = None,
        keep_ids: set[str] | None = None,
    ) -> int:
        """Drop checkpoints older than ``max_age_days``, then the oldest ones while the store is
        larger than ``max_store_bytes``, and the objects only they kept; returns how many."""
        keep = keep_ids or set()
        cutoff = time.time() - max_age_days * 86400
        dropped = 0
        with self.locked():
            old = [c.id for c in self.checkpoints() if c.time < cutoff and c.id not in keep]
            dropped += self._drop(old)
            # By size: the oldest quarter at a time (a gc between), the newest always kept.
            for _ in range(8):
                if max_store_bytes is None or self.size_bytes() <= max_store_bytes:
                    break
                rest = [c.id for c in self.checkpoints() if c.id not in keep][:-1]
                if not rest:
                    break
                dropped += self._drop(rest[: max(1, len(rest) // 4)])
        return dropped

    def _drop(self, ids: list[str]) -> int:
        if not ids:
            return 0
        self.git.run(
            "update-ref",
            "--stdin",
            input="".join(f"delete refs/checkpoints/{cid}\n" for cid in ids).encode(),
        )
        self._append({"type": "pruned", "ids": ids})
        self.checkpoints()
        self.git.run("gc", "--prune=now", "--quiet")
        return len(ids)

    def size_bytes(self) -> int:
        total = 0
        for root, _dirs, files in os.walk(self.dir):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(root, name)).st_size
        return total


def _literal(path: bytes) -> str:
    """A pathspec naming exactly ``path`` (from the top, no wildcards)."""
    return ":(top,literal)" + os.fsdecode(path)


def _under(path: bytes, top: bytes) -> bool:
    return path == top or path.startswith(top + b"/")


def _remove_empty_parents(directory: Path, root: Path) -> None:
    while directory != root and root in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def _write_entry(target: Path, mode: str, data: bytes, root: Path) -> None:
    """Put one file back atomically: a temporary name in the same directory, then rename.

    Walks down from the project root: a file or a symlink standing where a directory must
    be is removed first, so a restore never writes through a link to outside the project.
    """
    parent = target.parent
    current = root
    for part in parent.relative_to(root).parts:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            current.unlink()
    parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    tmp = parent / f".{target.name}.codingcode-restore"
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    if mode == "120000":
        os.symlink(os.fsdecode(data), tmp)
        os.replace(tmp, target)
        return
    owner: tuple[int, int] | None = None
    with contextlib.suppress(OSError):
        st = target.lstat()
        if stat.S_ISREG(st.st_mode):
            owner = (st.st_uid, st.st_gid)
    perm = 0o755 if mode == "100755" else 0o644
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            if owner is not None and os.geteuid() == 0:
                os.fchown(f.fileno(), *owner)
            os.fchmod(f.fileno(), perm & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
