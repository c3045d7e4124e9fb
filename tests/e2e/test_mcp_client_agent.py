"""`codingcode run`: the model calls a tool of an MCP server that is not running and is
told why, one line naming the server, not "Unknown tool"."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step, tool_results
from tests.e2e.test_agent_run import env_for, run

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def test_the_model_is_told_why_a_servers_tool_cannot_be_called(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    env = env_for(fake, "openai", tmp_path)
    config = Path(env["CODINGCODE_CONFIG_DIR"])
    config.mkdir(parents=True)
    servers = {
        "ghost": {"command": "/nonexistent/mcp-server"},
        # A port nobody listens on: the server "failed", with the connection's reason.
        "down": {"type": "http", "url": "http://127.0.0.1:9/mcp", "startup_timeout_ms": 5000},
    }
    (config / "settings.json").write_text(json.dumps({"mcpServers": servers}))
    fake.script = [
        Step(tool_calls=[("ghost:search", {"q": "x"}), ("down:fetch", {})]),
        Step(text="ok"),
    ]
    result = run(["run", "search", "--mode", "bypass"], project, env)
    assert result.returncode == 0, result.stderr
    (ghost, _), (down, _) = tool_results(fake.bodies()[1])  # OpenAI: no is_error flag
    assert ghost.startswith("ghost:search cannot be called: MCP server 'ghost' failed (")
    assert "command not found" in ghost
    assert down.startswith("down:fetch cannot be called: MCP server 'down' failed (")
    assert "Unknown tool" not in ghost + down
    assert "\n" not in ghost and "\n" not in down
