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


def _ghost_config(env: dict[str, str], **extra: object) -> Path:
    config = Path(env["CODINGCODE_CONFIG_DIR"])
    config.mkdir(parents=True)
    servers = {"ghost": {"command": "/nonexistent/mcp-server"}, **extra}
    (config / "settings.json").write_text(json.dumps({"mcpServers": servers}))
    return config


def test_a_sub_agent_with_a_tool_list_is_told_why_too(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    env = env_for(fake, "openai", tmp_path)
    config = _ghost_config(env)
    (config / "agents").mkdir()
    (config / "agents" / "searcher.md").write_text(
        "---\nname: searcher\ndescription: Searches.\ntools: [read_file, 'ghost:*']\n---\n"
        "Search with the ghost server.\n"
    )
    fake.script = [
        Step(tool_calls=[("dispatch_agent", {"agent": "searcher", "prompt": "find x"})]),
        Step(tool_calls=[("ghost:search", {"q": "x"})]),
        Step(text="the server is down"),
        Step(text="done"),
    ]
    # --disallowed-tools gives the run a service of fewer tools as well.
    args = ["run", "search", "--mode", "bypass", "--disallowed-tools", "write_file"]
    result = run(args, project, env)
    assert result.returncode == 0, result.stderr
    ((ghost, _),) = tool_results(fake.bodies()[2])  # the sub-agent's call
    assert ghost.startswith("ghost:search cannot be called: MCP server 'ghost' failed ("), ghost


RICH = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "rich_server.py"


def test_run_takes_a_servers_prompt_as_a_slash_command(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    import sys

    env = env_for(fake, "openai", tmp_path)
    _ghost_config(env, rich={"command": sys.executable, "args": [str(RICH)]})
    fake.script = [Step(text="Reviewed.")]
    # With --disallowed-tools too: the prompt's servers are found through the smaller service.
    args = ["run", "/rich:review 'the parser' strict=yes", "--disallowed-tools", "write_file"]
    result = run(args, project, env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Reviewed."
    sent = [m for m in fake.bodies()[0]["messages"] if m["role"] == "user"]
    assert sent[-1]["content"] == "Please review the parser (strict: yes)."

    unknown = run(["run", "/rich:nope"], project, env)
    assert unknown.returncode == 2
    assert (
        "error: /rich:nope: MCP server 'rich' has no prompt 'nope': /rich:review, /rich:hello."
        in unknown.stderr
    ), unknown.stderr
    down = run(["run", "/ghost:review x"], project, env)
    assert down.returncode == 2
    assert "error: /ghost:review: MCP server 'ghost' offers no prompts (it is failed)." in (
        down.stderr
    ), down.stderr
    nobody = run(["run", "/nosuch:thing"], project, env)
    assert nobody.returncode == 2
    assert "No MCP server named 'nosuch' in this session." in nobody.stderr, nobody.stderr
    assert len(fake.bodies()) == 1  # nothing else was sent to the model
