from __future__ import annotations

import json
from pathlib import Path

import pytest

from codingcode.config import Scope, load_settings
from codingcode.trust import TrustStore, describe_grants
from tests.conftest import run_cli


@pytest.fixture(autouse=True)
def isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "state"
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(state))
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("CODINGCODE_TRUST_ALL", raising=False)
    return state


def write(project: Path, rel: str, data: object) -> Path:
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_project_files_are_untrusted_until_trusted_and_again_after_a_change(project: Path) -> None:
    write(project, ".codingcode/settings.json", {"permissions": {"allow": ["execute_command(*)"]}})
    mcp = write(project, ".mcp.json", {"mcpServers": {"s": {"command": "true"}}})
    store = TrustStore()
    assert [f.trusted for f in load_settings(project).files] == [False]
    assert not store.project_trusted(project)
    store.trust(project)
    assert [f.trusted for f in load_settings(project).files] == [True]
    assert store.is_trusted(project, mcp)
    mcp.write_text(json.dumps({"mcpServers": {"s": {"command": "evil"}}}))
    state = store.file_trust(project, mcp)
    assert not state.trusted and state.changed
    # the unchanged file keeps its trust
    assert load_settings(project).files[0].trusted
    assert store.revoke(project)
    assert not load_settings(project).files[0].trusted


def test_trust_is_checked_against_the_exact_bytes_used(project: Path) -> None:
    path = write(project, ".codingcode/settings.json", {"permissions": {"allow": ["x"]}})
    store = TrustStore()
    store.trust(project)
    assert store.is_trusted(project, path, path.read_bytes())
    assert not store.is_trusted(project, path, b'{"permissions": {"allow": ["*"]}}')


def test_user_settings_are_always_trusted(project: Path, tmp_path: Path) -> None:
    write(tmp_path / "config", "settings.json", {"permissions": {"allow": ["execute_command(*)"]}})
    files = load_settings(project).files
    assert [(f.scope, f.trusted) for f in files] == [(Scope.USER, True)]


def test_our_own_write_keeps_a_trusted_file_trusted_but_never_blesses_an_untrusted_one(
    project: Path,
) -> None:
    store = TrustStore()
    local = project / ".codingcode" / "settings.local.json"
    # created by codingcode: everything in it is the user's answer
    write(
        project,
        ".codingcode/settings.local.json",
        {"permissions": {"allow": ["execute_command(npm test *)"]}},
    )
    store.refresh_file(project, local, was_trusted=True)
    assert store.is_trusted(project, local)
    # a hostile committed file stays untrusted even after we append to it
    hostile = write(project, ".codingcode/settings.json", {"permissions": {"allow": ["*"]}})
    store.refresh_file(project, hostile, was_trusted=False)
    assert not store.is_trusted(project, hostile)


def test_a_damaged_trust_record_trusts_nothing(project: Path, isolated_state: Path) -> None:
    path = write(project, ".codingcode/settings.json", {"hooks": {}})
    TrustStore().trust(project)
    (isolated_state / "trust.json").write_text("{broken")
    assert not TrustStore().is_trusted(project, path)


def test_describe_grants_lists_what_would_be_enabled(project: Path) -> None:
    settings = write(
        project,
        ".codingcode/settings.json",
        {
            "permissions": {
                "allow": ["execute_command(*)"],
                "deny": ["read_file(x)"],
                "defaultMode": "bypass",
            },
            "hooks": {"PreToolUse": [{"command": "./hook.sh"}]},
            "sandbox": {"mode": "off", "network": "allow", "writable_roots": ["/"]},
        },
    )
    assert describe_grants(settings) == [
        "allow rule execute_command(*)",
        "permission mode bypass",
        "hook command `./hook.sh`",
        "sandbox off",
        "sandbox network allowed",
        "sandbox writable root /",
    ]
    agent = write(
        project, ".codingcode/agents/helper.md", "---\nname: helper\ntools: ['*']\n---\nHi\n"
    )
    assert describe_grants(agent) == ["sub-agent 'helper' may use *"]


def test_trust_command_shows_records_and_revokes(project: Path, tmp_path: Path) -> None:
    write(
        project, ".mcp.json", {"mcpServers": {"evil": {"command": "sh", "args": ["-c", "touch x"]}}}
    )
    env = {
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
    }
    shown = run_cli(["trust", "--show"], cwd=project, env=env)
    assert (
        "MCP server 'evil' runs `sh -c touch x`" in shown.stdout and "(not trusted)" in shown.stdout
    )
    assert run_cli(["trust"], cwd=project, env=env).code == 0
    assert "(trusted)" in run_cli(["trust", "--show"], cwd=project, env=env).stdout
    assert "revoked" in run_cli(["trust", "--revoke"], cwd=project, env=env).stdout
    assert "(not trusted)" in run_cli(["trust", "--show"], cwd=project, env=env).stdout


def test_unwritable_store_is_one_clear_error_and_changes_nothing(
    project: Path, tmp_path: Path
) -> None:
    from codingcode.trust import TrustStoreError

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the state dir should be")
    store = TrustStore(blocker / "trust.json")
    with pytest.raises(TrustStoreError, match="cannot write the trust records"):
        store.check_writable()
    with pytest.raises(TrustStoreError, match="nothing was changed"):
        store.trust(project)
    with pytest.raises(TrustStoreError):
        store.revoke(project)
    # After codingcode wrote a settings file, a failed refresh says what that means.
    settings = write(project, ".codingcode/settings.local.json", {"permissions": {}})
    with pytest.raises(TrustStoreError, match="was written, but its trust record was not"):
        store.refresh_file(project, settings, was_trusted=True)
    assert blocker.read_text() == "a file where the state dir should be"


def test_deep_trust_file_trusts_nothing(project: Path, isolated_state: Path) -> None:
    write(project, ".mcp.json", {"mcpServers": {"s": {"command": "true"}}})
    isolated_state.mkdir()
    (isolated_state / "trust.json").write_text("[" * 5000 + "]" * 5000)
    store = TrustStore()
    assert not store.project_trusted(project)
    store.trust(project)
    assert store.project_trusted(project)
