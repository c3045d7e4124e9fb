"""Our MCP client against servers no one here wrote: server-everything (npm) and
mcp-server-time (PyPI), over stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codingcode.config import Scope
from codingcode.mcp.client import McpManager, ServerState
from codingcode.mcp.config import parse_server
from codingcode.tools import ToolExecCtx, ToolService
from codingcode.tools.resolver import create_session_tool_resolver
from tests.e2e.mcp_peers import EVERYTHING, NODE, TIME_SERVER, need
from tests.mcp.conftest import eventually, serving

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(90)]


def _cfg(name: str, raw: dict, tmp: Path):  # type: ignore[no-untyped-def]
    return parse_server(name, raw, scope=Scope.USER, source=tmp / "settings.json", env={})


def _everything_stdio(tmp: Path):  # type: ignore[no-untyped-def]
    need(EVERYTHING, "@modelcontextprotocol/server-everything")
    need(Path(NODE) if NODE else None, "node")
    return _cfg("everything", {"command": NODE, "args": [str(EVERYTHING), "stdio"]}, tmp)


async def test_everything_over_stdio_import_list_call_list_changed(tmp_path: Path) -> None:
    service = ToolService.default()
    async with McpManager([_everything_stdio(tmp_path)], project=tmp_path, service=service) as mcp:
        conn = mcp.servers["everything"]
        assert conn.state is ServerState.READY, conn.error
        names = {n for n in service.names() if n.startswith("everything:")}
        assert {"everything:echo", "everything:get-sum", "everything:get-tiny-image"} <= names
        # More tools than the threshold: deferred, so only tool_search reaches them.
        assert all(service.get(n).deferred for n in names)
        # It sends notifications/tools/list_changed right after initialization.
        await eventually(lambda: conn.refreshes >= 1)
        assert "The sum of 2 and 40 is 42" in await service.call(
            "everything:get-sum", {"a": 2, "b": 40}
        )
        assert await service.call("everything:echo", {"message": "hi"}) == "Echo: hi"
        image = await service.call("everything:get-tiny-image", {})
        assert "[image: image/png" in image and "iVBOR" not in image
        structured = await service.call(
            "everything:get-structured-content", {"location": "New York"}
        )
        assert set(json.loads(structured)) >= {"temperature", "conditions", "humidity"}

        # Through the session resolver: found by tool_search, then callable.
        resolver = create_session_tool_resolver(service)
        assert not resolver.is_callable("everything:get-sum")
        found = await service.call("tool_search", {"query": "sum of two numbers"}, ToolExecCtx())
        assert "everything:get-sum" in found
        assert resolver.is_callable("everything:get-sum")


async def test_everything_over_streamable_http(tmp_path: Path) -> None:
    need(EVERYTHING, "@modelcontextprotocol/server-everything")
    assert NODE
    async with serving(
        lambda _: [NODE, str(EVERYTHING), "streamableHttp"],
        env=lambda port: {**os.environ, "PORT": str(port)},
        stderr=None,
    ) as (_, port):
        cfg = _cfg("ev", {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}, tmp_path)
        service = ToolService()
        async with McpManager([cfg], project=tmp_path, service=service) as mcp:
            assert mcp.servers["ev"].state is ServerState.READY, mcp.servers["ev"].error
            assert len([n for n in service.names() if n.startswith("ev:")]) >= 10
            out = await service.call("ev:get-sum", {"a": 1, "b": 1})
            assert "The sum of 1 and 1 is 2" in out


async def test_time_server_from_pypi(tmp_path: Path) -> None:
    need(TIME_SERVER, "mcp-server-time")
    cfg = _cfg(
        "time",
        {"command": str(TIME_SERVER), "args": ["--local-timezone", "UTC"], "trusted": True},
        tmp_path,
    )
    service = ToolService()
    async with McpManager([cfg], project=tmp_path, service=service) as mcp:
        conn = mcp.servers["time"]
        assert conn.state is ServerState.READY, conn.error
        # It declares resources too, so the (deferred) resource tools are registered.
        assert sorted(n for n in service.names() if ":" in n) == [
            "time:convert_time",
            "time:get_current_time",
        ]
        tool = service.get("time:get_current_time")
        assert not tool.deferred  # two tools: offered up front
        assert tool.annotations.read_only  # trusted: its readOnlyHint is believed
        out = json.loads(await service.call("time:get_current_time", {"timezone": "Europe/Paris"}))
        assert out["timezone"] == "Europe/Paris" and "datetime" in out
        converted = json.loads(
            await service.call(
                "time:convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            )
        )
        assert converted["target"]["datetime"].startswith(converted["target"]["datetime"][:10])
        assert "21:00" in converted["target"]["datetime"]
        # Its own errors come back as AgentErrors, and the session goes on.
        from codingcode.errors import ToolFailureError

        with pytest.raises(ToolFailureError, match="time:get_current_time failed"):
            await service.call("time:get_current_time", {"timezone": "Not/AZone"})
        assert "datetime" in await service.call("time:get_current_time", {"timezone": "UTC"})


async def test_everything_over_old_sse_transport(tmp_path: Path) -> None:
    need(EVERYTHING, "@modelcontextprotocol/server-everything")
    assert NODE
    async with serving(
        lambda _: [NODE, str(EVERYTHING), "sse"],
        env=lambda port: {**os.environ, "PORT": str(port)},
    ) as (_, port):
        cfg = _cfg("old", {"type": "sse", "url": f"http://127.0.0.1:{port}/sse"}, tmp_path)
        service = ToolService()
        async with McpManager([cfg], project=tmp_path, service=service) as mcp:
            assert mcp.servers["old"].state is ServerState.READY, mcp.servers["old"].error
            assert "The sum of 1 and 2 is 3" in await service.call("old:get-sum", {"a": 1, "b": 2})
