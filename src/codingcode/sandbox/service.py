"""SandboxService: the policy of a project, the backend that enforces it, and the launcher.

The service is a :class:`codingcode.process.Launcher`: ``plan()`` rewrites each command to
run under the chosen backend. Choosing never silently weakens the policy: ``auto`` takes
bubblewrap when it works here, otherwise Landlock; when neither is available the command
is refused (fail closed) with how to install bubblewrap or opt out. Only the user's own
``backend: none`` or ``mode: off`` runs commands uncontained, and then each says so.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from codingcode.capabilities import CapabilitySet
from codingcode.process import LaunchPlan
from codingcode.sandbox.backends import (
    BubblewrapBackend,
    LandlockBackend,
    MaskFiles,
    NoneBackend,
    SandboxError,
)
from codingcode.sandbox.masks import MaskSpec
from codingcode.sandbox.policy import (
    BackendChoice,
    SandboxMode,
    SandboxPolicy,
    Widening,
    load_policy_with_ignored,
    with_deny_read,
)

if TYPE_CHECKING:
    from codingcode.sandbox.credentials.broker import CredentialBroker
    from codingcode.sandbox.network.proxy import NetworkProxy
    from codingcode.sandbox.network.runtime import EventSink, ProxyRuntime
    from codingcode.workspace import Workspace

#: Path of the ``bwrap`` binary to use (default: found on PATH).
BWRAP_ENV = "CODINGCODE_BWRAP"

INSTALL_HINT = (
    "Install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, Fedora: `dnf install "
    'bubblewrap`), or, to run commands without containment, set `"sandbox": {"backend": '
    '"none"}` in your user settings.'
)


class Backend(Protocol):
    name: str

    def plan(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        capabilities: CapabilitySet | None = None,
    ) -> LaunchPlan: ...


def find_bwrap() -> str | None:
    override = os.environ.get(BWRAP_ENV)
    if override:
        return override if os.access(override, os.X_OK) else None
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=8)
def bubblewrap_problem(bwrap: str) -> str | None:
    """Why ``bwrap`` cannot build our sandbox here (``None``: it can). Tried once per process."""
    try:
        proc = subprocess.run(
            [
                bwrap,
                "--unshare-user",
                "--unshare-pid",
                "--unshare-net",
                "--disable-userns",
                "--die-with-parent",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--",
                "true",
            ],
            capture_output=True,
            text=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not run: {exc}"
    if proc.returncode != 0:
        return proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "bwrap failed"
    return None


def landlock_problem() -> str | None:
    from codingcode.sandbox import kernel, seccomp

    try:
        seccomp.native_arch()
    except seccomp.UnsupportedArchitecture as exc:
        return str(exc)
    if kernel.landlock_abi() < 1:
        return "Landlock is not available in this kernel (Linux 5.13+, enabled at boot)"
    return None


@dataclass
class SandboxService:
    """The sandbox of one project. Use :meth:`for_workspace` to build it from the session's settings."""

    policy: SandboxPolicy
    bwrap: str | None = None
    #: ``None`` asks the kernel; tests pass a value to pretend another machine.
    landlock_unavailable: str | None = None
    #: False: the Landlock backend skips namespaces (to check its weakest form).
    landlock_namespaces: bool = True
    #: Widening entries of untrusted project files that the policy left out.
    ignored: list[Widening] = field(default_factory=list)
    #: Where each call's proxy decisions go once it ends (the front end's audit log).
    network_sink: EventSink | None = None
    #: The proxy to run (tests pass one with their own resolver); default: the real one.
    network_proxy: NetworkProxy | None = None
    _backend: Backend | None = field(default=None, init=False, repr=False)
    _masks: MaskFiles | None = field(default=None, init=False, repr=False)
    _network: ProxyRuntime | None = field(default=None, init=False, repr=False)
    _credentials: CredentialBroker | None = field(default=None, init=False, repr=False)

    @classmethod
    def for_workspace(
        cls, workspace: Workspace, *, deny_read: Sequence[MaskSpec] = ()
    ) -> SandboxService:
        """From the session's settings files: an untrusted project file's widening entries
        are ignored, its restrictions still apply. ``deny_read``: more masks from the front
        end (the user's deny rules on paths)."""
        policy, ignored = load_policy_with_ignored(workspace.root, workspace.settings)
        if deny_read:
            policy = with_deny_read(policy, list(deny_read))
        return cls(policy, bwrap=find_bwrap(), ignored=ignored)

    @classmethod
    def from_policy(cls, policy: SandboxPolicy) -> SandboxService:
        return cls(policy, bwrap=find_bwrap())

    # -- the Launcher protocol ---------------------------------------------------------
    #: ``run_command`` passes each call's capability set (see ``CapabilityLauncher``).
    accepts_capabilities = True

    def plan(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        capabilities: CapabilitySet | None = None,
    ) -> LaunchPlan:
        """The command as it runs contained; ``capabilities`` (what this call's approval
        granted) lifts exactly the masks of the paths it names, nothing more."""
        plan = self.backend().plan(argv, cwd=cwd, env=env, capabilities=capabilities)
        if self.ignored:
            from dataclasses import replace

            note = "[sandbox: ignored until the project is trusted: " + "; ".join(
                f"sandbox.{w.entry.field} = {w.entry.value!r} ({w.entry.scope.value})"
                for w in self.ignored
            )
            note += " — `codingcode trust` to allow]"
            plan = replace(plan, notice="\n".join(filter(None, [plan.notice, note])))
        return plan

    # -- backend choice ----------------------------------------------------------------
    def backend(self) -> Backend:
        """The backend in use (chosen on first use); raises :class:`SandboxError` if none."""
        if self._backend is None:
            self._backend = self._choose()
        return self._backend

    @property
    def masks(self) -> MaskFiles:
        if self._masks is None:
            self._masks = MaskFiles()
        return self._masks

    @property
    def credentials(self) -> CredentialBroker | None:
        """The session's masked credentials (None: ``sandbox.credentials`` names none)."""
        if self._credentials is None and self.policy.credentials:
            from codingcode.sandbox.credentials.broker import CredentialBroker

            self._credentials = CredentialBroker(
                self.policy.credentials,
                tls_terminate=self.policy.tls_terminate,
                project=self.policy.project,
            )
        return self._credentials

    def network_runtime(self) -> ProxyRuntime:
        """The session's filtering proxy, started on first use (limited network)."""
        if self._network is None:
            from codingcode.sandbox.network.runtime import ProxyRuntime

            self._network = ProxyRuntime(self.network_proxy, self.network_sink)
        return self._network

    def close(self) -> None:
        if self._masks is not None:
            self._masks.cleanup()
        if self._network is not None:
            self._network.close()
            self._network = None

    def _choose(self) -> Backend:
        policy = self.policy
        if policy.mode is SandboxMode.OFF:
            return NoneBackend(f"sandbox.mode = 'off' {self._origin('mode')}")
        if policy.backend is BackendChoice.NONE:
            return NoneBackend(f"sandbox.backend = 'none' {self._origin('backend')}")
        bwrap_problem = self._bwrap_problem()
        if policy.backend in (BackendChoice.AUTO, BackendChoice.BUBBLEWRAP) and not bwrap_problem:
            assert self.bwrap is not None
            return BubblewrapBackend(
                policy,
                self.bwrap,
                self.masks,
                proxy=self.network_runtime,
                credentials=self.credentials,
            )
        if policy.backend is BackendChoice.BUBBLEWRAP:
            raise SandboxError(
                f"Command not run: sandbox.backend is 'bubblewrap' but {bwrap_problem}. "
                + INSTALL_HINT
            )
        ll_problem = self._landlock_problem()
        if not ll_problem:
            return LandlockBackend(
                policy,
                self.masks,
                namespaces=self.landlock_namespaces,
                credentials=self.credentials,
            )
        if policy.backend is BackendChoice.LANDLOCK:
            raise SandboxError(
                f"Command not run: sandbox.backend is 'landlock' but {ll_problem}. " + INSTALL_HINT
            )
        raise SandboxError(
            f"Command not run: no sandbox is available here ({bwrap_problem}; {ll_problem}). "
            + INSTALL_HINT
        )

    def _bwrap_problem(self) -> str | None:
        if self.bwrap is None:
            return "bubblewrap (`bwrap`) is not installed"
        return bubblewrap_problem(self.bwrap)

    def _landlock_problem(self) -> str | None:
        if self.landlock_unavailable is not None:
            return self.landlock_unavailable
        return landlock_problem()

    def _origin(self, name: str) -> str:
        for entry in reversed(self.policy.entries):
            if entry.field == name:
                return f"in {entry.scope.value} settings {entry.path}"
        return ""
