"""The secret classes: the table, the root-only rule under /etc, the matcher approval uses."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from codingcode.sandbox.masks import MaskResolver, MaskSpec
from codingcode.sandbox.secrets import (
    DEFAULT_MASKS,
    ROOT_ONLY,
    SECRET_CLASSES,
    STATE_DIR,
    RootOnlyScan,
    SecretMatcher,
    default_masks,
    is_root_only,
)


def test_the_table_holds_every_class_the_contract_names() -> None:
    keys = [c.key for c in SECRET_CLASSES]
    assert keys == ["project", "system", "user", "agents", "codingcode"]
    patterns = {s.pattern for c in SECRET_CLASSES for s in c.specs}
    for needed in [
        "/etc/ssh/ssh_host_*key*",
        "/etc/ssl/private",
        "/etc/letsencrypt/live",
        "/etc/letsencrypt/archive",
        "/etc/letsencrypt/accounts",
        "/etc/*.keytab",
        "/etc/NetworkManager/system-connections",
        "/etc/wpa_supplicant",
        "/etc/credstore*",
        "/etc/sudoers*",
        ROOT_ONLY,
        "~/.terraform.d/credentials.tfrc.json",
        "~/.gem/credentials",
        "~/.m2/settings.xml",
        "~/.config/rclone",
        "~/.s3cfg",
        "~/.pgpass",
        "~/.my.cnf",
        "~/.vault-token",
        "~/.gnupg",
        "~/.password-store",
        "~/.local/share/keyrings",
        "~/.azure",
        "~/.config/op",
        "~/.config/hub",
        "~/.cargo/credentials*",
        "~/.claude/.credentials.json",
        "~/.codex/auth.json",
        "~/.gemini/oauth_creds.json",
        STATE_DIR,
    ]:
        assert needed in patterns, needed
    # every spec says what it protects and which class it is
    assert all(s.what and s.secret_class for s in DEFAULT_MASKS)


def test_state_dir_is_masked_where_it_is(tmp_path: Path) -> None:
    specs = default_masks(tmp_path / "state")
    state = [s for s in specs if s.secret_class == "codingcode"]
    assert [s.pattern for s in state] == [str(tmp_path / "state")]
    (tmp_path / "state" / "mcp-oauth").mkdir(parents=True)
    project = tmp_path / "project"
    project.mkdir()
    paths = MaskResolver(state, project).resolve([]).paths
    assert (tmp_path / "state").resolve() in paths


def test_state_dir_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "st"))
    assert str((tmp_path / "st").resolve()) in {s.pattern for s in default_masks()}


def _mk(path: Path, mode: int, *, directory: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if directory:
        path.mkdir()
    else:
        path.write_text("x")
    path.chmod(mode)
    return path


def test_root_only_rule(tmp_path: Path) -> None:
    root = tmp_path / "etc"
    root.mkdir()
    secret = _mk(root / "secret.conf", 0o600)
    group = _mk(root / "group-only", 0o640)
    public = _mk(root / "os-release", 0o644)
    locked = _mk(root / "private", 0o700, directory=True)
    (locked / "inside.pem").write_text("k")  # inside a masked directory: not listed again
    listed = _mk(root / "listable", 0o711, directory=True)  # enterable: walked
    deep = _mk(listed / "deep.key", 0o600)
    (root / "link").symlink_to(secret)  # a link is not followed (its target is checked)
    found = set(RootOnlyScan(str(root)).paths())
    assert found == {str(secret), str(group), str(locked), str(deep)}
    assert not is_root_only(public.stat())


def test_root_only_scan_is_cached_by_mtime_and_bounded(tmp_path: Path) -> None:
    root = tmp_path / "etc"
    for i in range(30):
        _mk(root / f"d{i:02}" / "ok.conf", 0o644)
    scan = RootOnlyScan(str(root))
    assert scan.paths() == []
    new = _mk(root / "d05" / "new.key", 0o600)  # changes d05's mtime
    assert scan.paths() == [str(new)]
    small = RootOnlyScan(str(root), max_entries=5)
    small.paths()
    assert small.notes and "not masked" in small.notes[0]


def test_root_only_scan_costs_a_stat_per_directory_once_warm() -> None:
    scan = RootOnlyScan()
    scan.paths()  # the first scan lists /etc
    start = time.perf_counter()
    for _ in range(20):
        scan.paths()
    per_call = (time.perf_counter() - start) / 20
    assert per_call < 0.05, per_call  # generous: a stat per directory, under load


def test_matcher(tmp_path: Path) -> None:
    project = tmp_path / "project"
    home = tmp_path / "home"
    state = tmp_path / "state"
    for d in (project, home, state / "mcp-results", state / "mcp-oauth"):
        d.mkdir(parents=True)
    etc = tmp_path / "etc"
    locked = _mk(etc / "locked" / "x", 0o644)
    etc.joinpath("locked").chmod(0o700)
    specs = [
        *default_masks(state),
        MaskSpec(str(etc), secret_class="system", what="root-only", scan="root-only"),
    ]
    tools = SecretMatcher(specs, project, [home], state_dir=state, for_tools=True)
    commands = SecretMatcher(specs, project, [home])
    for m in (tools, commands):
        assert m.match(str(home / ".aws" / "credentials")) is not None
        assert m.match(str(project / ".env")) is not None
        assert m.match(str(project / ".env.example")) is None  # a template
        assert m.match(str(project / "src" / "app.py")) is None
        assert m.match(str(state / "mcp-oauth" / "tok.json")) is not None
        assert m.match(str(locked)) is not None  # its directory is root-only
        assert m.match("/etc/os-release") is None
        assert m.match("/etc/ssh/ssh_host_ed25519_key") is not None
    # a spilled output the model is told to read: read_file reads it unasked
    assert tools.match(str(state / "mcp-results" / "r.txt")) is None
    assert commands.match(str(state / "mcp-results" / "r.txt")) is not None
    # a symlink to a secret is the secret
    (project / "link").symlink_to(home / ".aws")
    assert tools.match(str(project / "link" / "credentials")) is not None
