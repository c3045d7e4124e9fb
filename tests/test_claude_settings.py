"""Claude Code's settings files are read beside codingcode's own: the order (local >
project > user; ours wins a conflict at the same level), the trust rules, the notes for a
file that cannot be read or a key no one knows, and ``codingcode config``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codingcode.approval.rules import load_policy
from codingcode.config import Scope, load_settings, read_order
from codingcode.dirs import claude_config_dir
from codingcode.paths import is_control_file
from codingcode.trust import TrustStore, grant_files
from tests.conftest import run_cli


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_the_read_order_puts_claude_first_at_each_level(project: Path) -> None:
    order = [(scope, str(path), dialect) for scope, path, dialect in read_order(project)]
    assert [(s, d) for s, _, d in order] == [
        (Scope.USER, "claude"),
        (Scope.USER, "codingcode"),
        (Scope.PROJECT, "claude"),
        (Scope.PROJECT, "codingcode"),
        (Scope.LOCAL, "claude"),
        (Scope.LOCAL, "codingcode"),
    ]
    assert order[0][1] == str(claude_config_dir() / "settings.json")
    assert order[2][1].endswith(".claude/settings.json")
    assert order[4][1].endswith(".claude/settings.local.json")


def test_precedence_local_over_project_over_user_ours_wins_a_tie(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODINGCODE_TRUST_ALL", "1")
    write(claude_config_dir() / "settings.json", {"permissions": {"defaultMode": "plan"}})
    assert load_policy(load_settings(project)).default_mode == "plan"
    write(project / ".claude" / "settings.json", {"permissions": {"defaultMode": "acceptEdits"}})
    assert load_policy(load_settings(project)).default_mode == "acceptEdits"
    write(project / ".codingcode" / "settings.json", {"permissions": {"defaultMode": "default"}})
    assert load_policy(load_settings(project)).default_mode == "default"
    write(
        project / ".claude" / "settings.local.json",
        {"permissions": {"defaultMode": "bypassPermissions"}},
    )
    assert load_policy(load_settings(project)).default_mode == "bypass"
    write(project / ".codingcode" / "settings.local.json", {"permissions": {"defaultMode": "plan"}})
    assert load_policy(load_settings(project)).default_mode == "plan"


def test_rules_from_every_file_add_up_with_their_scope(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODINGCODE_TRUST_ALL", "1")
    write(claude_config_dir() / "settings.json", {"permissions": {"allow": ["Bash(ls)"]}})
    write(project / ".claude" / "settings.json", {"permissions": {"deny": ["Read(./.env)"]}})
    write(project / ".claude" / "settings.local.json", {"permissions": {"ask": ["WebSearch"]}})
    policy = load_policy(load_settings(project))
    got = {(r.shown, r.text, r.action, r.scope) for r in policy.rules}
    assert ("Bash(ls)", "execute_command(ls)", "allow", Scope.USER) in got
    assert ("Read(./.env)", "read_file(.env)", "deny", Scope.PROJECT) in got
    assert ("Read(./.env)", "search_code(.env)", "deny", Scope.PROJECT) in got
    assert ("WebSearch", "web_search", "ask", Scope.LOCAL) in got


def test_an_untrusted_claude_file_restricts_but_grants_nothing(project: Path) -> None:
    write(
        project / ".claude" / "settings.json",
        {
            "permissions": {
                "allow": ["Bash"],
                "deny": ["Bash(curl:*)"],
                "defaultMode": "bypassPermissions",
            }
        },
    )
    settings = load_settings(project)
    assert [f.trusted for f in settings.files] == [False]
    kept = load_policy(settings).without_untrusted_grants()
    assert [r.shown for r in kept.rules] == ["Bash(curl:*)"]
    assert kept.default_mode is None
    # The trust question lists the file; trusting it makes its grants apply.
    assert project / ".claude" / "settings.json" in grant_files(project)
    TrustStore().trust(project)
    settings = load_settings(project)
    assert [f.trusted for f in settings.files] == [True]
    assert load_policy(settings).without_untrusted_grants().default_mode == "bypass"


def test_claude_directory_is_a_control_file(project: Path) -> None:
    assert is_control_file(".claude/settings.json", project)
    assert is_control_file(str(project / ".claude" / "agents" / "x.md"), project)
    assert not is_control_file("claude/settings.json", project)


def test_a_broken_claude_file_is_one_note_and_the_rest_loads(project: Path) -> None:
    broken = write(project / ".claude" / "settings.json", '{\n  "permissions": {"allow": [}\n}')
    write(project / ".codingcode" / "settings.json", {"permissions": {"deny": ["read_file(x)"]}})
    settings = load_settings(project)
    assert [f.path.name for f in settings.files] == ["settings.json"]
    assert settings.files[0].dialect == "codingcode"
    assert len(settings.notes) == 1
    assert str(broken) in settings.notes[0] and "line 2, column 29" in settings.notes[0]


def test_unknown_keys_get_the_closest_valid_key(project: Path) -> None:
    write(project / ".claude" / "settings.json", {"permisions": {}, "env": {"A": "1"}})
    write(project / ".codingcode" / "settings.json", {"hoks": {}, "sandbox": {}})
    notes = load_settings(project).notes
    assert len(notes) == 2
    assert "'permisions'" in notes[0] and "did you mean 'permissions'" in notes[0]
    assert "'hoks'" in notes[1] and "did you mean 'hooks'" in notes[1]


def test_many_unknown_keys_of_one_file_are_one_line(project: Path) -> None:
    write(
        project / ".claude" / "settings.json",
        {
            "project": "x",
            "version": "1",
            "permisions": {},
            "hooks": {},
            # Claude Code's own keys, recognised (not reported)
            "mcpServers": {},
            "allowedHttpHookUrls": [],
            "httpHookAllowedEnvVars": [],
        },
    )
    notes = load_settings(project).notes
    assert len(notes) == 1, notes
    assert "unknown settings keys 'project', 'version', 'permisions'" in notes[0]
    assert "(did you mean 'permissions'?)" in notes[0]


def test_a_bad_rule_in_a_claude_file_is_reported_once_not_fatal(project: Path) -> None:
    write(
        project / ".claude" / "settings.json",
        {"permissions": {"deny": ["Bash(rm:*)", "Bogus(x)", "Bash(oops"]}},
    )
    settings = load_settings(project)
    policy = load_policy(settings)
    load_policy(settings)  # a second reader adds no second note
    assert [r.shown for r in policy.rules] == ["Bash(rm:*)"]
    assert len(settings.notes) == 2
    assert "permissions.deny[1]" in settings.notes[0] and "'Bogus'" in settings.notes[0]
    assert "permissions.deny[2]" in settings.notes[1]


def test_rules_for_claude_tools_we_do_not_have_are_one_note(project: Path) -> None:
    """``PowerShell(...)``, ``Skill(...)``: Claude Code's syntax for tools codingcode does not
    have; understood (never "not a tool"), standing for nothing, one note for the file. In
    our own file (and ``rules add``) such a rule is refused with that reason."""
    from codingcode.approval.rules import RuleSyntaxError
    from codingcode.approval.rules.syntax import rule_texts

    write(
        project / ".claude" / "settings.json",
        {
            "permissions": {
                "allow": ["PowerShell(npm install)", "PowerShell(node a.mjs)", "Skill(pdf)"],
                "deny": ["Bash(rm:*)"],
            }
        },
    )
    settings = load_settings(project)
    policy = load_policy(settings)
    assert [r.shown for r in policy.rules] == ["Bash(rm:*)"]
    assert len(settings.notes) == 1, settings.notes
    assert "3 permission rules for Claude Code tools codingcode does not have" in settings.notes[0]
    assert "(PowerShell, Skill) are not used here" in settings.notes[0]
    with pytest.raises(RuleSyntaxError, match="Claude Code's PowerShell tool has no equivalent"):
        rule_texts("PowerShell(npm install)")


@pytest.mark.e2e
def test_config_command_shows_each_file_and_what_it_contributed(project: Path) -> None:
    write(
        project / ".claude" / "settings.json",
        {
            "permissions": {"allow": ["Bash(npm test:*)"], "additionalDirectories": ["../x"]},
            "hooks": {"PreToolUse": []},
            "statusLine": {"type": "command", "command": "x"},
            "permisions": {},
        },
    )
    write(project / ".codingcode" / "settings.local.json", {"permissions": {"deny": ["Read"]}})
    r = run_cli(["config"], cwd=project)
    assert r.code == 0, r.stderr
    out = r.stdout
    assert f"{project}/.claude/settings.json (Claude Code, NOT trusted" in out
    assert "uses: permissions (1 allow), hooks (PreToolUse)" in out
    assert "not used by codingcode: permissions.additionalDirectories, statusLine" in out
    assert f"{project}/.codingcode/settings.local.json (codingcode, NOT trusted" in out
    assert "uses: permissions (1 deny)" in out
    assert f"{project}/.claude/settings.local.json (Claude Code): not present" in out
    assert "did you mean 'permissions'" in out
