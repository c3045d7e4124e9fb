"""Read-only commands: what runs unasked, the tricks that look read-only but are not, and
ground truth (the commands called read-only really change nothing; the tricks really write)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codingcode.approval.readonly import builtin_programs, classify, programs_with

READ_ONLY = [
    "ls",
    "ls -la src",
    "git status",
    "git status --short",
    "git log --oneline -5",
    "git log -p -1",
    "git diff",
    "git diff HEAD -- src/app.py",
    "git show HEAD --stat",
    "git branch",
    "git branch -a",
    "git blame src/app.py",
    "git --no-pager log -1",
    "cat src/app.py",
    "head -n 5 src/app.py",
    "tail -3 src/app.py",
    "wc -l src/*.py",
    "grep -rn hello src",
    "grep -e x -r src --include=*.py",
    "rg hello src",
    "find . -name '*.py'",
    "find src -type f -newer README.md",
    "pwd",
    "echo hello",
    "echo $HOME",
    "tree src",
    "du -sh .",
    "file src/app.py",
    "diff README.md src/app.py",
    "ls | head -3",
    "cat src/app.py | grep hello | wc -l",
    "cd src && ls",
    "ls > /dev/null 2>&1",
    "cat /etc/hosts",
    "cat < README.md",
]

NOT_READ_ONLY = [
    # the tricks
    "git diff --output=f",
    "git log --output f",
    "find . -fprint f",
    "find . -fprintf f %p",
    "find . -fls f",
    "less README.md",
    "less +'!touch x' README.md",
    "ls | tee f",
    "git -c core.pager='touch x' log",
    "git -c diff.external=./x diff",
    # writes, runs or leaves the project
    "echo hi > f",
    "echo hi >> f",
    "ls &> f",
    "find . -exec rm {} +",
    "find . -delete",
    "find . -execdir touch x ;",
    "git branch new",
    "git branch -D main",
    "git diff --ext-diff",
    "git diff --no-index /etc/hostname x",
    "git --git-dir=/tmp/x status",
    "git -p log",
    "git push",
    "git checkout .",
    "rg --pre ./x hello",
    "tree -o f",
    "file -C -m x",
    "echo $(rm -rf src)",
    "echo `touch x`",
    "cat $(echo README.md)",
    "cat ../outside",
    "cat /tmp/x",
    "ls ~",
    "cat ~/.ssh/id_rsa",
    "cat .env",
    "cat /etc/shadow",
    "cat /proc/self/environ",
    "cd .. && ls",
    "cd / && ls",
    "find / -name x",
    "FOO=1 ls",
    "PAGER=./x git log",
    "bash -c ls",
    "sh -c 'cat x'",
    "xargs cat",
    "env ls",
    "eval ls",
    "$X",
    "python3 -c 'print(1)'",
    "sed -n 1p README.md",
    "sort -o f README.md",
    "cp a b",
    "ls; rm -rf src",
    "ls && touch x",
    "/tmp/ls",
    "./ls",
    "l* -la",
]


@pytest.fixture
def repo(project: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('hello')\n")
    (project / "README.md").write_text("# hi\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "-C", str(project), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(project), "commit", "-qm", "init"], check=True, env=env)
    return project


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only(repo: Path, command: str) -> None:
    verdict = classify(command, str(repo), repo)
    assert verdict.read_only, verdict.reason


@pytest.mark.parametrize("command", NOT_READ_ONLY)
def test_not_read_only(repo: Path, command: str) -> None:
    assert not classify(command, str(repo), repo).read_only


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            if ".git" in p.relative_to(root).parts and name in ("index", "ORIG_HEAD"):
                continue  # git status refreshes its index stat cache: not the user's data
            st = p.stat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def test_ground_truth_read_only_commands_change_nothing(repo: Path) -> None:
    """Run every command called read-only for real: no file appears, none changes."""
    before = _tree(repo)
    for command in READ_ONLY:
        subprocess.run(
            ["bash", "-c", command],
            cwd=repo,
            capture_output=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    assert _tree(repo) == before


@pytest.mark.parametrize(
    "command",
    ["git diff HEAD --output=f", "find . -maxdepth 0 -fprint f", "ls | tee f", "echo x > f"],
)
def test_ground_truth_the_tricks_really_write(repo: Path, command: str) -> None:
    """The tricks are real: each writes a file, and none is called read-only."""
    assert not classify(command, str(repo), repo).read_only
    subprocess.run(["bash", "-c", command], cwd=repo, capture_output=True, timeout=30)
    assert (repo / "f").exists()


def test_a_repository_config_that_runs_programs_makes_git_ask(repo: Path) -> None:
    assert classify("git status", str(repo), repo).read_only
    with (repo / ".git" / "config").open("a") as f:
        f.write("[core]\n\tfsmonitor = ./evil.sh\n")
    verdict = classify("git status", str(repo), repo)
    assert not verdict.read_only and "fsmonitor" in verdict.reason


def test_a_symlink_out_of_the_project_is_not_read_unasked(repo: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s")
    (repo / "link").symlink_to(secret)
    assert not classify("cat link", str(repo), repo).read_only
    assert not classify("cat *", str(repo), repo).read_only  # the glob reaches it too


def test_the_list_is_data_and_extensible(repo: Path) -> None:
    assert "ls" in builtin_programs() and "git" in builtin_programs()
    assert not classify("jq . x.json", str(repo), repo).read_only
    more = programs_with({"jq": {"pattern_first": True}})
    assert classify("jq . x.json", str(repo), repo, more).read_only
    assert not classify("jq . ../x.json", str(repo), repo, more).read_only


_WORDS = st.text(alphabet="abcdefgh./-_*", min_size=1, max_size=8)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.sampled_from(sorted(builtin_programs())),
    st.lists(_WORDS, max_size=4),
    st.sampled_from([">", ">>", "&>", ">|"]),
    _WORDS,
)
def test_an_output_redirection_is_never_read_only(
    project: Path, program: str, args: list[str], op: str, target: str
) -> None:
    command = " ".join([program, *args]) + f" {op} {target}"
    assert not classify(command, str(project), project).read_only


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True), st.lists(_WORDS, max_size=3))
def test_a_program_off_the_list_is_never_read_only(
    project: Path, program: str, args: list[str]
) -> None:
    if program in builtin_programs():
        return
    assert not classify(" ".join([program, *args]), str(project), project).read_only


def test_the_cost_is_bounded(project: Path) -> None:
    import time

    start = time.perf_counter()
    long = "ls " + " ".join(f"f{i}" for i in range(20_000))
    assert not classify(long, str(project), project).read_only
    many = "ls " + " ".join(f"f{i}" for i in range(1_500))
    assert not classify(many, str(project), project).read_only
    assert time.perf_counter() - start < 20  # generous: a loaded machine
