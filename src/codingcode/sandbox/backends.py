"""The three backends: each turns a command into a :class:`LaunchPlan` that runs it contained.

- :class:`BubblewrapBackend`: ``bwrap`` builds a private view of the machine — user, PID,
  IPC, UTS, cgroup and (without network) network namespaces; the root file system
  read-only; the project and writable roots bound writable; the files that steer the
  agent bound read-only again on top; secrets masked; a private ``/tmp`` and ``/run``;
  ``--die-with-parent`` and ``--new-session``; all capabilities dropped, nested user
  namespaces disabled, and the seccomp filter passed as a file descriptor.
- :class:`LandlockBackend`: no extra binary — a re-exec'd Python helper
  (:mod:`codingcode.sandbox.landlock_exec`) makes what namespaces the kernel allows
  (mounts included: the same view as bubblewrap) and applies Landlock and seccomp itself.
- :class:`NoneBackend`: runs the command as it is and says so in its output.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import sys
import tempfile
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codingcode.errors import DeniedError
from codingcode.process import LaunchPlan
from codingcode.sandbox import seccomp
from codingcode.sandbox.landlock_exec import Spec
from codingcode.sandbox.policy import Network, SandboxMode, SandboxPolicy

#: Inside the sandbox this variable names the backend (tools and tests can tell).
MARKER_ENV = "CODINGCODE_SANDBOX"

#: Files every backend hides, besides ``~/.ssh`` and the settings' ``masked_paths``.
SYSTEM_SECRETS = (Path("/etc/shadow"), Path("/etc/gshadow"))


class SandboxError(DeniedError):
    """The sandbox cannot run this command as the policy demands (so it is not run)."""


def home_dirs(env: Mapping[str, str]) -> list[Path]:
    """The command's ``$HOME`` and the account's home (they differ in tests and sudo)."""
    homes = []
    if env.get("HOME"):
        homes.append(Path(env["HOME"]))
    with contextlib.suppress(KeyError):
        homes.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    return list(dict.fromkeys(Path(os.path.realpath(h)) for h in homes))


def secret_paths(policy: SandboxPolicy, env: Mapping[str, str]) -> list[Path]:
    paths = [*SYSTEM_SECRETS, *(h / ".ssh" for h in home_dirs(env)), *policy.masked_paths]
    return list(dict.fromkeys(Path(os.path.realpath(p)) for p in paths))


#: Variable names that usually hold credentials (the agent's own model keys among them):
#: dropped from a command's environment unless ``sandbox.keep_env`` names them.
SECRET_ENV = re.compile(
    r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE_?KEY|ACCESS_?KEY)",
    re.IGNORECASE,
)


def runtime_paths() -> list[Path]:
    """codingcode's own interpreter, environment and package, where they live under /tmp
    or /run — which the sandbox replaces with private, empty ones. They are bound back
    read-only, so a command can still run the project's tools (and our own helper) from
    there; a checkout under /tmp, as on a CI machine, is the common case."""
    package_parent = Path(__file__).resolve().parents[2]
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(package_parent)}
    found = sorted({os.path.realpath(p) for p in candidates})
    under = [p for p in found if p.startswith(("/tmp/", "/run/"))]
    # Drop paths inside another kept one: one bind covers them.
    return [Path(p) for p in under if not any(p != q and p.startswith(q + "/") for q in under)]


def scrub_env(env: Mapping[str, str], keep: Sequence[str]) -> dict[str, str]:
    kept = set(keep)
    return {k: v for k, v in env.items() if k in kept or not SECRET_ENV.search(k)}


def protected_paths(project: Path, *, create_missing: bool = True) -> list[Path]:
    """What commands may read but never change inside the project.

    ``.codingcode/`` (settings, hooks, agent profiles), ``.mcp.json``, and of git the hooks
    and the config (a hook, ``core.fsmonitor`` or ``core.hooksPath`` would run code
    outside the sandbox later) — of the project's repository, of a worktree's or
    submodule's gitdir, and of repositories nested up to two levels down. A missing ``.codingcode`` (or ``.git/hooks``) directory
    is created empty first, so a command cannot create it either. A symlink in one of
    these places could be swapped by the command, so it is refused rather than followed.
    """
    found: list[Path] = []
    agent_dir = project / ".codingcode"
    _refuse_symlink(agent_dir, project)
    if not agent_dir.exists() and create_missing:
        # Not writable for us either? Then not for the command.
        with contextlib.suppress(OSError):
            agent_dir.mkdir()
    if agent_dir.exists():
        found.append(agent_dir)
    mcp = project / ".mcp.json"
    _refuse_symlink(mcp, project)
    if mcp.exists():
        found.append(mcp)
    git = project / ".git"
    _refuse_symlink(git, project)
    if git.is_dir():
        found += _git_metadata(git, create_missing=create_missing)
    elif git.is_file():
        found.append(git)
        for gitdir in _pointed_gitdirs(git):
            found += _git_metadata(gitdir, create_missing=False)
    for nested in _nested_git(project):
        if nested.is_dir():
            found += _git_metadata(nested, create_missing=False)
        else:
            found.append(nested)
            for gitdir in _pointed_gitdirs(nested):
                found += _git_metadata(gitdir, create_missing=False)
    return list(dict.fromkeys(found))


#: How deep below the project nested repositories (submodules, vendored checkouts) are
#: looked for: their hooks run as soon as the user works in them.
NESTED_GIT_DEPTH = 2
_SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages"})


def _nested_git(project: Path) -> list[Path]:
    """``.git`` entries (directories or pointer files, not symlinks) of nested repositories."""
    found: list[Path] = []
    level = [project]
    for _ in range(NESTED_GIT_DEPTH):
        next_level = []
        for directory in level:
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") or entry.name in _SKIP_DIRS:
                    continue
                if not entry.is_dir(follow_symlinks=False):
                    continue
                git = Path(entry.path, ".git")
                if git.exists() and not git.is_symlink():
                    found.append(git)
                next_level.append(Path(entry.path))
        level = next_level
    return found


def _refuse_symlink(path: Path, project: Path) -> None:
    if path.is_symlink():
        raise SandboxError(
            f"{path.relative_to(project)} in the project is a symlink; the sandbox keeps this "
            "path read-only and cannot do that through a link a command could replace. "
            "Replace the link with the real directory or file."
        )


def _git_metadata(gitdir: Path, *, create_missing: bool) -> list[Path]:
    found = []
    hooks = gitdir / "hooks"
    if not hooks.exists() and create_missing:
        with contextlib.suppress(OSError):
            hooks.mkdir()
    for path in (hooks, gitdir / "config"):
        if path.exists():
            found.append(Path(os.path.realpath(path)))
    return found


def _pointed_gitdirs(pointer: Path) -> list[Path]:
    """A ``.git`` file (worktree, submodule) names its gitdir; that one may name a commondir."""
    try:
        text = pointer.read_text(errors="replace").strip()
    except OSError:
        return []
    if not text.startswith("gitdir:"):
        return []
    gitdir = Path(os.path.realpath(pointer.parent / text.removeprefix("gitdir:").strip()))
    dirs = [gitdir]
    try:
        common = (gitdir / "commondir").read_text().strip()
        dirs.append(Path(os.path.realpath(gitdir / common)))
    except OSError:
        pass
    return dirs


class MaskFiles:
    """The host-side files masks are made of, in a private directory removed at exit."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="codingcode-sandbox-"))
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.root, True)
        self.empty_dir = self.root / "empty"
        self.empty_dir.mkdir(mode=0o555)
        self.unreadable = self.root / "unreadable"
        self.unreadable.touch(mode=0o000)
        self.unreadable.chmod(0o000)
        self.passwd = self.root / "passwd"
        self.passwd.write_text(minimal_passwd())
        self.passwd.chmod(0o444)
        self.tmp = self.root / "tmp"  # the Landlock backend's private TMPDIR
        self.tmp.mkdir(mode=0o700)

    def cleanup(self) -> None:
        self._finalizer()


def minimal_passwd() -> str:
    """root and the current user, nobody else (names and homes of other accounts leak)."""
    lines = []
    for uid in dict.fromkeys((0, os.getuid())):
        try:
            e = pwd.getpwuid(uid)
        except KeyError:
            continue
        lines.append(f"{e.pw_name}:x:{e.pw_uid}:{e.pw_gid}:{e.pw_gecos}:{e.pw_dir}:{e.pw_shell}")
    return "\n".join(lines) + "\n"


def _write_memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


@dataclass
class BubblewrapBackend:
    policy: SandboxPolicy
    bwrap: str
    masks: MaskFiles
    name: str = "bubblewrap"
    _filter: bytes = field(init=False, repr=False)

    def __post_init__(self) -> None:
        network = self.policy.network is Network.ALLOW
        self._filter = seccomp.build_filter(
            seccomp.socket_families(network=network, private_netns=not network)
        )

    def plan(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> LaunchPlan:
        policy = self.policy
        network = policy.network is Network.ALLOW
        args = [
            self.bwrap,
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            *([] if network else ["--unshare-net"]),
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            # Host services listen under /run (D-Bus, docker, systemd, databases).
            "--tmpfs",
            "/run",
        ]
        if network:
            args += ["--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve"]
        for path in runtime_paths():
            args += ["--ro-bind", str(path), str(path)]
        # Bound even when read-only: a project under /tmp would vanish under the private /tmp.
        bind = "--bind" if policy.mode is SandboxMode.WORKSPACE_WRITE else "--ro-bind"
        args += [bind, str(policy.project), str(policy.project)]
        for root in policy.writable_roots:
            args += ["--bind-try", str(root), str(root)]
        if policy.mode is SandboxMode.WORKSPACE_WRITE:
            for path in protected_paths(policy.project):
                args += ["--ro-bind", str(path), str(path)]
        for path in secret_paths(policy, env):
            if path.is_dir():
                args += ["--ro-bind", str(self.masks.empty_dir), str(path)]
            elif path.exists():
                args += ["--ro-bind", str(self.masks.unreadable), str(path)]
        args += ["--ro-bind", str(self.masks.passwd), "/etc/passwd"]
        fd = _write_memfd("codingcode-seccomp", self._filter)
        args += [
            "--chdir",
            str(cwd),
            "--setenv",
            "TMPDIR",
            "/tmp",
            "--setenv",
            MARKER_ENV,
            self.name,
            "--seccomp",
            str(fd),
            "--",
            *argv,
        ]
        return LaunchPlan(
            args, scrub_env(env, policy.keep_env), pass_fds=(fd,), finish=self._finish()
        )

    def _finish(self) -> Callable[[], str] | None:
        if self.policy.mode is not SandboxMode.WORKSPACE_WRITE:
            return None
        from codingcode.sandbox.new_repos import watcher

        return watcher(self.policy.project)


_HELPER_BOOTSTRAP = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from codingcode.sandbox.landlock_exec import main; main(sys.argv)"
)


@dataclass
class LandlockBackend:
    policy: SandboxPolicy
    masks: MaskFiles
    name: str = "landlock"
    #: Try namespaces (the default); False checks the Landlock + seccomp layers alone.
    namespaces: bool = True

    def plan(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> LaunchPlan:
        policy = self.policy
        writable = [str(self.masks.tmp), *map(str, policy.writable_roots)]
        if policy.mode is SandboxMode.WORKSPACE_WRITE:
            writable.insert(0, str(policy.project))
        # Read-only mode protects the whole project (which also keeps it visible when it
        # lives under the private /tmp).
        protect = [str(p) for p in runtime_paths()] + (
            [str(p) for p in protected_paths(policy.project)]
            if policy.mode is SandboxMode.WORKSPACE_WRITE
            else [str(policy.project)]
        )
        files = {
            "empty": str(self.masks.empty_dir),
            "unreadable": str(self.masks.unreadable),
            "passwd": str(self.masks.passwd),
        }
        spec = Spec(
            network=policy.network is Network.ALLOW,
            masked=[str(p) for p in secret_paths(policy, env)],
            writable=writable,
            protect=protect,
            files=files,
        )
        spec.namespaces = self.namespaces
        package_parent = str(Path(__file__).resolve().parents[2])
        # -I -S: no environment variables, user site or .pth files steer the helper; it
        # needs only the standard library and this package, whose parent is passed in.
        helper = [sys.executable, "-I", "-S", "-c", _HELPER_BOOTSTRAP, package_parent]
        env = {
            **scrub_env(env, policy.keep_env),
            "TMPDIR": str(self.masks.tmp),
            MARKER_ENV: self.name,
        }
        finish = None
        if policy.mode is SandboxMode.WORKSPACE_WRITE:
            from codingcode.sandbox.new_repos import watcher

            finish = watcher(policy.project)
        return LaunchPlan([*helper, *spec.to_args(), "--", *argv], env, finish=finish)


@dataclass
class NoneBackend:
    """No containment; ``reason`` names the settings entry that asked for it."""

    reason: str
    name: str = "none"

    def plan(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> LaunchPlan:
        notice = f"[sandbox: NONE — this command ran without any containment ({self.reason})]"
        return LaunchPlan(list(argv), dict(env), notice=notice)
