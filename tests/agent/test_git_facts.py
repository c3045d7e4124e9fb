"""The git facts of the system prompt run git in codingcode itself, outside the sandbox: a
hostile repository's own configuration must not get a program run by them.

Ground truth: a real repository whose ``.git/config`` names a ``core.fsmonitor`` program or
a ``filter.*.clean`` driver that writes a marker file; a plain ``git status`` (the control)
runs it, ``git_facts`` must not. Before the fix ``codingcode run`` in such a repository ran
the program unsandboxed, which read ``~/.aws/credentials``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from codingcode.agent.context.prompt import git_facts

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\n")
    _git(repo, "add", "a.txt")
    _git(repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init")
    return repo


def _fsmonitor(repo: Path, marker: Path) -> None:
    _git(repo, "config", "core.fsmonitor", f"sh -c 'echo ran > {marker}; echo' #")


def _clean_filter(repo: Path, marker: Path) -> None:
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    _git(repo, "config", "filter.evil.clean", f"sh -c 'echo ran > {marker}; cat'")


def _included(repo: Path, marker: Path) -> None:
    script = repo.parent / "monitor.sh"
    script.write_text(f"#!/bin/sh\necho ran > {marker}\n")
    script.chmod(0o755)
    extra = repo.parent / "extra.cfg"
    extra.write_text(f"[core]\n\tfsmonitor = {script}\n")
    _git(repo, "config", "include.path", str(extra))


@pytest.mark.parametrize("plant", [_fsmonitor, _clean_filter, _included])
def test_repository_programs_do_not_run(repo: Path, tmp_path: Path, plant) -> None:
    marker = tmp_path / "ran"
    plant(repo, marker)
    (repo / "a.txt").write_text("two\n")  # dirty: git must look at the file
    subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True)
    assert marker.exists()  # the control: git itself runs the repository's program
    marker.unlink()
    branch, _dirty = git_facts(repo)
    assert branch == "main"
    assert not marker.exists()


def test_an_ordinary_repository_keeps_its_facts(repo: Path) -> None:
    assert git_facts(repo) == ("main", False)
    (repo / "a.txt").write_text("two\n")
    assert git_facts(repo) == ("main", True)


def test_outside_a_repository(tmp_path: Path) -> None:
    assert git_facts(tmp_path) == (None, None)
