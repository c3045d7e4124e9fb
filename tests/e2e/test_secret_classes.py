"""Every secret class planted and read for real: ``codingcode sandbox run`` prints none of it
(both backends), ``codingcode check`` in the default mode never auto-allows reading it, and
ordinary work (``/etc/os-release``, ``~/.gitconfig``, CA certificates, git, python) still runs
unasked.

The system's secrets are planted in the real ``/etc`` (as root; each path made by the test is
removed after it, and a directory it had to create too), world-readable where a class names
them (so the class's pattern is what hides them, not the mode) and ``0600`` / ``0700`` for the
root-only rule. The user's stores and other agents' credentials go in a fake HOME; the state
directory is the test's own.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.sandbox.conftest import BACKENDS

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="plants files in the real /etc (needs root)"),
]

TOKEN = secrets.token_hex(6)

#: (path under /etc, mode); directories the test creates are 0755 unless the entry says.
SYSTEM = [
    (f"ssh/ssh_host_cc{TOKEN}_key", 0o644),
    (f"ssl/private/cc{TOKEN}.pem", 0o644),
    (f"letsencrypt/live/cc{TOKEN}/privkey.pem", 0o644),
    (f"letsencrypt/archive/cc{TOKEN}/privkey1.pem", 0o644),
    (f"letsencrypt/accounts/cc{TOKEN}/private_key.json", 0o644),
    (f"cc{TOKEN}.keytab", 0o644),
    (f"NetworkManager/system-connections/cc{TOKEN}.nmconnection", 0o644),
    (f"wpa_supplicant/cc{TOKEN}.conf", 0o644),
    (f"credstore/cc{TOKEN}", 0o644),
    (f"sudoers.d/cc{TOKEN}", 0o440),
    # the root-only rule: a file "other" cannot read, and a directory it cannot enter
    (f"cc{TOKEN}-root-only.conf", 0o600),
    (f"cc{TOKEN}-locked/inside.conf", 0o644),
]
LOCKED_DIR = f"cc{TOKEN}-locked"

USER = [
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".azure/accessTokens.json",
    ".config/gcloud/credentials.db",
    ".kube/config",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/gh/hosts.yml",
    ".config/hub",
    ".npmrc",
    ".pypirc",
    ".gem/credentials",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".m2/settings.xml",
    ".terraform.d/credentials.tfrc.json",
    ".config/rclone/rclone.conf",
    ".s3cfg",
    ".pgpass",
    ".my.cnf",
    ".vault-token",
    ".config/op/config",
    ".gnupg/private-keys-v1.d/key.key",
    ".password-store/site.gpg",
    ".local/share/keyrings/login.keyring",
]
AGENTS = [
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
]


@pytest.fixture
def base() -> Iterator[Path]:
    """Outside /tmp: the sandbox's /tmp is private, so a secret there would prove nothing."""
    parent = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="codingcode-secrets-", dir=parent)).resolve()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def project(base: Path) -> Path:
    (base / "project").mkdir()
    return base / "project"


@pytest.fixture
def planted(base: Path) -> Iterator[dict[str, object]]:
    # Tests on other workers plant under the same /etc directories and remove the ones they
    # made: one at a time (a lock across processes), or one removes the other's files.
    with open("/tmp/codingcode-tests-etc.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield from _plant(base)


def _plant(base: Path) -> Iterator[dict[str, object]]:
    tmp_path = base
    made: list[Path] = []  # what to remove, deepest last
    files: dict[str, str] = {}  # path -> its canary line
    try:
        for rel, mode in SYSTEM:
            path = Path("/etc") / rel
            for parent in reversed(path.parents):
                if str(parent).startswith("/etc/") and not parent.exists():
                    parent.mkdir(mode=0o755)
                    made.append(parent)
            canary = f"CANARY-{TOKEN}-{len(files)}"
            path.write_text(canary + "\n")
            path.chmod(mode)
            made.append(path)
            files[str(path)] = canary
        (Path("/etc") / LOCKED_DIR).chmod(0o700)
        home = tmp_path / "home"
        for rel in [*USER, *AGENTS]:
            path = home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            canary = f"CANARY-{TOKEN}-{len(files)}"
            path.write_text(canary + "\n")
            files[str(path)] = canary
        (home / ".gitconfig").write_text("[user]\n\tname = Ordinary Work\n")
        state = tmp_path / "state"
        (state / "mcp-oauth").mkdir(parents=True)
        for rel in ("mcp-oauth/server.json", "audit.db", "trust.json"):
            canary = f"CANARY-{TOKEN}-{len(files)}"
            (state / rel).write_text(canary + "\n")
            files[str(state / rel)] = canary
        (tmp_path / "config").mkdir()
        env = {
            "HOME": str(home),
            "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
            "CODINGCODE_STATE_DIR": str(state),
        }
        yield {"files": files, "env": env, "home": home}
    finally:
        for path in reversed(made):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def settings(env: dict[str, str], backend: str) -> None:
    Path(env["CODINGCODE_CONFIG_DIR"], "settings.json").write_text(
        json.dumps({"sandbox": {"backend": backend}})
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_class_is_hidden_in_sandbox_run(project: Path, planted: dict, backend: str) -> None:
    env, files = planted["env"], planted["files"]
    settings(env, backend)
    # each read on its own line, so one refusal does not stop the rest
    script = "".join(f"cat {p!r} 2>&1; echo; " for p in files)
    r = run_cli(["sandbox", "run", "--", "bash", "-c", script], cwd=project, env=env)
    printed = [p for p, canary in files.items() if canary in r.stdout + r.stderr]
    assert printed == [], printed
    # the control: the files are there and readable outside the sandbox
    assert all(Path(p).read_text().strip() == c for p, c in files.items())
    # ordinary work in the same sandbox
    home = planted["home"]
    ordinary = (
        "cat /etc/os-release >/dev/null && cat /etc/hostname >/dev/null && "
        f"cat {home}/.gitconfig && git --version && python3 -c 'print(6*7)' && "
        "ls /etc/ssl/certs >/dev/null && echo ok"
    )
    if os.path.exists("/etc/ssl/certs/ca-certificates.crt"):
        ordinary += " && head -c 30 /etc/ssl/certs/ca-certificates.crt >/dev/null"
    if shutil.which("npm"):
        ordinary += " && npm --version >/dev/null"
    r = run_cli(["sandbox", "run", "--", "bash", "-c", ordinary], cwd=project, env=env)
    assert r.code == 0 and "Ordinary Work" in r.stdout and "42" in r.stdout, r.stderr


def test_check_never_auto_allows_reading_a_secret(project: Path, planted: dict) -> None:
    env, files = planted["env"], planted["files"]
    settings(env, "bubblewrap")
    lines = [
        json.dumps({"tool": "execute_command", "args": {"command": f"cat {p}"}}) for p in files
    ]
    lines += [json.dumps({"tool": "read_file", "args": {"path": p}}) for p in files]
    # (a file outside the project and the system locations, ~/.gitconfig among them, is
    # asked about whatever it holds: that is the read-only analysis, not a mask)
    ordinary = ["cat /etc/os-release", "cat /etc/hostname", "ls /etc/ssl/certs", "git status"]
    lines += [json.dumps({"tool": "execute_command", "args": {"command": c}}) for c in ordinary]
    r = run_cli(["check", "--batch"], cwd=project, env=env, input="\n".join(lines) + "\n")
    assert r.code == 0, r.stderr
    results = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(results) == len(lines), r.stderr[-3000:]
    secret_results = results[: 2 * len(files)]
    auto = [
        (line, got["decision"], got["reason"])
        for line, got in zip(lines, secret_results, strict=False)
        if got["decision"] != "ask"
    ]
    assert auto == [], auto
    for got in results[2 * len(files) :]:
        assert got["decision"] == "allow", got
