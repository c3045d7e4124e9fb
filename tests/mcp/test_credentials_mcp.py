"""A sandboxed MCP server gets masked credentials as placeholders, as commands do (the
server's own process environment, read by the server itself, in the real sandbox)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from codingcode.mcp.client import McpManager, ServerState, sandbox_launcher
from codingcode.tools import ToolService
from codingcode.workspace import Workspace
from tests.mcp.test_client import SERVERS, _server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

REAL = "ghp_" + "McpServerRealToken" * 2 + "abc1"


async def test_sandboxed_server_sees_the_placeholder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(config))
    monkeypatch.setenv("GITHUB_TOKEN", REAL)
    (config / "settings.json").write_text(
        json.dumps(
            {"sandbox": {"credentials": {"envVars": [
                {"name": "GITHUB_TOKEN", "mode": "mask", "injectHosts": ["api.github.com"]}]}}}
        )
    )  # fmt: skip
    project = (tmp_path / "proj").resolve()
    project.mkdir()
    seen = project / "seen"
    server = project / "token_server.py"
    server.write_text(
        (SERVERS / "tiny_server.py")
        .read_text()
        .replace(
            'MARKERS = Path(os.environ.get("TINY_MARKERS", "."))',
            'MARKERS = Path(os.environ.get("TINY_MARKERS", "."))\n'
            f"Path({str(seen)!r}).write_text(os.environ.get('GITHUB_TOKEN', 'unset'))",
        )
    )
    cfg = _server(
        "boxed", {"command": sys.executable, "args": [str(server)], "sandbox": True}, tmp_path
    )
    service = ToolService()
    launcher = sandbox_launcher(Workspace.load(project))
    async with McpManager([cfg], project=project, service=service, launcher=launcher) as mcp:
        conn = mcp.servers["boxed"]
        if "SandboxError" in (conn.error or ""):
            pytest.skip(f"no sandbox backend on this machine: {conn.error}")
        assert conn.state is ServerState.READY, conn.error
    got = seen.read_text()
    assert got != REAL and got.startswith("ghp_") and len(got) == len(REAL)
