"""The checkpoint store: snapshots, restores, the user's git untouched, faults."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from codingcode.checkpoints import CheckpointError, CheckpointStore, UnknownCheckpointError


def git(project: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=u@x", "-c", "user.name=u", *args],
        cwd=project,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def dot_git_fingerprint(project: Path) -> dict[str, str]:
    """Every file under .git with its content hash (objects, refs, index, config, hooks)."""
    out: dict[str, str] = {}
    for root, _dirs, files in os.walk(project / ".git"):
        for name in files:
            p = Path(root) / name
            out[str(p.relative_to(project))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def store(project: Path, tmp_path: Path) -> CheckpointStore:
    return CheckpointStore(project, tmp_path / "state")


def fill(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('v1')\n")
    (project / "run.sh").write_text("#!/bin/sh\necho run\n")
    (project / "run.sh").chmod(0o755)
    (project / "blob.bin").write_bytes(bytes(range(256)) * 10)
    (project / "link").symlink_to("src/app.py")
    (project / "docs").mkdir()
    (project / "docs" / "x.md").write_text("# x\n")


def test_restore_brings_back_edits_deletions_and_removes_new_files(
    project: Path, store: CheckpointStore
) -> None:
    fill(project)
    point = store.checkpoint(session="s", turn=1, tool="edit_file", summary="src/app.py")
    (project / "src" / "app.py").write_text("print('v2')\n")
    (project / "gen.txt").write_text("gen\n")
    (project / "docs" / "x.md").unlink()
    (project / "docs").rmdir()
    (project / "run.sh").chmod(0o644)
    (project / "blob.bin").write_bytes(b"\0garbage")
    (project / "link").unlink()
    (project / "link").symlink_to("elsewhere")
    store.record_after(point)
    assert set(store.changed_files(point)) == {
        "src/app.py",
        "gen.txt",
        "docs/x.md",
        "run.sh",
        "blob.bin",
        "link",
    }

    report = store.restore(store.plan_restore(point))

    assert (project / "src" / "app.py").read_text() == "print('v1')\n"
    assert not (project / "gen.txt").exists()
    assert (project / "docs" / "x.md").read_text() == "# x\n"
    assert stat.S_IMODE((project / "run.sh").stat().st_mode) & 0o111
    assert (project / "blob.bin").read_bytes() == bytes(range(256)) * 10
    assert os.readlink(project / "link") == "src/app.py"
    assert report.deleted == ["gen.txt"] and report.undo_id


def test_a_restore_can_be_undone(project: Path, store: CheckpointStore) -> None:
    (project / "a.txt").write_text("old\n")
    point = store.checkpoint(session="s", turn=1, tool="write_file", summary="a.txt")
    (project / "a.txt").write_text("new\n")
    store.record_after(point)
    report = store.restore(store.plan_restore(point))
    assert (project / "a.txt").read_text() == "old\n"
    undo = store.find(report.undo_id)
    store.restore(store.plan_restore(undo))
    assert (project / "a.txt").read_text() == "new\n"


def test_the_users_git_is_untouched_and_gitignored_files_are_skipped(
    project: Path, store: CheckpointStore
) -> None:
    git(project, "init", "-q")
    (project / ".gitignore").write_text("build/\n")
    (project / "build").mkdir()
    (project / "build" / "out.o").write_text("object")
    (project / "tracked.txt").write_text("t1\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "init")
    (project / "tracked.txt").write_text("t2\n")
    git(project, "stash")
    (project / "untracked.txt").write_text("u\n")
    before = dot_git_fingerprint(project)

    point = store.checkpoint(session="s", turn=1, tool="execute_command", summary="make")
    (project / "tracked.txt").write_text("changed by the agent\n")
    (project / "build" / "out.o").write_text("rebuilt")
    store.record_after(point)
    store.restore(store.plan_restore(point))

    assert dot_git_fingerprint(project) == before
    assert (project / "tracked.txt").read_text() == "t1\n"
    # Ignored: not checkpointed, so not restored either.
    assert (project / "build" / "out.o").read_text() == "rebuilt"
    assert "build/out.o" not in store.changed_files(point)


def test_works_in_a_project_that_is_not_a_git_repository(
    project: Path, store: CheckpointStore
) -> None:
    (project / "notes.txt").write_text("n\n")
    point = store.checkpoint(session="s", turn=1, tool="edit_file", summary="notes.txt")
    (project / "notes.txt").write_text("m\n")
    store.record_after(point)
    store.restore(store.plan_restore(point))
    assert (project / "notes.txt").read_text() == "n\n"
    assert not (project / ".git").exists()


def test_changes_made_outside_the_agent_are_not_clobbered_without_force(
    project: Path, store: CheckpointStore
) -> None:
    (project / "a.txt").write_text("1\n")
    point = store.checkpoint(session="s", turn=1, tool="edit_file", summary="a.txt")
    (project / "a.txt").write_text("2 by the agent\n")
    store.record_after(point)
    (project / "a.txt").write_text("3 by the user\n")  # after the agent's last call
    plan = store.plan_restore(point)
    assert plan.conflicts == ["a.txt"]
    with pytest.raises(CheckpointError, match="--force"):
        store.restore(plan)
    assert (project / "a.txt").read_text() == "3 by the user\n"
    store.restore(plan, force=True)
    assert (project / "a.txt").read_text() == "1\n"


def test_big_files_are_kept_by_hash_only_and_named(project: Path, tmp_path: Path) -> None:
    store = CheckpointStore(project, tmp_path / "state", max_file_size=1000)
    (project / "big.dat").write_bytes(b"x" * 5000)
    (project / "small.txt").write_text("s\n")
    point = store.checkpoint(session="s", turn=1, tool="execute_command", summary="gen")
    assert set(point.big) == {"big.dat"}
    assert point.big["big.dat"].sha256 == hashlib.sha256(b"x" * 5000).hexdigest()
    (project / "big.dat").write_bytes(b"y" * 5000)
    store.record_after(point)
    plan = store.plan_restore(point)
    assert plan.unrestorable == ["big.dat"]
    report = store.restore(plan)
    assert report.unrestorable == ["big.dat"]
    # Never stored as an object in the store.
    objects = subprocess.run(
        [
            "git",
            "--git-dir",
            str(store.git.git_dir),
            "cat-file",
            "--batch-all-objects",
            "--batch-check",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "5000" not in objects.split()


def test_restore_never_writes_through_a_symlink_put_where_a_directory_was(
    project: Path, store: CheckpointStore, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "d").mkdir()
    (project / "d" / "f.txt").write_text("inside\n")
    point = store.checkpoint(session="s", turn=1, tool="execute_command", summary="swap")
    (project / "d" / "f.txt").unlink()
    (project / "d").rmdir()
    (project / "d").symlink_to(outside)
    store.record_after(point)
    store.restore(store.plan_restore(point))
    assert not (outside / "f.txt").exists()
    assert (project / "d").is_dir() and not (project / "d").is_symlink()
    assert (project / "d" / "f.txt").read_text() == "inside\n"


def test_identical_states_in_one_turn_share_a_checkpoint(
    project: Path, store: CheckpointStore
) -> None:
    (project / "a.txt").write_text("a\n")
    first = store.checkpoint(session="s", turn=1, tool="execute_command", summary="ls")
    second = store.checkpoint(session="s", turn=1, tool="execute_command", summary="pwd")
    third = store.checkpoint(session="s", turn=2, tool="execute_command", summary="ls")
    assert first.id == second.id != third.id
    assert [c["summary"] for c in store.find(first.id).calls] == ["ls", "pwd"]
    assert store.latest_turn_start().id == third.id


def test_unknown_and_ambiguous_ids_are_clear(project: Path, store: CheckpointStore) -> None:
    with pytest.raises(UnknownCheckpointError, match="no checkpoint"):
        store.find("deadbeef")
    with pytest.raises(UnknownCheckpointError, match="no checkpoints yet"):
        store.latest_turn_start()


def test_corrupt_log_lines_are_skipped_and_counted(project: Path, store: CheckpointStore) -> None:
    (project / "a.txt").write_text("a\n")
    point = store.checkpoint(session="s", turn=1, tool="edit_file", summary="a.txt")
    with open(store.log_path, "ab") as f:
        f.write(b'{"type": "checkpoint", "id": \n\xff\xfe garbage\n')
    assert [c.id for c in store.checkpoints()] == [point.id]
    assert store.corrupt_lines == 2


def test_a_read_only_state_dir_is_a_clear_error(project: Path, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root ignores permissions: make the store's directory a file instead.
        state = tmp_path / "state"
        (state / "checkpoints").mkdir(parents=True)
        store = CheckpointStore(project, state)
        store.dir.write_text("not a directory")
    else:
        state = tmp_path / "ro"
        state.mkdir()
        state.chmod(0o500)
        store = CheckpointStore(project, state)
    with pytest.raises(CheckpointError, match="cannot open the checkpoint store"):
        store.checkpoint(session="s", turn=1, tool="edit_file", summary="x")


def test_a_corrupt_store_is_a_clear_error(project: Path, store: CheckpointStore) -> None:
    (project / "a.txt").write_text("a\n")
    store.checkpoint(session="s", turn=1, tool="edit_file", summary="a.txt")
    (store.git.git_dir / "HEAD").write_text("garbage")
    (store.git.git_dir / "objects").rename(store.git.git_dir / "objects-gone")
    (project / "a.txt").write_text("b\n")
    with pytest.raises(CheckpointError, match="checkpoint store"):
        store.checkpoint(session="s", turn=2, tool="edit_file", summary="a.txt")


def test_concurrent_sessions_do_not_corrupt_the_store(project: Path, tmp_path: Path) -> None:
    for i in range(20):
        (project / f"f{i}.txt").write_text(f"{i}\n")
    errors: list[BaseException] = []

    def session(name: str) -> None:
        store = CheckpointStore(project, tmp_path / "state")
        try:
            for turn in range(8):
                point = store.checkpoint(session=name, turn=turn, tool="write_file", summary="x")
                (project / f"{name}-{turn}.txt").write_text(name)
                store.record_after(point)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=session, args=(f"s{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    store = CheckpointStore(project, tmp_path / "state")
    points = store.checkpoints()
    assert store.corrupt_lines == 0
    assert {p.session for p in points} == {"s0", "s1", "s2", "s3"}
    fsck = subprocess.run(
        ["git", "--git-dir", str(store.git.git_dir), "fsck", "--no-dangling"],
        capture_output=True,
        text=True,
    )
    assert fsck.returncode == 0, fsck.stderr
    # Every checkpoint restores to a consistent state.
    first = points[0]
    store.restore(store.plan_restore(first), force=True)
    assert sorted(p.name for p in project.iterdir()) == sorted(f"f{i}.txt" for i in range(20))


def test_prune_drops_old_checkpoints_and_their_objects(
    project: Path, store: CheckpointStore
) -> None:
    (project / "a.txt").write_text("a\n")
    old = store.checkpoint(session="s", turn=1, tool="edit_file", summary="a.txt")
    (project / "a.txt").write_text("b\n")
    new = store.checkpoint(session="s", turn=2, tool="edit_file", summary="a.txt")
    assert store.prune(max_age_days=0, keep_ids={new.id}) == 1
    assert [c.id for c in store.checkpoints()] == [new.id]
    with pytest.raises(UnknownCheckpointError):
        store.find(old.id)


def test_prune_by_size_keeps_the_newest(project: Path, store: CheckpointStore) -> None:
    ids = []
    for i in range(6):
        (project / "data.bin").write_bytes(os.urandom(200_000))  # old versions only in old points
        ids.append(store.checkpoint(session="s", turn=i, tool="write_file", summary="").id)
    big = store.size_bytes()
    dropped = store.prune(max_age_days=1000, max_store_bytes=big // 2)
    remaining = [c.id for c in store.checkpoints()]
    assert dropped >= 1 and remaining[-1] == ids[-1]
    assert store.size_bytes() < big


def test_the_first_checkpoint_packs_its_blobs_and_diffs_still_show_text(
    project: Path, store: CheckpointStore
) -> None:
    for i in range(300):
        (project / f"m{i}.py").write_text(f"value = {i}\n")
    first = store.checkpoint(session="s", turn=1, tool="edit_file", summary="")
    objects = store.git.git_dir / "objects"
    loose = [p for p in objects.glob("??/*")]
    packs = list((objects / "pack").glob("*.pack"))
    assert len(packs) == 1 and len(loose) < 10  # the tree/commit may be loose; blobs are not
    (project / "m7.py").write_text("value = 'seven'\n")
    text = store.diff_text(first.id)
    assert "-value = 7" in text and "+value = 'seven'" in text


def test_a_turn_groups_its_calls_and_its_sub_agents() -> None:
    from codingcode.checkpoints.store import Checkpoint, group_turns

    def point(cid: str, session: str, turn: int, kind: str = "before") -> Checkpoint:
        return Checkpoint(cid, cid * 4, "t" + cid, 0.0, session, turn, kind)

    turns = group_turns(
        [
            point("a", "s1", 1),
            point("b", "s1/explore-1", 1),  # a sub-agent's call: the parent's prompt
            point("c", "s1", 1),
            point("d", "s1", 2),
            point("e", "restore", 0, "pre-restore"),
            point("f", "s2", 1),
        ]
    )
    assert [(t.session, t.turn, [p.id for p in t.points]) for t in turns] == [
        ("s1", 1, ["a", "b", "c"]),
        ("s1", 2, ["d"]),
        ("restore", 0, ["e"]),
        ("s2", 1, ["f"]),
    ]
    assert turns[0].first.id == "a" and turns[0].to_json()["checkpoints"] == ["a", "b", "c"]
