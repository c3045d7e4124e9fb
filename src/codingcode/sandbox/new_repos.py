"""Git repositories a command *creates* (``git init``, ``git clone``) during a call.

The sandbox makes an existing repository's hooks and config read-only, but a ``.git``
that does not exist yet cannot be mounted over: within the call that creates it, its hooks
and config are writable, and the next unsandboxed ``git commit`` of the user would run what
the command planted there. So after each call the sandbox looks at the repositories that
appeared during it and removes what would run code on the host: hooks other than git's own
``*.sample`` files, and config keys that name a program (``core.fsmonitor``,
``core.hooksPath``, ``core.sshCommand``, filters, ``!`` aliases, ``include.path``, ...).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from codingcode.sandbox.git_dirs import nested_git

#: Config names (lower-case, as `git config --list` prints them) whose value git runs.
_EXECUTING_KEYS = re.compile(
    r"^(core\.(fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy|alternaterefscommand)"
    r"|sequence\.editor|diff\.external|diff\..*\.(textconv|command)|merge\..*\.driver"
    r"|filter\..*\.(clean|smudge|process)|credential(\..*)?\.helper|gpg(\..*)?\.program"
    r"|pager\..*|alias\..*|include\.path|includeif\..*\.path|uploadpack\.packobjectshook"
    r"|remote\..*\.(uploadpack|receivepack|vcs)|protocol\..*\.allow|ssh\.variant)$"
)
#: The configuration keys that make git run a program (shared with the agent's git facts).
EXECUTING_KEYS = _EXECUTING_KEYS


def repositories(project: Path) -> set[Path]:
    """The ``.git`` directories of the project and of repositories nested in it."""
    candidates = [project / ".git", *nested_git(project)]
    return {g for g in candidates if g.is_dir() and not g.is_symlink()}


def disarm(gitdir: Path) -> list[str]:
    """Remove what in a newly created repository would run code; say what was removed."""
    removed: list[str] = []
    hooks = gitdir / "hooks"
    if hooks.is_dir() and not hooks.is_symlink():
        for hook in sorted(hooks.iterdir()):
            if hook.name.endswith(".sample") and hook.is_file() and not hook.is_symlink():
                continue
            with contextlib.suppress(OSError):
                if hook.is_dir() and not hook.is_symlink():
                    shutil.rmtree(hook)
                else:
                    hook.unlink()
                removed.append(f"hook {hook.name}")
    elif hooks.is_symlink():
        hooks.unlink()
        removed.append("hooks symlink")
    config = gitdir / "config"
    git = shutil.which("git")
    if config.is_symlink():
        config.unlink()
        removed.append("config symlink")
    elif config.is_file() and git:
        names = _config_names(git, config)
        for name in sorted({n for n in names if _EXECUTING_KEYS.match(n)}):
            subprocess.run(
                [git, "config", "--file", str(config), "--unset-all", name],
                capture_output=True,
                check=False,
                stdin=subprocess.DEVNULL,
            )
            removed.append(f"config {name}")
    return removed


def _config_names(git: str, config: Path) -> list[str]:
    proc = subprocess.run(
        [git, "config", "--file", str(config), "--name-only", "--list"],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        env={"GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "PATH": "/usr/bin:/bin"},
    )
    return [line.strip().lower() for line in proc.stdout.splitlines() if line.strip()]


def watcher(project: Path) -> Callable[[], str]:
    """A ``LaunchPlan.finish`` for one call: disarm repositories that appeared meanwhile."""
    before = repositories(project)

    def finish() -> str:
        notes = []
        for gitdir in sorted(repositories(project) - before):
            removed = disarm(gitdir)
            if removed:
                where = gitdir.relative_to(project)
                notes.append(f"{where}: {', '.join(removed)}")
        if not notes:
            return ""
        return (
            "[sandbox: removed what would run code outside the sandbox from repositories "
            "this command created: " + "; ".join(notes) + "]"
        )

    return finish
