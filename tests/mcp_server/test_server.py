from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from codingcode.errors import InvalidArgumentsError
from codingcode.mcp_server.server import (
    bearer_guard,
    build_tool_server,
    is_loopback,
    mcp_annotations,
    parse_host_port,
    resolve_token,
)
from codingcode.tools import ToolService
from mcp import Client

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def _elicit(answers: list[dict[str, Any] | None], seen: list[types.ElicitRequestParams]) -> Any:
    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params)
        answer = answers.pop(0)
        if answer is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=answer)

    return callback


async def test_list_tools_with_truthful_annotations(project: Path) -> None:
    server = build_tool_server(project)
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(ToolService.default().names())
    read, write, cmd = tools["read_file"], tools["write_file"], tools["execute_command"]
    assert read.annotations and read.annotations.read_only_hint is True
    assert read.annotations.destructive_hint is False
    assert write.annotations and write.annotations.read_only_hint is False
    assert write.annotations.destructive_hint is True
    assert cmd.annotations and cmd.annotations.open_world_hint is True
    assert read.input_schema["properties"]["path"]["type"] == "string"


def test_annotations_of_read_only_tools_never_claim_destruction() -> None:
    for definition in ToolService.default().list():
        hints = mcp_annotations(definition)
        if hints.read_only_hint:
            assert hints.destructive_hint is False, definition.name


async def test_read_only_call_runs(project: Path) -> None:
    (project / "a.txt").write_text("hello\n")
    server = build_tool_server(project)
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        result = await client.call_tool("read_file", {"path": "a.txt"})
    assert not result.is_error and "hello" in _text(result)


async def test_errors_are_is_error_results(project: Path) -> None:
    server = build_tool_server(project)
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        unknown = await client.call_tool("nope", {})
        bad = await client.call_tool("read_file", {"path": "a.txt", "limit": 10_000})
    assert unknown.is_error and _text(unknown).startswith("not_found: Unknown tool 'nope'")
    assert bad.is_error and _text(bad).startswith("invalid_arguments:") and "limit" in _text(bad)


async def test_ask_without_elicitation_is_denied_with_how_to_allow(project: Path) -> None:
    server = build_tool_server(project)
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        result = await client.call_tool("write_file", {"path": "out.txt", "content": "x"})
    assert result.is_error
    assert _text(result).startswith("denied:") and "To allow it" in _text(result)
    assert not (project / "out.txt").exists()


async def test_ask_with_elicitation_allow_deny(project: Path) -> None:
    seen: list[types.ElicitRequestParams] = []
    server = build_tool_server(project)
    callback = _elicit([{"decision": "allow"}, {"decision": "deny"}, None], seen)
    async with Client(server.lowlevel_server(), mode="legacy", elicitation_callback=callback) as c:
        allowed = await c.call_tool("write_file", {"path": "yes.txt", "content": "x"})
        denied = await c.call_tool("write_file", {"path": "no.txt", "content": "x"})
        declined = await c.call_tool("write_file", {"path": "no2.txt", "content": "x"})
    assert not allowed.is_error and (project / "yes.txt").read_text() == "x"
    assert denied.is_error and not (project / "no.txt").exists()
    assert declined.is_error and not (project / "no2.txt").exists()
    assert len(seen) == 3
    assert "write_file" in seen[0].message
    schema = seen[0].requested_schema
    assert schema["properties"]["decision"]["enum"][:2] == ["allow", "deny"]


async def test_always_answer_persists_a_rule(project: Path) -> None:
    seen: list[types.ElicitRequestParams] = []
    server = build_tool_server(project)
    callback = _elicit([{"decision": "always"}], seen)
    async with Client(server.lowlevel_server(), mode="legacy", elicitation_callback=callback) as c:
        first = await c.call_tool("execute_command", {"command": "echo one > one.txt"})
        # The narrowest rule: exactly this command (a grant does not cover other echo lines).
        second = await c.call_tool("execute_command", {"command": "echo one > one.txt"})
    assert not first.is_error and not second.is_error, (_text(first), _text(second))
    assert len(seen) == 1  # the saved rule answered the second call
    saved = json.loads((project / ".codingcode" / "settings.local.json").read_text())
    assert saved["permissions"]["allow"]


def test_host_port_and_token_rules() -> None:
    assert parse_host_port("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert parse_host_port("[::1]:9") == ("::1", 9)
    assert parse_host_port(":9") == ("127.0.0.1", 9)
    with pytest.raises(InvalidArgumentsError, match="HOST:PORT"):
        parse_host_port("8765")
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")
    assert resolve_token("127.0.0.1", None) == (None, False)
    token, generated = resolve_token("0.0.0.0", None)
    assert generated and token and len(token) >= 32
    assert resolve_token("0.0.0.0", "mine") == ("mine", False)


async def test_bearer_guard() -> None:
    calls: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        calls.append(scope["path"])

    guarded = bearer_guard(app, "s3cret")
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await guarded({"type": "http", "path": "/mcp", "headers": []}, None, send)
    await guarded(
        {"type": "http", "path": "/mcp", "headers": [(b"authorization", b"Bearer nope")]},
        None,
        send,
    )
    assert calls == [] and [m.get("status") for m in sent if "status" in m] == [401, 401]
    await guarded(
        {"type": "http", "path": "/mcp", "headers": [(b"authorization", b"Bearer s3cret")]},
        None,
        send,
    )
    assert calls == ["/mcp"]


async def test_client_cancellation_kills_the_command(project: Path) -> None:
    import anyio

    server = build_tool_server(project, mode="bypass")
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        with anyio.move_on_after(1.0) as scope:
            await client.call_tool("execute_command", {"command": "sleep 2 && touch after"})
        assert scope.cancelled_caught
        # The server was told (notifications/cancelled) and killed the process tree: the
        # command never reaches its second step.
        await anyio.sleep(2.5)
        assert not (project / "after").exists()
        again = await client.call_tool("read_file", {"path": "."})
        assert again.is_error  # a directory; but the connection still works


async def test_ask_with_elicitation_on_the_2026_protocol(project: Path) -> None:
    """2026-07-28 has no server-to-client requests: the question rides an InputRequiredResult
    and the SDK client retries the call with the user's answer."""
    seen: list[types.ElicitRequestParams] = []
    server = build_tool_server(project)
    callback = _elicit([{"decision": "allow"}, {"decision": "deny"}], seen)
    async with Client(server.lowlevel_server(), mode="auto", elicitation_callback=callback) as c:
        assert c.protocol_version == "2026-07-28"
        allowed = await c.call_tool("write_file", {"path": "yes.txt", "content": "x"})
        denied = await c.call_tool("write_file", {"path": "no.txt", "content": "x"})
    assert not allowed.is_error, _text(allowed)
    assert (project / "yes.txt").read_text() == "x"
    assert denied.is_error and not (project / "no.txt").exists()
    assert len(seen) == 2 and "write_file" in seen[0].message


async def test_2026_protocol_without_elicitation_is_denied_with_how_to_allow(project: Path) -> None:
    server = build_tool_server(project)
    async with Client(server.lowlevel_server(), mode="auto") as c:
        result = await c.call_tool("write_file", {"path": "out.txt", "content": "x"})
    assert result.is_error and "To allow it" in _text(result)
