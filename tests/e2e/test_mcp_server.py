"""`codingcode mcp` driven by clients no one here wrote: the official SDK client and the
MCP Inspector's CLI, over stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import mcp_types as types
import pytest

from mcp import Client, StdioServerParameters
from tests.conftest import run_cli
from tests.e2e.mcp_peers import INSPECTOR, TIME_SERVER, need

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]
CODINGCODE = str(Path(sys.executable).parent / "codingcode")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    values = {
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
    }
    return {**{k: v for k, v in os.environ.items() if k != "CODINGCODE_TRUST_ALL"}, **values}


@pytest.fixture
def proj(project: Path) -> Path:
    (project / "notes.txt").write_text("first line\nsecond line\n")
    return project


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_sdk_client_over_stdio(proj: Path, env: dict[str, str]) -> None:
    params = StdioServerParameters(
        command=CODINGCODE, args=["mcp", "--project", str(proj)], env=env
    )
    async with Client(params, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"read_file", "write_file", "execute_command", "search_code"} <= set(tools)
        assert tools["read_file"].annotations and tools["read_file"].annotations.read_only_hint
        read = await client.call_tool("read_file", {"path": "notes.txt"})
        assert not read.is_error and "second line" in _text(read)
        # Approval: an ask with no elicitation is a deny that says how to allow it.
        write = await client.call_tool("write_file", {"path": "x.txt", "content": "x"})
        assert write.is_error and "To allow it" in _text(write)
        assert not (proj / "x.txt").exists()
        # A preset rule stands: sudo is denied outright.
        sudo = await client.call_tool("execute_command", {"command": "sudo id"})
        assert sudo.is_error and _text(sudo).startswith("denied:")


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # handshake era, and 2026-07-28
async def test_sdk_client_elicitation_over_stdio(
    proj: Path, env: dict[str, str], mode: str
) -> None:
    asked: list[str] = []

    async def answer(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "allow"})

    params = StdioServerParameters(
        command=CODINGCODE, args=["mcp", "--project", str(proj)], env=env
    )
    async with Client(params, mode=mode, elicitation_callback=answer) as client:
        write = await client.call_tool("write_file", {"path": "x.txt", "content": "made"})
    assert not write.is_error, _text(write)
    assert (proj / "x.txt").read_text() == "made"
    assert len(asked) == 1 and "write_file" in asked[0]


def _inspector(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    need(INSPECTOR, "@modelcontextprotocol/inspector")
    return subprocess.run(
        [str(INSPECTOR), "--cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )


def test_inspector_cli_over_stdio(proj: Path, env: dict[str, str]) -> None:
    listed = _inspector([CODINGCODE, "mcp", "--method", "tools/list"], proj, env)
    assert listed.returncode == 0, listed.stderr
    names = {t["name"] for t in json.loads(listed.stdout)["tools"]}
    assert {"read_file", "execute_command", "todo_write"} <= names
    called = _inspector(
        [
            CODINGCODE,
            "mcp",
            "--method",
            "tools/call",
            "--tool-name",
            "read_file",
            "--tool-arg",
            "path=notes.txt",
        ],
        proj,
        env,
    )
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert result["isError"] is False and "first line" in result["content"][0]["text"]


@asynccontextmanager
async def _http_server(proj: Path, env: dict[str, str], *extra: str) -> AsyncIterator[str]:
    cmd = [CODINGCODE, "mcp", "--project", str(proj), *extra]
    async with await anyio.open_process(cmd, env=env, stderr=subprocess.PIPE) as proc:
        try:
            assert proc.stderr is not None
            seen = b""
            with anyio.fail_after(30):
                while b"/mcp" not in seen:
                    seen += await proc.stderr.receive()
            line = next(ln for ln in seen.decode().splitlines() if "MCP server on" in ln)
            yield line.rsplit(" ", 1)[1]
        finally:
            proc.terminate()


async def test_http_loopback_sdk_and_inspector(proj: Path, env: dict[str, str]) -> None:
    async with _http_server(proj, env, "--http", "127.0.0.1:0") as url:
        async with Client(url, mode="legacy") as client:
            result = await client.call_tool("read_file", {"path": "notes.txt"})
            assert "first line" in _text(result)
        listed = await anyio.to_thread.run_sync(
            lambda: _inspector([url, "--transport", "http", "--method", "tools/list"], proj, env)
        )
        assert listed.returncode == 0, listed.stderr
        assert "read_file" in {t["name"] for t in json.loads(listed.stdout)["tools"]}


async def test_http_off_loopback_needs_the_bearer_token(proj: Path, env: dict[str, str]) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with _http_server(proj, env, "--http", "0.0.0.0:0", "--token", "t0ken") as url:
        url = url.replace("0.0.0.0", "127.0.0.1")
        async with httpx.AsyncClient() as http:
            refused = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        headers = {"Authorization": "Bearer t0ken"}
        authed = create_mcp_http_client(headers=headers)
        transport = streamable_http_client(url, http_client=authed)
        async with authed, Client(transport, mode="legacy") as c:
            result = await c.call_tool("read_file", {"path": "notes.txt"})
            assert "first line" in _text(result)


def test_mcp_list_shows_servers_state_and_tools(proj: Path, env: dict[str, str]) -> None:
    need(TIME_SERVER, "mcp-server-time")
    config = Path(env["CODINGCODE_CONFIG_DIR"])
    config.mkdir(parents=True)
    (config / "settings.json").write_text(
        json.dumps({"mcpServers": {"time": {"command": str(TIME_SERVER)}}})
    )
    (proj / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "ghost": {"command": "/nonexistent/server"},
                    "marker": {"command": "sh", "args": ["-c", f"touch {proj}/ran"]},
                }
            }
        )
    )
    result = run_cli(["mcp", "list", "--project", str(proj), "--json"], cwd=proj, env=env)
    assert result.code == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["time"]["state"] == "ready" and rows["time"]["scope"] == "user"
    assert {t["name"] for t in rows["time"]["tools"]} == {
        "time:get_current_time",
        "time:convert_time",
    }
    # The project's servers do not start until the project is trusted.
    assert rows["ghost"]["state"] == rows["marker"]["state"] == "skipped"
    assert "codingcode trust" in rows["marker"]["error"]
    assert not (proj / "ran").exists()
    trusted = run_cli(
        ["mcp", "list", "--project", str(proj)], cwd=proj, env={**env, "CODINGCODE_TRUST_ALL": "1"}
    )
    assert "ghost (stdio, project scope, .mcp.json) failed: could not start" in trusted.stdout
    assert "time:get_current_time" in trusted.stdout


def test_mcp_config_errors_are_clear(proj: Path, env: dict[str, str]) -> None:
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"bad": {"args": ["x"]}}}))
    result = run_cli(["mcp", "list", "--project", str(proj)], cwd=proj, env=env)
    # One unusable server is listed with why and never started; the rest would load.
    assert result.code == 0, result.stderr
    assert "bad (stdio, project scope, .mcp.json) skipped: not started" in result.stdout
    assert "MCP server 'bad': field 'command': Field required" in result.stdout
    (proj / ".mcp.json").write_text('{"mcpServers": {')
    broken = run_cli(["mcp", "list", "--project", str(proj)], cwd=proj, env=env)
    assert ".mcp.json" in broken.stdout + broken.stderr
    assert "Traceback" not in broken.stdout + broken.stderr


async def test_custom_commands_are_served_as_prompts(proj: Path, env: dict[str, str]) -> None:
    commands = Path(env["CODINGCODE_CONFIG_DIR"]) / "commands"
    commands.mkdir(parents=True)
    (commands / "greet.md").write_text(
        "---\ndescription: Greet someone by name\nargument-hint: NAME\n---\n"
        "Say hello to $ARGUMENTS politely.\n"
    )
    params = StdioServerParameters(
        command=CODINGCODE, args=["mcp", "--project", str(proj)], env=env
    )
    async with Client(params, mode="legacy") as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        assert "greet" in listed and listed["greet"].description == "Greet someone by name"
        got = await client.get_prompt("greet", {"arguments": "Ada"})
        text = got.messages[0].content
        assert isinstance(text, types.TextContent) and "Say hello to Ada politely." in text.text
