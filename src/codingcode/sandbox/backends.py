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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from codingcode.capabilities import CapabilitySet
from codingcode.errors import DeniedError
from codingcode.process import LaunchPlan
from codingcode.sandbox import seccomp
from codingcode.sandbox.git_dirs import nested_git as _nested_git
from codingcode.sandbox.masks import MaskResolver, MaskSpec, home_dirs
from codingcode.sandbox.policy import Network, SandboxMode, SandboxPolicy

if TYPE_CHECKING:
    from codingcode.sandbox.credentials.broker import CallCredentials, CredentialBroker
    from codingcode.sandbox.network.runtime import OpenCall, ProxyRuntime

#: Inside the sandbox this variable names the backend (tools and tests can tell).
MARKER_ENV = "CODINGCODE_SANDBOX"


class SandboxError(DeniedError):
    """The sandbox cannot run this command as the policy demands (so it is not run)."""


def mask_specs(policy: SandboxPolicy) -> list[MaskSpec]:
    """Every pattern masked under ``policy``: the secret classes (codingcode's own state
    directory among them), ``masked_paths``, ``denyRead``, the deny rules the front end
    passed in, and the credentials' files."""
    from codingcode.sandbox.secrets import default_masks

    specs = [
        *default_masks(),
        *(MaskSpec(str(p), "sandbox.masked_paths") for p in policy.masked_paths),
        *policy.deny_read,
    ]
    if policy.credentials:  # (the credentials' modules load only where some are set)
        from codingcode.sandbox.credentials.mounts import credential_masks

        specs += credential_masks(policy.credentials)
    return specs


def mask_resolver(policy: SandboxPolicy) -> MaskResolver:
    keep = list(policy.writable_roots)
    return MaskResolver(mask_specs(policy), policy.project, keep_visible=keep)


@dataclass
class CallView:
    """One call's masks: what stays hidden, and what its capability set exposes."""

    #: Hidden entirely (an empty read-only directory or an empty file in its place).
    masked: dict[Path, MaskSpec] = field(default_factory=dict)
    #: Masked directories that show only the named paths inside them: dir -> [(path, writable)].
    hollow: dict[Path, list[tuple[Path, bool]]] = field(default_factory=dict)
    #: Masked paths the call named, shown as they are: (path, writable).
    exposed: list[tuple[Path, bool]] = field(default_factory=list)
    #: What could not be masked or exposed, and why.
    notes: list[str] = field(default_factory=list)

    def all_masks(self) -> dict[Path, MaskSpec]:
        return dict(self.masked)


def call_view(
    resolver: MaskResolver, env: Mapping[str, str], capabilities: CapabilitySet | None
) -> CallView:
    """The masks for one call: every mask, less exactly the paths its approval named.

    A named path equal to a mask shows that path (read-only unless the call writes it);
    a named path inside a masked directory shows that one path in an otherwise empty
    directory. A named *parent* of a mask exposes nothing. Only symlink-free named paths
    are exposed, so a link cannot smuggle another masked file in under an approved name.
    """
    resolved = resolver.resolve(home_dirs(env), env)
    view = CallView(notes=list(resolved.notes))
    named = _named_paths(capabilities)
    never = [p for p, s in resolved.paths.items() if not s.exposable]

    def unexposable(p: Path) -> bool:  # a deny rule's path, or one inside it
        return any(n == p or n in p.parents for n in never)

    for path, spec in resolved.paths.items():
        if not spec.exposable:
            view.masked[path] = spec
            continue
        if path in named:
            view.exposed.append((path, named[path]))
            continue
        inner = [
            (p, w)
            for p, w in named.items()
            if path in p.parents
            and not unexposable(p)
            and os.path.realpath(p) == str(p)
            and os.path.lexists(p)
        ]
        if inner and path.is_dir():
            view.hollow[path] = inner
        view.masked[path] = spec
    for path in view.hollow:
        del view.masked[path]
    # A mask inside a masked (or hollow) directory is hidden by it already, and a mount
    # there would fail (the empty directory over it is read-only): one mount, the outer.
    outer = set(view.masked) | set(view.hollow)
    for path in list(view.masked):
        if any(parent in outer for parent in path.parents):
            del view.masked[path]
    return view


def outermost(paths: Iterable[Path]) -> list[Path]:
    """The masked paths not inside another masked directory (that one already hides them,
    and a mount inside its empty read-only stand-in could not be made)."""
    paths = list(paths)
    dirs = {p for p in paths if p.is_dir()}
    return [p for p in paths if not any(parent in dirs for parent in p.parents)]


def _masked_notes(view: CallView) -> tuple[tuple[str, str], ...]:
    """(path, what masked it and how to allow it), for the tool's hint on a failure."""
    notes = [(str(p), s.how_to_allow(str(p))) for p, s in view.masked.items()]
    for path in view.hollow:
        notes.append(
            (
                str(path),
                f"{path} is masked by the sandbox; this call sees only the paths inside it "
                "that it named.",
            )
        )
    return tuple(notes)


def _named_paths(capabilities: CapabilitySet | None) -> dict[Path, bool]:
    if capabilities is None:
        return {}
    named = {Path(os.path.normpath(p)): False for p in capabilities.read_paths}
    for p in capabilities.write_paths:
        named[Path(os.path.normpath(p))] = True
    return {p: w for p, w in named.items() if p.is_absolute()}


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

    ``.codingcode/`` (settings, hooks, agent profiles), Claude Code's ``.claude/``,
    ``.mcp.json``, and of git the hooks
    and the config (a hook, ``core.fsmonitor`` or ``core.hooksPath`` would run code
    outside the sandbox later) — of the project's repository, of a worktree's or
    submodule's gitdir, and of repositories nested up to two levels down. A missing ``.codingcode``, ``.claude`` (or ``.git/hooks``) directory
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
    # Claude Code's directory, read beside ours (settings, hooks, agents, commands, skills):
    # kept exactly as ``.codingcode/`` (created empty when missing, so a command cannot
    # create it either).
    claude_dir = project / ".claude"
    _refuse_symlink(claude_dir, project)
    if not claude_dir.exists() and create_missing:
        with contextlib.suppress(OSError):
            claude_dir.mkdir()
    if claude_dir.exists():  # a plain file too: else a command could swap in a directory
        found.append(claude_dir)
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


def call_network(policy: SandboxPolicy, capabilities: CapabilitySet | None) -> Network:
    """The network of one call: the settings' mode, unless its approval said no network."""
    if capabilities is not None and capabilities.network is False:
        return Network.OFF
    return policy.network


def _network_call_label() -> str:
    from codingcode.sandbox.network.calls import current_call

    return current_call.get()


@dataclass
class BubblewrapBackend:
    policy: SandboxPolicy
    bwrap: str
    masks: MaskFiles
    name: str = "bubblewrap"
    #: The session's proxy (started on first use), for ``sandbox.network.mode = limited``.
    proxy: Callable[[], ProxyRuntime] | None = None
    #: The session's masked credentials (``sandbox.credentials``).
    credentials: CredentialBroker | None = None
    _filters: dict[bool, bytes] = field(init=False, repr=False, default_factory=dict)
    resolver: MaskResolver = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.resolver = mask_resolver(self.policy)

    def _filter(self, network: bool) -> bytes:
        if network not in self._filters:
            self._filters[network] = seccomp.build_filter(
                seccomp.socket_families(network=network, private_netns=not network)
            )
        return self._filters[network]

    def _open_proxy(
        self,
        argv: Sequence[str],
        capabilities: CapabilitySet | None,
        creds: CallCredentials | None = None,
    ) -> tuple[OpenCall, list[str], list[str]] | None:
        """For a limited-network call: its place in the proxy, the argv through the relay,
        and the bwrap arguments that set the proxy variables."""
        from codingcode.sandbox.network.runtime import proxy_env, relay_argv

        if self.proxy is None:
            return None
        domains = self.policy.domains
        if capabilities is not None and capabilities.domains:
            domains = domains.with_grants(sorted(capabilities.domains))
        label = _network_call_label() or " ".join(argv)[:200]
        call = self.proxy().open_call(domains, label, credentials=creds)
        env = proxy_env(localhost_through_proxy="localhost" in domains.allowed + domains.granted)
        setenv = [a for name, value in env.items() for a in ("--setenv", name, value)]
        return call, relay_argv(call.child_fd, argv), setenv

    def plan(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        capabilities: CapabilitySet | None = None,
    ) -> LaunchPlan:
        policy = self.policy
        mode = call_network(policy, capabilities)
        network = mode is Network.ON
        view = call_view(self.resolver, env, capabilities)
        creds = self.credentials.for_call(env) if self.credentials else None
        proxied = self._open_proxy(argv, capabilities, creds) if mode is Network.LIMITED else None
        notice = ""
        if mode is Network.LIMITED and proxied is None:
            notice = "[sandbox: no network proxy is running here; this command has no network]"
        if creds is not None and creds.notes:
            notice = "\n".join(filter(None, [notice, *(f"[sandbox: {n}]" for n in creds.notes)]))
        if proxied is not None:
            argv = proxied[1]
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
        args += self._mask_args(view)
        args += ["--ro-bind", str(self.masks.passwd), "/etc/passwd"]
        if proxied is not None:
            args += proxied[2]
        cred_fds: list[int] = []
        if creds is not None:
            from codingcode.sandbox.credentials.mounts import bwrap_args

            bundle, targets = None, []
            if proxied is not None and creds.tls_terminate and creds.inject_patterns:
                from codingcode.sandbox.network.tls import bundle_paths

                bundle, targets = proxied[0].runtime.proxy.ca().bundle(), bundle_paths()
            masked_dirs = [p for p in view.masked if p.is_dir()]
            extra, cred_fds, trust_env = bwrap_args(
                creds, masked_dirs, bundle=bundle, bundle_paths=targets
            )
            args += extra
            for name, value in trust_env.items():
                args += ["--setenv", name, value]
        fd = _write_memfd("codingcode-seccomp", self._filter(network))
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
        finish = self._finish()
        fds: tuple[int, ...] = (fd, *cred_fds)
        if proxied is not None:
            fds += (proxied[0].child_fd,)
            finish = _and_then(finish, proxied[0].finish)
        from codingcode.sandbox.credentials.mounts import apply_env

        return LaunchPlan(
            args,
            apply_env(scrub_env(env, policy.keep_env), creds),
            notice=notice,
            pass_fds=fds,
            finish=finish,
            masked=_masked_notes(view),
        )

    def _mask_args(self, view: CallView) -> list[str]:
        args: list[str] = []
        for path in outermost(view.masked):
            if path.is_dir():
                args += ["--ro-bind", str(self.masks.empty_dir), str(path)]
            elif path.exists():
                args += ["--ro-bind", str(self.masks.unreadable), str(path)]
        for path, inner in view.hollow.items():
            args += ["--tmpfs", str(path)]
            for child, writable in inner:
                args += ["--bind" if writable else "--ro-bind", str(child), str(child)]
            args += ["--remount-ro", str(path)]
        for path, writable in view.exposed:
            args += ["--bind" if writable else "--ro-bind", str(path), str(path)]
        return args

    def _finish(self) -> Callable[[], str] | None:
        if self.policy.mode is not SandboxMode.WORKSPACE_WRITE:
            return None
        from codingcode.sandbox.new_repos import watcher

        return watcher(self.policy.project)


def _and_then(first: Callable[[], str] | None, second: Callable[[], str]) -> Callable[[], str]:
    def both() -> str:
        notes = [first() if first is not None else "", second()]
        return "\n".join(n for n in notes if n)

    return both


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
    #: The session's masked credentials: variables get placeholders; files stay hidden
    #: (Landlock cannot mount a sentinel copy), and nothing is injected (no proxy).
    credentials: CredentialBroker | None = None
    resolver: MaskResolver = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.resolver = mask_resolver(self.policy)

    def plan(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        capabilities: CapabilitySet | None = None,
    ) -> LaunchPlan:
        policy = self.policy
        view = call_view(self.resolver, env, capabilities)
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
        mode = call_network(policy, capabilities)
        notice = ""
        if mode is Network.LIMITED:
            notice = (
                "[sandbox: sandbox.network.mode 'limited' needs the bubblewrap backend; under "
                "Landlock this command has no network]"
            )
        from codingcode.sandbox.landlock_exec import Spec

        spec = Spec(
            network=mode is Network.ON,
            masked=[str(p) for p in outermost(view.masked)],
            writable=writable,
            protect=protect,
            files=files,
        )
        spec.hollow = [str(p) for p in view.hollow]
        for path, writable_path in [*view.exposed, *(x for v in view.hollow.values() for x in v)]:
            (spec.expose_write if writable_path else spec.expose).append(str(path))
        spec.namespaces = self.namespaces
        package_parent = str(Path(__file__).resolve().parents[2])
        # -I -S: no environment variables, user site or .pth files steer the helper; it
        # needs only the standard library and this package, whose parent is passed in.
        helper = [sys.executable, "-I", "-S", "-c", _HELPER_BOOTSTRAP, package_parent]
        from codingcode.sandbox.credentials.mounts import apply_env

        creds = self.credentials.for_call(env) if self.credentials else None
        env = {
            **apply_env(scrub_env(env, policy.keep_env), creds),
            "TMPDIR": str(self.masks.tmp),
            MARKER_ENV: self.name,
        }
        finish = None
        if policy.mode is SandboxMode.WORKSPACE_WRITE:
            from codingcode.sandbox.new_repos import watcher

            finish = watcher(policy.project)
        return LaunchPlan(
            [*helper, *spec.to_args(), "--", *argv],
            env,
            notice=notice,
            finish=finish,
            masked=_masked_notes(view),
        )


@dataclass
class NoneBackend:
    """No containment; ``reason`` names the settings entry that asked for it."""

    reason: str
    name: str = "none"

    def plan(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        capabilities: CapabilitySet | None = None,
    ) -> LaunchPlan:
        notice = f"[sandbox: NONE — this command ran without any containment ({self.reason})]"
        return LaunchPlan(list(argv), dict(env), notice=notice)
