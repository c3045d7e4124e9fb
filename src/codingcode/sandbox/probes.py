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

from codingcode.errors import AgentError
from codingcode.process import run_command
from codingcode.sandbox.backends import mask_resolver
from codingcode.sandbox.masks import MaskSpec, home_dirs
from codingcode.sandbox.policy import Network, SandboxMode, SandboxPolicy
from codingcode.sandbox.secrets import default_masks
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
class MaskCheck:
    """One mask of the list, and what the live probe saw of it (``None``: not probed)."""

    pattern: str
    what: str
    origin: str
    #: Its secret class (``codingcode.sandbox.secrets``), "" for the user's own masks.
    secret_class: str = ""
    #: The paths probed for it: planted markers, or the real paths it masks here.
    probed: list[str] = field(default_factory=list)
    #: True: hidden in the sandbox; False: readable there; None: nothing to probe here.
    enforced: bool | None = None
    details: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "pattern": self.pattern,
            "what": self.what,
            "origin": self.origin,
            "class": self.secret_class,
            "probed": self.probed,
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
    #: Every mask of the list, each probed live.
    masks: list[MaskCheck] = field(default_factory=list)
    #: What this backend cannot enforce here, said plainly.
    limits: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        p = self.policy
        return {
            "backend": self.backend,
            "error": self.error,
            "masks": [m.as_json() for m in self.masks],
            "limits": self.limits,
            "policy": {
                "project": str(p.project),
                "mode": p.mode.value,
                "backend": p.backend.value,
                "network": p.network.value,
                "allowedDomains": list(p.domains.allowed),
                "deniedDomains": list(p.domains.denied),
                "readOnlyDomains": list(p.domains.read_only),
                "allowLocalAddresses": p.domains.allow_local,
                "writable_roots": [str(r) for r in p.writable_roots],
                "masked_paths": [str(m) for m in p.masked_paths],
                "deny_read": [{"pattern": m.pattern, "origin": m.origin} for m in p.deny_read],
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
    #: Default mask pattern -> the marker files planted for it.
    planted: dict[str, list[Path]] = field(default_factory=dict)


#: Default home masks that are directories (the others are single files).
_STORE_DIRS = frozenset(
    {".ssh", ".aws", ".azure", "gcloud", ".kube", "gh", "hub", ".gnupg", ".password-store"}
    | {"keyrings", "kwalletd", "rclone", "op"}
)
#: At most this many files are probed for one mask of a directory or the /etc scan.
_SAMPLE = 5


#: The files planted for a project pattern whose star cannot simply be spelled out.
_PROJECT_SAMPLES = {"**/.env.*": (".env.local", ".env.production")}


def _plant(home: Path, project: Path) -> dict[str, list[Path]]:
    """A marker for every default mask in the scratch home and project."""
    planted: dict[str, list[Path]] = {}
    for spec in default_masks():
        pattern = spec.pattern
        if pattern.startswith("~/"):
            path = home / pattern[2:].replace("*", "")
            if path.name in _STORE_DIRS:
                path.mkdir(parents=True, exist_ok=True)
                path = path / "probe-secret"
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                path.write_text("probe secret\n")
            planted[pattern] = [path]
        elif pattern.startswith("**/"):  # the project's files: one at the top, one below
            top, below = _PROJECT_SAMPLES.get(pattern) or (pattern[3:].replace("*", "probe"),) * 2
            (project / "sub").mkdir(exist_ok=True)
            planted[pattern] = [project / top, project / "sub" / below]
        for path in planted.get(pattern, []):
            path.write_text("PROBE_SECRET=1\n")
    (project / ".env.example").write_text("TEMPLATE=1\n")
    return planted


def _scratch_base() -> Path:
    """Somewhere visible inside the sandbox but not writable there (not /tmp, which is private)."""
    # Not under codingcode's state directory: the sandbox masks that whole (and would
    # have to leave it visible, a parent of the probe's project).
    for parent in ("/var/tmp", os.path.expanduser("~")):
        if os.path.isdir(parent) and os.access(parent, os.W_OK):
            try:
                return Path(tempfile.mkdtemp(prefix="codingcode-probe-", dir=parent)).resolve()
            except OSError:
                continue
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
        planted = _plant(home, project)
        yield _Scratch(
            base,
            project,
            outside_file,
            symlink_target,
            home,
            protected,
            secrets.token_hex(8),
            planted,
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
    # The user's own masks (denyRead, deny rules, masked_paths) are probed where they are:
    # resolved against the real project and home, and masked in the probe's sandbox too.
    user_specs = [
        *(MaskSpec(str(p), "sandbox.masked_paths") for p in policy.masked_paths),
        *policy.deny_read,
    ]
    real = mask_resolver(replace(policy, deny_read=tuple(user_specs))).resolve(
        home_dirs(os.environ)
    )
    user_paths: dict[MaskSpec, list[Path]] = {}
    for path, spec in real.paths.items():
        user_paths.setdefault(spec, []).append(path)
    with _scratch() as scratch:
        probe_policy = replace(
            policy,
            project=scratch.project,
            masked_paths=tuple(dict.fromkeys([*policy.masked_paths, *real.paths])),
        )
        probe_service = replace(service, policy=probe_policy)
        mask_paths = _mask_paths(scratch, user_specs, user_paths)
        try:
            with _listeners(scratch) as listeners:
                raw = await _run_probe(probe_service, scratch, listeners, mask_paths)
                heard = {
                    "tcp": _heard(listeners["tcp"]),
                    "udp": _heard(listeners["udp"], datagram=True),
                    "unix": _heard(listeners["unix"]),
                    "abstract": _heard(listeners["abstract"]),
                }
            report.checks += _judge(raw, heard, scratch, probe_policy)
            report.masks = _judge_masks(raw, scratch, user_specs, mask_paths)
            report.limits = _limits(backend, report.masks, real.notes)
            report.checks.append(await _check_tree(probe_service, scratch))
            if probe_policy.network is Network.LIMITED:
                report.checks.append(await _check_proxy(probe_service, scratch))
        finally:
            probe_service.close()
    return report


def _mask_paths(
    scratch: _Scratch, user_specs: list[MaskSpec], user_paths: dict[MaskSpec, list[Path]]
) -> dict[str, list[Path]]:
    """Per mask (keyed by pattern and origin), the paths the probe tries to read."""
    found: dict[str, list[Path]] = {}
    for spec in default_masks():
        if spec.scan == "root-only":
            from codingcode.sandbox.etc_scan import RootOnlyScan

            paths = _sample_files(RootOnlyScan(spec.pattern).paths())
        elif spec.pattern.startswith("/"):
            paths = _sample_files(_glob(spec.pattern))
        else:
            paths = scratch.planted.get(spec.pattern, [])
        found[_key(spec)] = paths
    for spec in user_specs:
        # Under /tmp or /run a path is out of every sandbox's sight (both are private
        # there): reading it would prove nothing, so it is not probed.
        found[_key(spec)] = [
            p for p in user_paths.get(spec, []) if not str(p).startswith(("/tmp/", "/run/"))
        ]
    return found


def _sample_files(matches: list[str]) -> list[Path]:
    """The files to probe for these matches: each file, and a few files inside each
    directory (bounded: a masked directory is probed by what it holds)."""
    out: list[Path] = []
    for match in sorted(matches):
        if len(out) >= _SAMPLE:
            break
        if os.path.isfile(match):
            out.append(Path(match))
            continue
        for base, _dirs, files in os.walk(match):
            out.extend(Path(base, f) for f in sorted(files)[: _SAMPLE - len(out)])
            if len(out) >= _SAMPLE:
                break
    return out


def _glob(pattern: str) -> list[str]:
    import glob

    return glob.glob(pattern)


def _key(spec: MaskSpec) -> str:
    return f"{spec.pattern}\0{spec.origin}"


def _judge_masks(
    raw: dict[str, Any],
    scratch: _Scratch,
    user_specs: list[MaskSpec],
    mask_paths: dict[str, list[Path]],
) -> list[MaskCheck]:
    states: dict[str, str] = raw.get("secrets", {}) if "error" not in raw else {}
    checks = []
    for spec in [*default_masks(), *user_specs]:
        paths = mask_paths.get(_key(spec), [])
        pattern = f"{spec.pattern} (root-only)" if spec.scan == "root-only" else spec.pattern
        check = MaskCheck(
            pattern, spec.what, spec.origin, spec.secret_class, [str(p) for p in paths]
        )
        if paths and states:
            leaks = [f"{p}: {states.get(str(p), 'not probed')}" for p in paths]
            leaks = [line for line in leaks if not line.endswith(": hidden")]
            check.enforced = not leaks
            check.details = leaks
        elif not paths:
            check.details.append(
                "nothing to probe here (no such file on this machine, or only under the "
                "sandbox's private /tmp or /run)"
            )
        checks.append(check)
    return checks


def _limits(backend: str, masks: list[MaskCheck], notes: list[str]) -> list[str]:
    from codingcode.sandbox.masks import MAX_SCAN_ENTRIES

    limits = [
        "masks cover the files that exist when a command starts: the project walk (.env "
        f"files, denyRead patterns) reads at most {MAX_SCAN_ENTRIES} entries and skips .git, "
        "node_modules, virtual environments and caches; a file created during a command "
        "is not masked",
        "only an explicit grant exposes a masked path: the user's answer to that call, or "
        "an allow rule naming it literally (never a mode pass, auto-allow, hook or session "
        "grant), and only the paths the command names literally (no globs, no variables)",
        *notes,
    ]
    if backend == "landlock":
        limits.append(
            "landlock: Landlock can only grant access, so it reads everything but the masked "
            "paths; masks inside writable directories (the project's .env files) are enforced "
            "by the helper's mount namespace only"
        )
        env = next((m for m in masks if m.pattern == "**/.env"), None)
        if env is not None and env.enforced is False:
            limits.append(
                "landlock: this kernel gave the helper no mount namespace, so the project's "
                ".env files and other masks inside writable directories are NOT masked here"
            )
    return limits


async def _run_probe(
    service: SandboxService,
    scratch: _Scratch,
    listeners: dict[str, Any],
    mask_paths: dict[str, list[Path]],
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
        "secrets": sorted(
            {
                "/etc/shadow",
                str(scratch.home / ".ssh"),
                *(str(m) for m in service.policy.masked_paths),
                *(str(p) for paths in mask_paths.values() for p in paths),
            }
        ),
        "readable": [str(scratch.project / ".env.example")],
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


_PROXY_PROBE = """
import json, os, socket
out = {"proxy_env": os.environ.get("HTTPS_PROXY", "")}
try:
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"CONNECT codingcode-probe.invalid:443 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    data = b""
    while b"\\r\\n\\r\\n" not in data and len(data) < 65536:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    out["answer"] = data.decode("latin-1")
except OSError as exc:
    out["answer"] = "error: " + str(exc)
print(json.dumps(out))
"""


async def _check_proxy(service: SandboxService, scratch: _Scratch) -> Check:
    """``limited`` network: the proxy answers inside the sandbox, and refuses a name that is
    not listed (the command's CONNECT goes through the relay to codingcode and back)."""
    domains = service.policy.domains
    check = Check(
        "network-proxy",
        "limited network: the filtering proxy is live and refuses unlisted names",
        True,
    )
    result = await run_command(
        [sys.executable, "-I", "-c", _PROXY_PROBE],
        cwd=scratch.project,
        timeout_s=30,
        env=dict(os.environ),
        launcher=service,
    )
    try:
        raw = json.loads(result.stdout.text().strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raw = {"answer": f"probe failed (exit {result.exit_code}): {result.stderr.text()[-300:]}"}
    answer = str(raw.get("answer", ""))
    if not answer.startswith("HTTP/1.1 403") or "blocked-by-network-policy" not in answer:
        check.enforced = False
        check.details.append(f"the proxy did not refuse an unlisted name: {answer[:200]!r}")
    if not raw.get("proxy_env"):
        check.enforced = False
        check.details.append("HTTPS_PROXY is not set inside the sandbox")
    shown = ", ".join(domains.allowed[:8]) + (" ..." if len(domains.allowed) > 8 else "")
    check.details.append(f"allowedDomains: {shown or 'none (nothing is reachable)'}")
    if domains.denied:
        check.details.append(f"deniedDomains: {', '.join(domains.denied[:8])}")
    if domains.allow_local:
        check.details.append("allowLocalAddresses: on (local and private addresses reachable)")
    check.details.append(
        "HTTPS: the proxy sees only the name and port a command connects to, not the URL "
        "or the content"
    )
    return check


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
    if policy.network is Network.LIMITED:
        network.details.append("limited: nothing leaves the sandbox except through the proxy")
    if policy.network is Network.ON:
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
        "secrets masked: the mask list (below), /etc/passwd, secret env vars",
        True,
    )
    for path, state in raw["secrets"].items():
        if state != "hidden":
            masked.enforced = False
            masked.details.append(f"{path}: {state}")
    for path, state in raw.get("readable", {}).items():
        if state == "hidden":
            masked.details.append(f"{path} should stay readable (a template) but is not")
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
