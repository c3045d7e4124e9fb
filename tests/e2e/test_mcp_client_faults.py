"""The real `codingcode` command against MCP servers that fail: one line each, exit 1."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
RAW = Path(__file__).parent.parent / "mcp" / "servers" / "raw_server.py"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    values = {
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
    }
    return {**{k: v for k, v in os.environ.items() if k != "CODINGCODE_TRUST_ALL"}, **values}


def _user_servers(env: dict[str, str], servers: dict[str, object]) -> None:
    config = Path(env["CODINGCODE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"mcpServers": servers}))


def test_a_tool_of_a_server_that_never_started(project: Path, env: dict[str, str]) -> None:
    _user_servers(env, {"ghost": {"command": "/nonexistent/mcp-server"}})
    result = run_cli(["tool", "ghost:search", "{}"], cwd=project, env=env)
    assert result.code == 1, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "ghost:search cannot be called: MCP server 'ghost' failed" in lines[0]
    assert "command not found" in lines[0]
    assert "Unknown tool" not in result.stderr


def test_garbage_on_a_servers_stdout_is_one_line(project: Path, env: dict[str, str]) -> None:
    _user_servers(env, {"raw": {"command": sys.executable, "args": [str(RAW), "garbage"]}})
    result = run_cli(["tool", "raw:odd", "{}", "--mode", "bypass"], cwd=project, env=env)
    assert result.code == 0, result
    assert result.stdout.strip() == "a\ufffdb"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "MCP server 'raw' wrote a line that is not JSON-RPC" in lines[0]
    assert "Traceback" not in result.stderr


def test_mcp_list_fails_when_a_server_failed(project: Path, env: dict[str, str]) -> None:
    crash = "import sys; sys.stderr.write('bad config\\nsecond line\\n'); sys.exit(2)"
    _user_servers(
        env,
        {
            "crash": {"command": sys.executable, "args": ["-c", crash]},
            "raw": {"command": sys.executable, "args": [str(RAW), "big", "10"]},
        },
    )
    result = run_cli(["mcp", "list"], cwd=project, env=env)
    assert result.code == 1, result
    heads = [ln for ln in result.stdout.splitlines() if not ln.startswith(" ")]
    assert len(heads) == 2, result.stdout  # one line per server
    crash_line = next(ln for ln in heads if ln.startswith("crash "))
    assert "failed: " in crash_line and "bad config" in crash_line and "second line" in crash_line
    assert next(ln for ln in heads if ln.startswith("raw ")).startswith(
        "raw (stdio, user scope, settings.json) ready"
    )
    as_json = run_cli(["mcp", "list", "--json"], cwd=project, env=env)
    assert as_json.code == 1
    assert {r["name"]: r["state"] for r in json.loads(as_json.stdout)} == {
        "crash": "failed",
        "raw": "ready",
    }
    # Without the failing one, it succeeds.
    _user_servers(env, {"raw": {"command": sys.executable, "args": [str(RAW), "big", "10"]}})
    assert run_cli(["mcp", "list"], cwd=project, env=env).code == 0
