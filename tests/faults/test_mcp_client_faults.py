"""A misbehaving stdio MCP server: each fault costs one clear line, never a hang or a
traceback, and the session goes on (tests/mcp/servers/raw_server.py misbehaves on cue)."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import pytest

from codingcode.config import Scope
from codingcode.errors import ToolFailureError
from codingcode.mcp import launched_stdio
from codingcode.mcp.client import McpManager, ServerState
from codingcode.mcp.config import McpServerConfig, parse_server
from codingcode.mcp.results import MAX_RESULT_CHARS, spill_dir
from codingcode.tools import ToolService

RAW = Path(__file__).parent.parent / "mcp" / "servers" / "raw_server.py"
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]


def _raw(tmp: Path, *args: str, timeout_ms: int = 30_000) -> McpServerConfig:
    raw = {"command": sys.executable, "args": [str(RAW), *args], "timeout_ms": timeout_ms}
    return parse_server("raw", raw, scope=Scope.USER, source=tmp / "settings.json", env={})


async def test_garbage_on_stdout_is_one_line_naming_the_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    service = ToolService()
    with caplog.at_level(logging.DEBUG):
        async with McpManager([_raw(tmp_path, "garbage")], project=tmp_path, service=service) as m:
            assert m.servers["raw"].state is ServerState.READY, m.servers["raw"].error
            # The server prints garbage before every answer; each call still works.
            for _ in range(3):
                assert await service.call("raw:odd", {}) == "a\ufffdb"
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(records) == 1, [r.getMessage() for r in caplog.records]
    message = records[0].getMessage()
    assert "MCP server 'raw'" in message and "not JSON-RPC" in message
    assert "\n" not in message and records[0].exc_info is None
    assert m.servers["raw"].noise is not None


async def test_a_lone_surrogate_is_replaced_not_a_timeout(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager(
        [_raw(tmp_path, "surrogate", timeout_ms=20_000)], project=tmp_path, service=service
    ):
        start = time.monotonic()
        out = await service.call("raw:odd", {})
        assert out == "a\ufffdb"
        assert time.monotonic() - start < 15  # an answer, not the 20 s timeout


async def test_a_message_over_the_limit_fails_the_call_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(launched_stdio, "MAX_MESSAGE_BYTES", 1_000_000)
    service = ToolService()
    async with McpManager(
        [_raw(tmp_path, "huge_line", "3000000", timeout_ms=60_000)],
        project=tmp_path,
        service=service,
    ) as m:
        start = time.monotonic()
        with pytest.raises(ToolFailureError, match=r"over the client's limit of 1,000,000 bytes"):
            await service.call("raw:big", {})
        assert time.monotonic() - start < 45  # said at once, not after the 60 s timeout
        assert m.servers["raw"].state is ServerState.READY  # the connection survives


async def test_a_large_result_is_capped_and_kept_whole_in_a_file(tmp_path: Path) -> None:
    size = 3_000_000
    service = ToolService()
    async with McpManager([_raw(tmp_path, "big", str(size))], project=tmp_path, service=service):
        out = await service.call("raw:big", {})
    assert len(out) < MAX_RESULT_CHARS + 500
    assert out.startswith("x" * 1000)
    kept = [p for p in spill_dir().iterdir() if "raw_big" in p.name]
    assert len(kept) == 1 and str(kept[0]) in out
    assert kept[0].read_text() == "x" * size
    assert f"{size - MAX_RESULT_CHARS:,} more characters" in out
    assert kept[0].stat().st_mode & 0o077 == 0  # private: results can hold secrets


async def test_a_lone_surrogate_over_http_is_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Over HTTP the SDK's transport parses strictly before we see the answer; our HTTP
    transport repairs the body first, so the answer arrives with U+FFFD, at once."""
    import subprocess

    from tests.mcp.conftest import serving

    server = RAW.parent / "raw_http_server.py"
    cmd = [sys.executable, str(server)]
    async with serving(lambda port: [*cmd, str(port)], stderr=subprocess.DEVNULL) as (_, port):
        url = f"http://127.0.0.1:{port}/mcp"
        raw = {"type": "http", "url": url, "timeout_ms": 20_000}
        cfg = parse_server("web", raw, scope=Scope.USER, source=tmp_path / "s.json", env={})
        service = ToolService()
        async with McpManager([cfg], project=tmp_path, service=service) as m:
            assert m.servers["web"].state is ServerState.READY, m.servers["web"].error
            start = time.monotonic()
            assert await service.call("web:odd", {}) == "a\ufffdb"
            assert time.monotonic() - start < 15
            assert m.servers["web"].state is ServerState.READY
    err = capsys.readouterr().err
    assert "Traceback" not in err


def test_a_parse_error_handed_over_by_an_sdk_transport_is_recovered() -> None:
    import mcp_types as types
    from pydantic import ValidationError

    from codingcode.mcp.transports import recover_message

    data = '{"jsonrpc": "2.0", "id": 4, "result": {"t": "a\\udcffb"}}'
    with pytest.raises(ValidationError) as caught:
        types.jsonrpc_message_adapter.validate_json(data, by_name=False)
    message = recover_message(caught.value)
    assert message is not None and message.message.result == {"t": "a\ufffdb"}
    assert recover_message(ValueError("other")) is None
