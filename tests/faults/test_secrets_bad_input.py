"""Bad input around the secrets: one clear line, nothing exposed by accident.

- an allow rule naming a masked path that does not exist (then a symlink put there);
- a ``sandbox.denyRead`` entry that is a glob over ``/``;
- codingcode's state directory on another file system;
- a secrets entry with a NUL byte.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from codingcode.sandbox.masks import MaskResolver, MaskSpec
from codingcode.sandbox.policy import _over_root
from codingcode.sandbox.secrets import SecretMatcher, default_masks
from tests.conftest import run_cli
from tests.sandbox.conftest import BACKENDS, needs_bwrap


@pytest.fixture
def base() -> Iterator[Path]:
    """Outside /tmp (private in the sandbox: a secret there would prove nothing)."""
    parent = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="codingcode-badinput-", dir=parent)).resolve()
    for d in ("project", "home", "config", "state"):
        (path / d).mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def env_of(base: Path, state: Path | None = None) -> dict[str, str]:
    return {
        "HOME": str(base / "home"),
        "CODINGCODE_CONFIG_DIR": str(base / "config"),
        "CODINGCODE_STATE_DIR": str(state or base / "state"),
    }


def settings(base: Path, body: dict[str, object]) -> None:
    (base / "config" / "settings.json").write_text(json.dumps(body))


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


@needs_bwrap
def test_an_allow_rule_naming_a_missing_secret_exposes_nothing(base: Path) -> None:
    home = base / "home"
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("CANARY-ssh-key\n")
    named = home / ".aws" / "credentials"
    settings(
        base,
        {
            "sandbox": {"backend": "bubblewrap"},
            "permissions": {"allow": [f"execute_command(cat {named})"]},
        },
    )
    env = env_of(base)
    project = base / "project"
    r = run_cli(
        ["check", "execute_command", json.dumps({"command": f"cat {named}"})],
        cwd=project,
        env=env,
    )
    got = json.loads(r.stdout)
    assert got["decision"] == "allow" and got["capabilities"]["exposes"] == [], got
    missing = [x for x in got["capabilities"]["not_exposed"] if x["path"] == str(named)]
    assert missing and "does not exist" in missing[0]["reason"], got
    # a symlink put there to another secret: the rule's grant does not follow it
    named.parent.mkdir()
    named.symlink_to(home / ".ssh" / "id_ed25519")
    r = run_cli(
        ["tool", "execute_command", json.dumps({"command": f"cat {named}"})],
        cwd=project,
        env=env,
    )
    assert "CANARY-ssh-key" not in r.stdout + r.stderr, r.stdout


@pytest.mark.parametrize("pattern", ["/*", "/**", "/", "/[a-z]*/secrets", "//*"])
def test_deny_read_glob_over_root_is_one_clear_line(base: Path, pattern: str) -> None:
    settings(base, {"sandbox": {"denyRead": [pattern]}})
    env = env_of(base)
    for args in (
        ["sandbox", "run", "--", "echo", "ran"],
        ["check", "execute_command", '{"command": "ls"}'],
    ):
        r = run_cli(args, cwd=base / "project", env=env)
        assert r.code != 0 and "ran" not in r.stdout, (args, r.stdout)
        line = one_line(r.stderr)
        assert "a glob over /" in line and "denyRead" in line, line


def test_over_root_rule() -> None:
    for bad in ("/*", "/**", "/", "/?in", "/[ab]*/x", " /* "):
        assert _over_root(bad), bad
    for ok in ("/srv/*", "/etc/*.pem", "secrets/**", "**/*.key", "~/*", "/opt/x/**"):
        assert not _over_root(ok), ok


@pytest.mark.parametrize("backend", BACKENDS)
def test_state_dir_on_another_file_system(base: Path, backend: str) -> None:
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        pytest.skip("no writable /dev/shm here")
    state = Path(tempfile.mkdtemp(prefix="codingcode-state-", dir=shm))
    try:
        if os.stat(state).st_dev == os.stat(base).st_dev:
            pytest.skip("/dev/shm is on the same file system as /var/tmp here")
        (state / "mcp-oauth").mkdir()
        token = state / "mcp-oauth" / "server.json"
        token.write_text('{"access_token": "CANARY-oauth"}\n')
        settings(base, {"sandbox": {"backend": backend}})
        env = env_of(base, state)
        r = run_cli(["sandbox", "run", "--", "cat", str(token)], cwd=base / "project", env=env)
        assert "CANARY-oauth" not in r.stdout + r.stderr, r.stdout
        r = run_cli(
            ["check", "execute_command", json.dumps({"command": f"cat {token}"})],
            cwd=base / "project",
            env=env,
        )
        assert json.loads(r.stdout)["decision"] == "ask", r.stdout
    finally:
        shutil.rmtree(state, ignore_errors=True)


def test_a_secrets_entry_with_a_nul_byte(base: Path) -> None:
    settings(base, {"sandbox": {"denyRead": ["secrets/\u0000token"]}})
    r = run_cli(["sandbox", "run", "--", "echo", "ran"], cwd=base / "project", env=env_of(base))
    assert r.code != 0 and "ran" not in r.stdout
    assert "NUL character" in one_line(r.stderr)
    # a pattern with a NUL reaching the resolver or the matcher (a deny rule's path, say)
    # masks nothing and raises nothing; the rest of the list still holds
    home = base / "home"
    (home / ".aws").mkdir()
    specs = [
        *default_masks(base / "state"),
        MaskSpec("/etc/x\0y*", "deny rule"),
        MaskSpec("~/a\0b", "deny rule"),
        MaskSpec("sub\0/**", "deny rule"),
    ]
    resolved = MaskResolver(specs, base / "project").resolve([home])
    assert home / ".aws" in resolved.paths
    matcher = SecretMatcher(specs, base / "project", [home])
    assert matcher.match(str(home / ".aws" / "credentials")) is not None
    assert matcher.match("/srv/x\0y") is None
