"""The shadow git: a commit written without a git process is the one git would write."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codingcode.checkpoints import git as shadow
from codingcode.checkpoints.git import ShadowGit


def test_a_commit_is_written_as_git_commit_tree_writes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("a\n")
    sg = ShadowGit(tmp_path / "store.git", project, tmp_path / "index")
    sg.init()
    sg.run("add", "-A")
    tree = sg.out("write-tree")
    monkeypatch.setattr(shadow.time, "time", lambda: 1_800_000_000.5)
    ours = sg.commit_tree(tree, "codingcode checkpoint: s/agent-1 turn 3 ünïcode")
    env = {
        **sg.env(),
        "GIT_AUTHOR_DATE": "1800000000 +0000",
        "GIT_COMMITTER_DATE": "1800000000 +0000",
    }
    theirs = subprocess.run(
        ["git", "commit-tree", tree, "-m", "codingcode checkpoint: s/agent-1 turn 3 ünïcode"],
        env=env, capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip
    assert ours == theirs
    assert sg.out("cat-file", "-t", ours) == "commit"
    assert sg.run("fsck", "--strict").returncode == 0
    # Written again (same second): the object is there already, nothing is rewritten.
    assert sg.commit_tree(tree, "codingcode checkpoint: s/agent-1 turn 3 ünïcode") == ours
    leftovers = [p for p in (sg.git_dir / "objects" / ours[:2]).iterdir() if "tmp" in p.name]
    assert leftovers == []


def test_a_store_in_another_object_format_is_left_to_git(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("a\n")
    git_dir = tmp_path / "store.git"
    done = subprocess.run(
        ["git", "init", "--bare", "-q", "--object-format=sha256", str(git_dir)],
        capture_output=True, check=False, env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull},
    )  # fmt: skip
    if done.returncode != 0:  # pragma: no cover - a git without SHA-256
        pytest.skip("this git cannot make a SHA-256 repository")
    sg = ShadowGit(git_dir, project, tmp_path / "index")
    sg.run("add", "-A")
    tree = sg.out("write-tree")
    commit = sg.commit_tree(tree, "m")
    assert len(commit) == 64
    assert sg.out("cat-file", "-t", commit) == "commit"
