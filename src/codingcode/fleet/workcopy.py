"""A task's fresh working copy and its changes.

The copy is a clone of ``repo`` checked out at ``ref``, or a copy of the ``project``
directory as it is. Its starting state is recorded in a git directory of its own beside
the copy (never inside it, so the agent cannot see or change it), and the task's changes
are ``git diff --binary`` against that state: a patch that applies to the starting
revision with ``git apply``, binary files included.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from codingcode.fleet.tasks import FleetError, TaskSpec

#: Git run for the copies: no user or system config, no hooks, a fixed author.
_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG")
_GIT_OPTIONS = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "user.name=codingcode fleet",
    "-c",
    "user.email=fleet@codingcode.invalid",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "core.autocrlf=false",
)


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def git(args: list[str], *, cwd: Path | None = None, timeout: float = 600) -> bytes:
    """Run git; its failure is a :class:`FleetError` with git's last line of stderr."""
    try:
        proc = subprocess.run(
            ["git", *_GIT_OPTIONS, *args],
            cwd=cwd,
            capture_output=True,
            env=_git_env(),
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise FleetError("git is not installed on this machine.") from None
    except subprocess.TimeoutExpired:
        raise FleetError(f"git {args[0]} took longer than {timeout:.0f} s.") from None
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        raise FleetError(f"git {args[0]} failed: {lines[-1] if lines else 'no message'}")
    return proc.stdout


def make_copy(task: TaskSpec, dest: Path) -> None:
    """Make ``dest`` (which must not exist) the task's fresh working copy."""
    if task.repo is not None:
        if task.repo.startswith("/") and not Path(task.repo).exists():
            raise FleetError(f"repository {task.repo} does not exist")
        # --no-hardlinks: a local repository's objects are copied, never shared, so
        # nothing done in the copy can reach the original.
        git(["clone", "--quiet", "--no-checkout", "--no-hardlinks", "--", task.repo, str(dest)])
        ref = task.ref or "HEAD"
        try:
            git(["checkout", "--quiet", "--detach", ref, "--"], cwd=dest)
        except FleetError:
            raise FleetError(f"ref {ref!r} not found in {task.repo}") from None
        return
    assert task.project is not None
    source = Path(task.project)
    if not source.is_dir():
        what = "is not a directory" if source.exists() else "does not exist"
        raise FleetError(f"project {source} {what}")
    try:
        shutil.copytree(source, dest, symlinks=True)
    except (OSError, shutil.Error) as exc:
        raise FleetError(f"cannot copy project {source}: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list):
        first = exc.args[0][0]
        return f"{first[0]}: {first[2]}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


class Baseline:
    """The starting state of a working copy, in a git directory outside it."""

    def __init__(self, copy: Path, git_dir: Path) -> None:
        self.copy = copy
        self.git_dir = git_dir

    def _git(self, *args: str) -> bytes:
        return git([f"--git-dir={self.git_dir}", f"--work-tree={self.copy}", *args])

    def record(self) -> None:
        git(["init", "--quiet", "--bare", str(self.git_dir)])
        self._git("add", "--all", "--", ".")
        self._git("commit", "--quiet", "--allow-empty", "--no-verify", "-m", "start")

    def changes(self) -> bytes:
        """Every change since :meth:`record`, as a binary-safe patch (empty: none)."""
        self._git("add", "--all", "--", ".")
        return self._git("diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "HEAD")
