"""Live checks of each guarantee, for ``codingcode sandbox status`` (never a table).

Each check runs real escape attempts through the same launcher the tools use, against a
scratch project the check builds (a planted fake key in a fake ``$HOME``, a target file
outside, listeners on the host), and judges by what happened *on the host*: a file that
changed or a listener that heard from the sandbox is an escape whatever the command said.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codingcode.config import user_state_dir
from codingcode.errors import AgentError
from codingcode.process import run_command
from codingcode.sandbox.policy import Network, SandboxMode, SandboxPolicy
from codingcode.sandbox.service import SandboxService

PROBE_SCRIPT = Path(__file__).with_name("probe_script.py")
ORIGINAL = "original\n"
PROBE_SECRET_ENV = "CODINGCODE_PROBE_API_KEY"


@dataclass
class Check:
    key: str
    title: str
    #: True: enforced; False: not enforced here; None: switched off by the settings.
    enforced: bool | None
    details: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "enforced": self.enforced,
            "details": self.details,
        }


@dataclass
class StatusReport:
    backend: str
    policy: SandboxPolicy
    checks: list[Check] = field(default_factory=list)
    #: Set when no command can run (fail closed): why, and how to fix it.
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        p = self.policy
        return {
            "backend": self.backend,
            "error": self.error,
            "policy": {
                "project": str(p.project),
                "mode": p.mode.value,
                "backend": p.backend.value,
                "network": p.network.value,
                "writable_roots": [str(r) for r in p.writable_roots],
                "masked_paths": [str(m) for m in p.masked_paths],
            },
            "checks": [c.as_json() for c in self.checks],
        }


@dataclass
class _Scratch:
    base: Path
    project: Path
    outside_file: Path
    symlink_target: Path
    home: Path
    protected: list[Path]
    token: str


def _scratch_base() -> Path:
    """Somewhere visible inside the sandbox but not writable there (not /tmp, which is private)."""
    try:
        parent = user_state_dir() / "probes"
        parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix="probe-", dir=parent)).resolve()
    except OSError:
        return Path(tempfile.mkdtemp(prefix="codingcode-probe-")).resolve()


@contextlib.contextmanager
def _scratch() -> Iterator[_Scratch]:
    base = _scratch_base()
    try:
        project = base / "project"
        (project / ".codingcode").mkdir(parents=True)
        (project / ".git" / "hooks").mkdir(parents=True)
        protected = [
            project / ".codingcode" / "settings.local.json",
            project / ".git" / "hooks" / "pre-commit",
            project / ".git" / "config",
        ]
        for path in protected:
            path.write_text(ORIGINAL)
        outside = base / "outside"
        outside.mkdir()
        outside_file = outside / "target.txt"
        outside_file.write_text(ORIGINAL)
        symlink_target = outside / "via-symlink.txt"
        symlink_target.write_text(ORIGINAL)
        (project / "escape").symlink_to(symlink_target)
        home = base / "home"
        (home / ".ssh").mkdir(parents=True)
        (home / ".ssh" / "id_probe").write_text("-----BEGIN FAKE KEY-----\n")
        yield _Scratch(
            base, project, outside_file, symlink_target, home, protected, secrets.token_hex(8)
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def _listeners(scratch: _Scratch) -> Iterator[dict[str, Any]]:
    with contextlib.ExitStack() as stack:
        tcp = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(8)
        tcp.setblocking(False)
        udp = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        udp.bind(("127.0.0.1", 0))
        udp.setblocking(False)
        unix_path = str(scratch.base / "outside" / "probe.sock")
        if len(unix_path) > 100:
            unix_path = tempfile.mktemp(prefix="codingcode-probe-", suffix=".sock")
            stack.callback(lambda: Path(unix_path).unlink(missing_ok=True))
        unix = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        unix.bind(unix_path)
        unix.listen(8)
        unix.setblocking(False)
        abstract_name = f"codingcode-probe-{scratch.token}"
        abstract = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        abstract.bind("\0" + abstract_name)
        abstract.listen(8)
        abstract.setblocking(False)
        yield {
            "tcp": tcp,
            "udp": udp,
            "unix": unix,
            "abstract": abstract,
            "tcp_port": tcp.getsockname()[1],
            "udp_port": udp.getsockname()[1],
            "unix_path": unix_path,
            "abstract_name": abstract_name,
        }


def _heard(sock: socket.socket, *, datagram: bool = False) -> bool:
    try:
        if datagram:
            sock.recv(64)
        else:
            conn, _ = sock.accept()
            conn.close()
    except (BlockingIOError, OSError):
        return False
    return True


async def check_guarantees(service: SandboxService) -> StatusReport:
    """Run every live check with ``service``'s policy (on a scratch project)."""
    policy = service.policy
    try:
        backend = service.backend().name
    except AgentError as exc:
        return StatusReport("unavailable", policy, error=exc.message)
    report = StatusReport(backend, policy)
    with _scratch() as scratch:
        probe_policy = replace(policy, project=scratch.project)
        probe_service = replace(service, policy=probe_policy)
        try:
            with _listeners(scratch) as listeners:
                raw = await _run_probe(probe_service, scratch, listeners)
                heard = {
                    "tcp": _heard(listeners["tcp"]),
                    "udp": _heard(listeners["udp"], datagram=True),
                    "unix": _heard(listeners["unix"]),
                    "abstract": _heard(listeners["abstract"]),
                }
            report.checks += _judge(raw, heard, scratch, probe_policy)
            report.checks.append(await _check_tree(probe_service, scratch))
        finally:
            probe_service.close()
    return report


async def _run_probe(
    service: SandboxService, scratch: _Scratch, listeners: dict[str, Any]
) -> dict[str, Any]:
    tmp_file = f"/tmp/codingcode-probe-{scratch.token}"
    spec = {
        "outside_file": str(scratch.outside_file),
        "symlink": str(scratch.project / "escape"),
        "project_file": str(scratch.project / "inside.txt"),
        "tmp_file": tmp_file,
        "protected": [str(p) for p in scratch.protected],
        "tcp_port": listeners["tcp_port"],
        "udp_port": listeners["udp_port"],
        "unix_path": listeners["unix_path"],
        "abstract_name": listeners["abstract_name"],
        "token": scratch.token,
        "env_secret": PROBE_SECRET_ENV,
        "secrets": [
            "/etc/shadow",
            str(scratch.home / ".ssh"),
            *(str(m) for m in service.policy.masked_paths),
        ],
    }
    env = {**os.environ, "HOME": str(scratch.home), PROBE_SECRET_ENV: scratch.token}
    result = await run_command(
        [sys.executable, "-I", str(PROBE_SCRIPT), json.dumps(spec)],
        cwd=scratch.project,
        timeout_s=30,
        env=env,
        launcher=service,
    )
    lines = result.stdout.text().strip().splitlines()
    try:
        raw: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        raw = {"error": f"probe failed (exit {result.exit_code}): {result.stderr.text()[-500:]}"}
    raw["host_tmp_leak"] = _take(Path(tmp_file))
    return raw


def _take(path: Path) -> bool:
    """Whether ``path`` exists on the host (removing it if so)."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def _judge(
    raw: dict[str, Any], heard: dict[str, bool], scratch: _Scratch, policy: SandboxPolicy
) -> list[Check]:
    if "error" in raw:
        return [Check("probe", "live probe", False, [str(raw["error"])])]
    checks = []

    writes = Check("writes", "writes only to the project, a private /tmp and writable roots", True)
    if scratch.outside_file.read_text() != ORIGINAL:
        writes.enforced = False
        writes.details.append(f"wrote a file outside the project ({raw['write_outside']})")
    if scratch.symlink_target.read_text() != ORIGINAL:
        writes.enforced = False
        writes.details.append("wrote outside through a symlink in the project")
    if raw["host_tmp_leak"]:
        writes.enforced = False
        writes.details.append("/tmp is the host's, not private")
    elif raw["write_tmp"] != "ok":
        writes.details.append("/tmp is read-only here (TMPDIR points to a private directory)")
    project_written = raw["write_project"] == "ok"
    if policy.mode is SandboxMode.READ_ONLY and project_written:
        writes.enforced = False
        writes.details.append("the project is writable in read-only mode")
    elif policy.mode is SandboxMode.WORKSPACE_WRITE and not project_written:
        writes.details.append(f"the project is not writable ({raw['write_project']})")
    checks.append(writes)

    protected = Check(
        "protected", "agent files read-only: .codingcode/, .git/hooks, .git/config", True
    )
    for path in scratch.protected:
        if path.read_text() != ORIGINAL:
            protected.enforced = False
            protected.details.append(f"{path.relative_to(scratch.project)} was rewritten")
    checks.append(protected)

    network = Check("network", "no network: TCP, UDP, unix and abstract sockets to the host", True)
    if policy.network is Network.ALLOW:
        network.enforced = None
        network.details.append("network allowed by the settings")
    else:
        for kind, label in (
            ("tcp", "TCP to 127.0.0.1"),
            ("udp", "UDP to 127.0.0.1"),
            ("unix", "a host unix socket"),
            ("abstract", "a host abstract unix socket"),
        ):
            if heard[kind]:
                network.enforced = False
                network.details.append(f"reached {label}")
    checks.append(network)

    privs = Check("privileges", "no privilege gain: no_new_privs, no capabilities", True)
    if raw["no_new_privs"] != "1":
        privs.enforced = False
        privs.details.append("no_new_privs is not set")
    if raw["cap_eff"].strip("0") != "":
        privs.enforced = False
        privs.details.append(f"effective capabilities {raw['cap_eff']}")
    checks.append(privs)

    masked = Check(
        "secrets",
        "secrets masked: ~/.ssh, /etc/shadow, /etc/passwd, masked_paths, secret env vars",
        True,
    )
    for path, state in raw["secrets"].items():
        if state != "hidden":
            masked.enforced = False
            masked.details.append(f"{path}: {state}")
    if raw["env_secret"]:
        masked.enforced = False
        masked.details.append(f"${PROBE_SECRET_ENV} reached the command")
    uids = raw["passwd_uids"]
    if not isinstance(uids, list) or not set(uids) <= {0, os.getuid()}:
        masked.enforced = False
        masked.details.append(f"/etc/passwd is the host's (uids {uids})")
    checks.append(masked)
    return checks


#: A classic daemon: fork, new session, fork again. The first process waits until the
#: daemon is up (a byte on a pipe), so a kill of the process group cannot catch it early.
_DAEMON = (
    "import os, sys, time\n"
    "r, w = os.pipe()\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        os.write(w, b'up')\n"
    "        time.sleep(60)\n"
    "    os._exit(0)\n"
    "os.read(r, 2)\n"
)


def processes_with(token: str) -> list[int]:
    """Host pids whose command line holds ``token`` (every pid namespace shows up here)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append(int(entry.name))
    return found


def wait_until_gone(token: str, timeout_s: float) -> list[int]:
    """Poll until no process holds ``token`` (SIGKILL delivery is asynchronous)."""
    deadline = time.monotonic() + timeout_s
    while (survivors := processes_with(token)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return survivors


async def _check_tree(service: SandboxService, scratch: _Scratch) -> Check:
    import anyio

    check = Check("tree", "the whole process tree dies with the call", True)
    token = f"codingcode-daemon-{scratch.token}"
    await run_command(
        [sys.executable, "-I", "-c", _DAEMON, token],
        cwd=scratch.project,
        timeout_s=30,
        launcher=service,
    )
    survivors = await anyio.to_thread.run_sync(wait_until_gone, token, 2.0)
    if survivors:
        check.enforced = False
        check.details.append("a daemon (double fork, new session) outlived the call")
        for pid in survivors:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
    return check
