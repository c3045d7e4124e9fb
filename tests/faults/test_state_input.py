"""Hostile input to the command: JSON nested 5,000 deep (arguments, `check`, `check --batch`,
settings files, `.mcp.json`), a NUL byte in a sandbox path. One clear line, exit 2, never a
traceback, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CliResult, run_cli

pytestmark = pytest.mark.e2e

DEEP = '{"path": "x", "a": ' + "[" * 5000 + "]" * 5000 + "}"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
    }


def cli(args: list[str], project: Path, env: dict[str, str], stdin: str | None = None) -> CliResult:
    return run_cli(args, cwd=project, env=env, input=stdin)


def one_line(r: CliResult, code: int, *words: str) -> None:
    assert r.code == code, (r.code, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: ")
    for word in words:
        assert word in lines[0], lines[0]


def test_deep_arguments(project: Path, env: dict[str, str]) -> None:
    one_line(cli(["tool", "read_file", DEEP], project, env), 2, "ARGS_JSON", "nested too deeply")
    one_line(cli(["tool", "read_file", "-"], project, env, DEEP), 2, "nested too deeply")
    one_line(cli(["check", "read_file", DEEP], project, env), 2, "nested too deeply")
    assert not (Path(env["CODINGCODE_STATE_DIR"]) / "audit.db").exists()


def test_deep_but_readable_arguments(project: Path, env: dict[str, str]) -> None:
    """Nesting Python can read (850) goes to validation or to the rules as usual."""
    args = '{"path": "x", "a": ' + "[" * 850 + "]" * 850 + "}"
    one_line(cli(["tool", "read_file", args], project, env), 2, "unknown field `a`")
    r = cli(["check", "srv:tool", args], project, env)
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["decision"] == "ask"


def test_deep_batch_line(project: Path, env: dict[str, str]) -> None:
    lines = [
        json.dumps({"tool": "read_file", "args": {"path": "a"}}),
        '{"tool": "read_file", "args": ' + "[" * 5000 + "]" * 5000 + "}",
        json.dumps({"tool": "execute_command", "args": {"command": "sudo id"}}),
    ]
    r = cli(["check", "--batch"], project, env, "\n".join(lines) + "\n")
    assert r.code == 0 and "Traceback" not in r.stderr, r.stderr
    out = [json.loads(line) for line in r.stdout.splitlines()]
    assert [o["decision"] for o in out] == ["allow", "deny", "deny"]
    assert out[1]["layer"] == "input" and "nested too deeply" in out[1]["reason"]
    assert out[2]["rule"] == "R2"


@pytest.mark.parametrize("where", ["project", "local", "user"])
def test_deep_settings_file(project: Path, env: dict[str, str], where: str) -> None:
    path = {
        "project": project / ".codingcode" / "settings.json",
        "local": project / ".codingcode" / "settings.local.json",
        "user": Path(env["CODINGCODE_CONFIG_DIR"]) / "settings.json",
    }[where]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DEEP)
    one_line(cli(["tool", "read_file", '{"path": "x"}'], project, env), 2, str(path), "deeply")
    one_line(cli(["check", "read_file", '{"path": "x"}'], project, env), 2, "nested too deeply")
    one_line(cli(["rules", "list"], project, env), 2, "nested too deeply")
    r = cli(["trust", "--show"], project, env)
    assert r.code == 0 and "Traceback" not in r.stderr, r.stderr
    if where != "user":
        assert "nested too deeply to read" in r.stdout
    assert path.read_text() == DEEP  # nothing rewrote it


def test_deep_mcp_json(project: Path, env: dict[str, str]) -> None:
    (project / ".mcp.json").write_text(DEEP)
    r = cli(["trust", "--show"], project, env)
    assert r.code == 0 and "nested too deeply to read" in r.stdout, r.stderr
    one_line(cli(["mcp", "list"], project, env), 2, "nested too deeply")
    one_line(cli(["tool", "srv:tool", "{}"], project, env), 2, "nested too deeply")


def test_deep_trust_records(project: Path, env: dict[str, str]) -> None:
    state = Path(env["CODINGCODE_STATE_DIR"])
    state.mkdir()
    (state / "trust.json").write_text(DEEP)
    # A damaged record trusts nothing; trusting again writes a good one.
    r = cli(["trust"], project, env)
    assert r.code == 0, r.stderr
    assert json.loads((state / "trust.json").read_text())["projects"]


def test_nul_in_sandbox_paths(project: Path, env: dict[str, str]) -> None:
    settings = project / ".codingcode" / "settings.json"
    settings.parent.mkdir()
    for key in ("writable_roots", "masked_paths", "keep_env"):
        settings.write_text(json.dumps({"sandbox": {key: ["/tmp/a\0b"]}}))
        assert cli(["trust"], project, env).code == 0
        r = cli(
            ["tool", "execute_command", '{"command": "true"}', "--mode", "bypass"], project, env
        )
        one_line(r, 2, str(settings), f"sandbox.{key}", "NUL")
        one_line(cli(["sandbox", "status"], project, env), 2, "NUL")
