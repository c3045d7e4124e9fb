"""The shadow git: a bare repository outside the user's project, driven by plumbing commands.

Every git process here runs with ``GIT_DIR`` pointing at *our* store and ``GIT_WORK_TREE``
at the project, with the user's and the system's git configuration switched off (no hooks,
no filters, no signing, no autocrlf from anywhere), so nothing of the user's repository is
read as configuration and nothing is ever written into it. Git itself never descends into a
directory named ``.git``; the user's ``.gitignore`` files are honoured, and so is their
``.git/info/exclude`` (read, never written).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from codingcode.checkpoints.trees import Objects
from codingcode.errors import ToolFailureError

#: A git command that has not answered in this time is killed (a hung NFS, a huge tree).
GIT_TIMEOUT_S = 300.0


class CheckpointError(ToolFailureError):
    """The checkpoint store cannot be used (corrupt, unwritable, full disk, no git)."""


def _config_args(work_tree: Path) -> list[str]:
    args = [
        "-c", "core.autocrlf=false",
        "-c", "core.safecrlf=false",
        "-c", "core.symlinks=true",
        "-c", "core.filemode=true",
        "-c", "core.hooksPath=/dev/null",
        "-c", "core.fsmonitor=false",
        "-c", "core.untrackedCache=true",
        # Our index holds every project file: a split index rewrites only what changed and
        # version 4 compresses the paths, so each snapshot reads and writes far less.
        "-c", "core.splitIndex=true",
        "-c", "index.version=4",
        "-c", "core.quotePath=false",
        "-c", "gc.auto=0",
        "-c", "commit.gpgSign=false",
        "-c", "diff.external=",
        "-c", "color.ui=false",
        "-c", "advice.addEmbeddedRepo=false",
    ]  # fmt: skip
    exclude = work_tree / ".git" / "info" / "exclude"
    if exclude.is_file():
        args += ["-c", f"core.excludesFile={exclude}"]
    return args


@contextmanager
def _git_errors(command: str) -> Iterator[None]:
    """Git that cannot run, or ``git COMMAND`` that takes too long, as a CheckpointError."""
    try:
        yield
    except FileNotFoundError:
        raise CheckpointError("git is not installed; checkpoints need it.") from None
    except subprocess.TimeoutExpired:
        raise CheckpointError(
            f"git {command} took longer than {GIT_TIMEOUT_S:.0f} s in the checkpoint store."
        ) from None
    except OSError as exc:
        raise CheckpointError(f"cannot run git for checkpoints: {exc.strerror}.") from None


def _failed(command: str, returncode: int, stderr: bytes) -> CheckpointError:
    """``git COMMAND`` exited with ``returncode``: its last line of stderr says why."""
    lines = stderr.decode(errors="replace").strip().splitlines()
    detail = lines[-1] if lines else f"exit code {returncode}"
    return CheckpointError(f"git {command} failed in the checkpoint store: {detail}")


@dataclass(frozen=True)
class ShadowGit:
    """Runs git against the store ``git_dir`` with ``work_tree`` as the files."""

    git_dir: Path
    work_tree: Path
    index: Path

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("GIT_") and k not in ("HOME", "XDG_CONFIG_HOME")
        }
        env.update(
            GIT_DIR=str(self.git_dir),
            GIT_WORK_TREE=str(self.work_tree),
            GIT_INDEX_FILE=str(self.index),
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_TERMINAL_PROMPT="0",
            GIT_AUTHOR_NAME="codingcode",
            GIT_AUTHOR_EMAIL="checkpoints@codingcode.invalid",
            GIT_COMMITTER_NAME="codingcode",
            GIT_COMMITTER_EMAIL="checkpoints@codingcode.invalid",
            HOME=str(self.git_dir),  # no ~/.gitconfig of the user's is read
            LC_ALL="C",
        )
        return env

    def run(
        self, *args: str, input: bytes | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        argv = ["git", *_config_args(self.work_tree), *args]
        with _git_errors(args[0]):
            done = subprocess.run(
                argv,
                input=input,
                capture_output=True,
                cwd=self.work_tree,
                env=self.env(),
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        if check and done.returncode != 0:
            raise _failed(args[0], done.returncode, done.stderr)
        return done

    def listings(self, *commands: tuple[str, ...]) -> list[bytes]:
        """Run read-only git commands side by side (each walks the tree) and return their
        outputs, in order. A failure of any is a `CheckpointError`."""
        argv0 = ["git", *_config_args(self.work_tree)]
        procs: list[subprocess.Popen[bytes]] = []
        try:
            with _git_errors("ls-files"):
                for args in commands:
                    procs.append(
                        subprocess.Popen(
                            [*argv0, *args],
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            cwd=self.work_tree,
                            env=self.env(),
                        )
                    )
                outputs: list[bytes] = []
                for args, proc in zip(commands, procs, strict=True):
                    out, err = proc.communicate(timeout=GIT_TIMEOUT_S)
                    if proc.returncode != 0:
                        raise _failed(args[0], proc.returncode, err)
                    outputs.append(out)
                return outputs
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()

    def out(self, *args: str, input: bytes | None = None) -> str:
        return self.run(*args, input=input).stdout.decode(errors="surrogateescape").strip()

    def commit_tree(self, tree: str, message: str) -> str:
        """A commit of ``tree`` (no parent), as ``git commit-tree -m`` makes it.

        Written here as a loose object, as git writes one (no git process: this is on the
        path of every checkpoint); a store in another object format than SHA-1 is left to git.
        """
        if not self.sha1():
            return self.out("commit-tree", tree, "-m", message)
        who = f"codingcode <checkpoints@codingcode.invalid> {int(time.time())} +0000"
        body = f"tree {tree}\nauthor {who}\ncommitter {who}\n\n{message}\n".encode(
            errors="surrogateescape"
        )
        try:
            return Objects(self.git_dir).write(b"commit", body).hex()
        except OSError as exc:
            raise CheckpointError(
                f"cannot write a commit into {self.git_dir}: {exc.strerror}."
            ) from None

    def sha1(self) -> bool:
        """Whether the store uses SHA-1 object names (git's default; set at init)."""
        try:
            config = (self.git_dir / "config").read_text(errors="replace").lower()
        except OSError:
            return False
        return "objectformat" not in config or "objectformat = sha1" in config

    def init(self) -> None:
        if (self.git_dir / "HEAD").is_file():
            return
        self.git_dir.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["git", "init", "--bare", "--quiet", str(self.git_dir)],
            capture_output=True,
            env={
                k: v
                for k, v in self.env().items()
                if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")
            },
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            detail = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
            raise CheckpointError(f"cannot create the checkpoint store: {detail}")
