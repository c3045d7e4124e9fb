"""Incremental snapshots from inotify: always the same tree as a full scan would give.

The ground truth is a second store that stat()s everything on every snapshot: after each of
a few hundred seeded random changes (edits, new and deleted files and directories, renames,
modes, links, ignored directories, files growing past the size limit, a file becoming a
directory, a changed .gitignore), both stores must see the same tree and the same big files,
and the watching store must have taken its fast path for the ordinary ones.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from codingcode.checkpoints import CheckpointStore
from codingcode.checkpoints.watch import TreeWatcher

BIG = 4096


def stores(project: Path, tmp_path: Path) -> tuple[CheckpointStore, CheckpointStore]:
    watched = CheckpointStore(project, tmp_path / "watched", max_file_size=BIG, watch=True)
    scanned = CheckpointStore(project, tmp_path / "scanned", max_file_size=BIG)
    return watched, scanned


def same_state(watched: CheckpointStore, scanned: CheckpointStore) -> None:
    with watched.locked():
        tree_w, big_w = watched._snapshot()
    with scanned.locked():
        tree_s, big_s = scanned._snapshot()
    assert tree_w == tree_s
    assert big_w == big_s


def files(project: Path) -> list[Path]:
    return [
        p for p in project.rglob("*") if ".git" not in p.parts and (p.is_file() or p.is_symlink())
    ]


def dirs(project: Path) -> list[Path]:
    return [
        p for p in project.rglob("*") if p.is_dir() and not p.is_symlink() and ".git" not in p.parts
    ]


def step(rng: random.Random, project: Path, n: int) -> str:
    """One random change; returns its kind."""
    kind = rng.choice(
        ["edit", "edit", "edit", "new", "new", "delete", "mkdir", "mvdir", "rmdir", "chmod",
         "link", "ignored", "big", "shrink", "deep"]
    )  # fmt: skip
    existing = files(project)
    folders = [project, *dirs(project)]
    if kind == "edit" and existing:
        target = rng.choice(existing)
        if not target.is_symlink():
            target.write_text(f"edit {n}\n")
    elif kind == "new":
        (rng.choice(folders) / f"new{n}.txt").write_text(f"new {n}\n")
    elif kind == "delete" and existing:
        rng.choice(existing).unlink()
    elif kind == "mkdir":
        d = rng.choice(folders) / f"dir{n}"
        d.mkdir()
        (d / "inside.py").write_text("x = 1\n")
    elif kind == "deep":
        d = rng.choice(folders) / f"a{n}" / "b" / "c"
        d.mkdir(parents=True)
        (d / "leaf.txt").write_text("leaf\n")
    elif kind == "mvdir" and len(folders) > 1:
        src = rng.choice(folders[1:])
        dst = rng.choice(folders) / f"moved{n}"
        if not str(dst).startswith(str(src)):
            src.rename(dst)
    elif kind == "rmdir" and len(folders) > 1:
        shutil.rmtree(rng.choice(folders[1:]))
    elif kind == "chmod" and existing:
        target = rng.choice(existing)
        if not target.is_symlink():
            target.chmod(target.stat().st_mode ^ 0o111)
    elif kind == "link":
        link = rng.choice(folders) / f"link{n}"
        link.symlink_to(f"target{n % 3}")
    elif kind == "ignored":
        d = project / "build" / f"out{n}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "artifact.o").write_text("obj\n")
    elif kind == "big":
        (rng.choice(folders) / f"big{n}.bin").write_bytes(os.urandom(BIG + 1))
    elif kind == "shrink":
        bigs = [p for p in existing if p.name.startswith("big")]
        if bigs:
            rng.choice(bigs).write_bytes(b"small now\n")
    return kind


def seed_project(project: Path) -> None:
    (project / ".gitignore").write_text("build/\n*.log\n")
    for i in range(30):
        d = project / f"pkg{i % 5}" / f"mod{i % 3}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.py").write_text(f"print({i})\n")
    (project / "app.log").write_text("ignored\n")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_snapshots_equal_full_scans(project: Path, tmp_path: Path, seed: int) -> None:
    seed_project(project)
    watched, scanned = stores(project, tmp_path)
    same_state(watched, scanned)
    rng = random.Random(seed)
    for n in range(120):
        step(rng, project, n)
        same_state(watched, scanned)
    # The watcher did the work: only the first snapshot (and moves of a file into a
    # directory's place, which fall back) stat()ed the whole project.
    assert watched.full_scans <= 1 + 120 // 10, watched.full_scans
    assert scanned.full_scans == 121
    # Edits, deletions and mode changes of files the snapshot held made their tree without
    # git (trees.py), and it was the tree git makes (the scanning store's).
    assert watched.fast_trees > 10, watched.fast_trees
    watched.close()


def test_trees_made_without_git_are_the_trees_git_makes(project: Path, tmp_path: Path) -> None:
    seed_project(project)
    (project / "lonely").mkdir()
    (project / "lonely" / "only.txt").write_text("only\n")
    (project / "link").symlink_to("pkg0")
    watched, scanned = stores(project, tmp_path)
    same_state(watched, scanned)
    changes = [
        lambda: (project / "pkg1" / "mod1" / "f1.py").write_text("edited\n"),
        lambda: (project / "pkg2" / "mod2" / "f2.py").chmod(0o755),
        lambda: (project / "lonely" / "only.txt").unlink(),  # its directory goes too
        lambda: ((project / "link").unlink(), (project / "link").symlink_to("pkg1")),
        lambda: (project / "pkg1" / "mod0" / "f6.py").unlink(),
        lambda: (project / "pkg3" / "mod0" / "f3.py").write_bytes(b"\x00\xff binary"),
    ]
    for n, change in enumerate(changes, 1):
        change()
        same_state(watched, scanned)
        assert watched.fast_trees == n
    # git reads what was written without it (fsck reads every object; the unreachable
    # ones are the snapshots no checkpoint was recorded for, here all of them).
    watched.git.run("fsck", "--strict", "--unreachable", "--no-dangling")
    tree = watched.snapshot_tree()
    listed = watched.git.out("ls-tree", "-r", tree, "--", "pkg1/mod1/f1.py")
    assert listed.startswith("100644 blob ")
    assert watched.git.out("cat-file", "-p", listed.split()[2]) == "edited"
    # A tree that is no longer a loose object (packed, as prune leaves it): git makes it.
    watched.git.run("gc", "--quiet")
    (project / "pkg4" / "mod1" / "f4.py").write_text("after gc\n")
    same_state(watched, scanned)
    assert watched.fast_trees == len(changes)
    (project / "pkg4" / "mod1" / "f4.py").write_text("and again\n")
    same_state(watched, scanned)
    assert watched.fast_trees == len(changes) + 1
    # The index learns of those files later; by the end of the session at the latest.
    assert watched.git.run("ls-files", "-z", "--modified").stdout == b"pkg4/mod1/f4.py\0"
    watched.close()
    assert watched.git.run("ls-files", "-z", "--modified").stdout == b""


def test_a_changed_gitignore_and_a_file_becoming_a_directory_fall_back_to_a_scan(
    project: Path, tmp_path: Path
) -> None:
    seed_project(project)
    watched, scanned = stores(project, tmp_path)
    same_state(watched, scanned)
    (project / "app.log").write_text("still ignored\n")
    same_state(watched, scanned)
    assert watched.full_scans == 1
    (project / ".gitignore").write_text("build/\n")  # app.log is no longer ignored
    same_state(watched, scanned)
    assert watched.full_scans == 2
    target = project / "pkg0" / "mod0" / "f0.py"
    target.unlink()
    target.mkdir()
    (target / "inner.py").write_text("inner\n")
    same_state(watched, scanned)
    watched.close()


def test_an_overflowed_event_queue_is_noticed(project: Path, tmp_path: Path) -> None:
    seed_project(project)
    watched, scanned = stores(project, tmp_path)
    same_state(watched, scanned)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 50_000:
        pytest.skip(f"an inotify queue of {limit} events is too long to overflow in a test")
    many = project / "pkg1" / "mod1"
    for i in range(limit + 10):
        (many / f"g{i}.txt").touch()
    scans = watched.full_scans
    same_state(watched, scanned)
    assert watched.full_scans == scans + 1  # the overflow was seen, so it scanned
    (many / "g0.txt").write_text("after\n")
    same_state(watched, scanned)
    assert watched.full_scans == scans + 1  # and a new watcher took over
    watched.close()


def test_the_watcher_skips_git_nested_repositories_and_what_it_is_told(tmp_path: Path) -> None:
    root = tmp_path / "p"
    for d in ("a/b", ".git/objects", "nested/.git", "node_modules/x/y", "c"):
        (root / d).mkdir(parents=True)
    watcher = TreeWatcher(os.fsencode(root))
    assert watcher.watch(b"", {b"node_modules"}.__contains__)
    assert watcher.watched == 4  # the root, a, a/b and c
    (root / "a" / "b" / "new.txt").write_text("x")
    (root / "node_modules" / "x" / "y" / "z.js").write_text("x")
    (root / "c" / "sub").mkdir()
    changes = watcher.drain()
    assert changes is not None
    assert changes.paths == {b"a/b/new.txt", b"c/sub"}
    assert changes.new_dirs == {b"c/sub"}
    watcher.close()


def test_the_watch_limit_gives_up_cleanly(tmp_path: Path) -> None:
    root = tmp_path / "p"
    for i in range(10):
        (root / f"d{i}").mkdir(parents=True)
    watcher = TreeWatcher(os.fsencode(root), limit=5)
    assert not watcher.watch(b"", lambda _: False)
    assert watcher.drain() is None
    watcher.close()


def test_a_full_scan_still_comes_periodically(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What inotify cannot see (a write through mmap or through a hard link from outside the
    project) is caught by the periodic scan."""
    import codingcode.checkpoints.store as store_module

    seed_project(project)
    outside = tmp_path / "outside.py"
    os.link(project / "pkg0" / "mod0" / "f0.py", outside)
    watched, scanned = stores(project, tmp_path)
    same_state(watched, scanned)
    with outside.open("r+") as f:  # through the other link: no event in the project
        f.write("changed via the link\n")
    with watched.locked():
        stale, _ = watched._snapshot()
    with scanned.locked():
        truth, _ = scanned._snapshot()
    assert stale != truth  # inotify's blind spot, shown
    monkeypatch.setattr(store_module, "RESCAN_AFTER_S", 0.0)
    same_state(watched, scanned)
    assert watched.full_scans == 2
    (project / "pkg1" / "mod1" / "later.txt").write_text("later\n")
    monkeypatch.setattr(store_module, "RESCAN_AFTER_S", 60.0)
    same_state(watched, scanned)  # and the new watcher took over
    assert watched.full_scans == 2
    watched.close()
