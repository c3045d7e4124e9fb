"""`codingcode check` (the JSON contract), `check --batch`, `rules`, `audit`, and `tool`
going through the pipeline — each as the real command in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CliResult, run_cli

pytestmark = pytest.mark.e2e


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
    }


def cli(args: list[str], project: Path, env: dict[str, str], **kw: str) -> CliResult:
    return run_cli(args, cwd=project, env=env, **kw)  # type: ignore[arg-type]


def check(
    project: Path, env: dict[str, str], tool: str, args: dict[str, object], *extra: str
) -> dict[str, object]:
    r = cli(["check", tool, json.dumps(args), *extra], project, env)
    assert r.code == 0, r.stderr
    result: dict[str, object] = json.loads(r.stdout)
    assert set(result) == {"decision", "layer", "reason", "rule", "capabilities"}
    return result


def test_check_contract(project: Path, env: dict[str, str]) -> None:
    assert check(project, env, "execute_command", {"command": "s\\udo id"})["rule"] == "R2"
    r = check(project, env, "execute_command", {"command": "git commit -m 'drop sudo'"})
    assert (r["decision"], r["layer"], r["rule"]) == ("ask", "UserConfirmation", None)
    r = check(project, env, "read_file", {"path": "README.md"})
    assert (r["decision"], r["layer"]) == ("allow", "ReadonlyWhitelist")
    r = check(
        project, env, "write_file", {"path": "a.txt", "content": "x"}, "--mode", "acceptEdits"
    )
    assert (r["decision"], r["layer"]) == ("allow", "PermissionMode")
    r = check(project, env, "execute_command", {"command": "cat .env"}, "--mode", "bypass")
    assert (r["decision"], r["rule"]) == ("ask", "R9")
    # a dry run: nothing ran, nothing was written
    assert not (project / "a.txt").exists()
    assert not (Path(env["CODINGCODE_STATE_DIR"]) / "audit.db").exists()


def test_mcp_tool_rules_are_checked_without_its_server(project: Path, env: dict[str, str]) -> None:
    assert cli(["rules", "add", "deny", "github:*"], project, env).code == 0
    r = check(project, env, "github:create_issue", {"title": "x"})
    assert (r["decision"], r["rule"]) == ("deny", "github:*")
    r = check(project, env, "files:read", {"path": "/etc/passwd"})
    assert r["rule"] == "R7"


def test_relative_paths_resolve_against_project(
    project: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    (project / "link").symlink_to("/etc/shadow")
    r = cli(["check", "read_file", '{"path": "link"}', "--project", str(project)], tmp_path, env)
    assert json.loads(r.stdout)["rule"] == "R6"


def test_batch_in_order(project: Path, env: dict[str, str]) -> None:
    lines = []
    expected = []
    for i in range(300):
        if i % 3 == 0:
            lines.append({"tool": "execute_command", "args": {"command": f"sudo echo {i}"}})
            expected.append("deny")
        elif i % 3 == 1:
            lines.append({"tool": "read_file", "args": {"path": f"f{i}"}})
            expected.append("allow")
        else:
            lines.append(
                {"tool": "execute_command", "args": {"command": f"touch {i}"}, "mode": "plan"}
            )
            expected.append("deny")
    stdin = "\n".join(json.dumps(x) for x in lines) + "\nnot json\n"
    r = cli(["check", "--batch"], project, env, input=stdin)
    assert r.code == 0, r.stderr
    out = [json.loads(line) for line in r.stdout.splitlines()]
    assert [o["decision"] for o in out[:-1]] == expected
    assert out[2]["layer"] == "PermissionMode"
    assert out[-1]["layer"] == "input" and "line 301" in out[-1]["reason"]


def test_rules_add_list_remove(project: Path, env: dict[str, str]) -> None:
    r = cli(["rules", "add", "allow", "execute_command(printf *)"], project, env)
    assert r.code == 0, r.stderr
    assert check(project, env, "execute_command", {"command": "printf hi"})["decision"] == "allow"
    listed = json.loads(cli(["rules", "list", "--json"], project, env).stdout)
    assert [x["id"] for x in listed[:9]] == [f"R{i}" for i in range(1, 10)]
    assert listed[9]["rule"] == "execute_command(printf *)" and listed[9]["scope"] == "local"
    r = cli(["rules", "remove", "R2"], project, env)
    assert r.code == 2 and "cannot be removed" in r.stderr
    r = cli(["rules", "remove", "sudo"], project, env)
    assert r.code == 2 and "preset rule" in r.stderr
    assert cli(["rules", "remove", "execute_command(printf *)"], project, env).code == 0
    assert check(project, env, "execute_command", {"command": "printf hi"})["decision"] == "ask"
    r = cli(["rules", "add", "allow", "execute_command(echo"], project, env)
    assert r.code == 2 and "invalid rule" in r.stderr


def test_tool_goes_through_the_pipeline_and_is_audited(project: Path, env: dict[str, str]) -> None:
    r = cli(["tool", "execute_command", '{"command": "touch made"}'], project, env)
    assert r.code == 1
    assert "codingcode rules add allow 'execute_command(touch made)'" in r.stderr
    assert not (project / "made").exists()
    r = cli(
        ["tool", "execute_command", '{"command": "sudo touch made"}', "--mode", "bypass"],
        project,
        env,
    )
    assert r.code == 1 and "R2" in r.stderr
    r = cli(
        ["tool", "execute_command", '{"command": "touch made"}', "--mode", "bypass"], project, env
    )
    assert r.code == 0, r.stderr
    assert (project / "made").exists()
    r = cli(["audit", "--json", "--decision", "deny"], project, env)
    denied = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(d["layer"], d["rule"]) for d in denied] == [
        ("UserConfirmation", None),
        ("RuleEngine", "R2"),
    ]
    r = cli(["audit", "--tool", "execute_command", "--limit", "2"], project, env)
    assert len(r.stdout.splitlines()) == 2


def test_audit_calls_show_each_outcome(project: Path, env: dict[str, str]) -> None:
    assert (
        cli(["tool", "execute_command", '{"command": "exit 4"}', "-m", "bypass"], project, env).code
        == 0
    )
    assert cli(["tool", "read_file", '{"path": "missing"}'], project, env).code == 1
    assert (
        cli(
            ["tool", "execute_command", '{"command": "sudo id"}', "-m", "bypass"], project, env
        ).code
        == 1
    )
    r = cli(["audit", "--calls", "--json"], project, env)
    assert r.code == 0, r.stderr
    calls = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(c["tool"], c["outcome"], c["exit_code"], c["error_kind"]) for c in calls] == [
        ("execute_command", "ran", 4, None),
        ("read_file", "failed", None, "not_found"),
        ("execute_command", "denied", None, "denied"),
    ]
    r = cli(["audit", "--calls", "--outcome", "denied"], project, env)
    assert r.code == 0 and len(r.stdout.splitlines()) == 1
    assert "denied" in r.stdout and "[R2]" in r.stdout
    r = cli(["audit", "--json"], project, env)
    layers = [json.loads(line) for line in r.stdout.splitlines()]
    assert {rec["call_id"] for rec in layers} == {c["call_id"] for c in calls}
    r = cli(["audit", "--outcome", "ran"], project, env)
    assert r.code == 2 and "--outcome goes with --calls" in r.stderr


def test_invalid_settings_are_a_clear_error(project: Path, env: dict[str, str]) -> None:
    settings = project / ".codingcode" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"deny": ["read_file(x", "ok"]}}))
    r = cli(["check", "read_file", '{"path": "a"}'], project, env)
    assert r.code == 2
    assert str(settings) in r.stderr and "permissions.deny[0]" in r.stderr
    assert "Traceback" not in r.stderr


def test_untrusted_project_grants_are_ignored_and_reported(
    project: Path, env: dict[str, str]
) -> None:
    marker = project.parent / "hook-ran"
    settings = project / ".codingcode" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {
                "permissions": {"allow": ["execute_command(*)"], "deny": ["read_file(secret.txt)"]},
                "hooks": {"PreToolUse": [{"hooks": [{"command": f"touch {marker}"}]}]},
            }
        )
    )
    r = cli(["check", "execute_command", '{"command": "make"}'], project, env)
    result = json.loads(r.stdout)
    assert result["decision"] == "ask"
    assert result["if_trusted"]["decision"] == "allow"
    assert "codingcode trust" in r.stderr
    assert check(project, env, "read_file", {"path": "secret.txt"})["decision"] == "deny"
    assert not marker.exists()


def test_user_command_hook_decides_in_check(project: Path, env: dict[str, str]) -> None:
    import sys

    script = Path(env["CODINGCODE_CONFIG_DIR"]).parent / "hook.py"
    script.write_text(
        "import json, sys\n"
        "call = json.load(sys.stdin)\n"
        "if 'rm' in call['tool_input'].get('command', ''):\n"
        "    sys.stderr.write('no rm here'); sys.exit(2)\n"
        "print(json.dumps({'decision': 'allow', 'reason': 'hook ok'}))\n"
    )
    user = Path(env["CODINGCODE_CONFIG_DIR"]) / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "execute_command",
                            "hooks": [{"command": f"{sys.executable} {script}"}],
                        }
                    ]
                }
            }
        )
    )
    r = check(project, env, "execute_command", {"command": "rm -f x"})
    assert (r["decision"], r["layer"], r["reason"]) == ("deny", "HookPreToolUse", "no rm here")
    r = check(project, env, "execute_command", {"command": "make"})
    assert (r["decision"], r["layer"]) == ("allow", "HookPreToolUse")
    # a hook's allow never beats a preset deny (the rules come first)
    assert check(project, env, "execute_command", {"command": "sudo ls"})["rule"] == "R2"
