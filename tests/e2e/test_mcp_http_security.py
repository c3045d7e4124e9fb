"""Ground truth for DNS rebinding: the real `codingcode mcp --http`, bound to loopback
written in forms the SDK's own check does not know, refuses requests addressed to another
name (a rebinding page) and serves those addressed to itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]
CODINGCODE = str(Path(sys.executable).parent / "codingcode")
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream"}


@pytest.mark.parametrize(
    ("bind", "connect"),
    [
        ("127.0.0.2:0", "127.0.0.2"),
        ("[0:0:0:0:0:0:0:1]:0", "[::1]"),
        ("[::ffff:127.0.0.1]:0", "127.0.0.1"),
        ("localhost:0", "127.0.0.1"),
    ],
)
async def test_loopback_forms_refuse_a_rebinding_host(
    bind: str, connect: str, project: Path, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
    }
    env.pop("CODINGCODE_MCP_TOKEN", None)
    cmd = [CODINGCODE, "mcp", "--project", str(project), "--http", bind]
    async with await anyio.open_process(cmd, env=env, stderr=subprocess.PIPE) as proc:
        try:
            assert proc.stderr is not None
            seen = b""
            with anyio.fail_after(30):
                while b"/mcp" not in seen:
                    seen += await proc.stderr.receive()
            assert b"bearer token" not in seen  # loopback: no token needed ...
            port = int(seen.decode().split("/mcp")[0].rsplit(":", 1)[1])
            url = f"http://{connect}:{port}/mcp"
            async with httpx.AsyncClient() as http:
                # ... so the Host/Origin check is what stands between it and a web page.
                evil = await http.post(
                    url, json=INIT, headers={**ACCEPT, "host": f"evil.example:{port}"}
                )
                assert evil.status_code == 421
                page = await http.post(
                    url,
                    json=INIT,
                    headers={**ACCEPT, "origin": f"http://evil.example:{port}"},
                )
                assert page.status_code == 403
                own = await http.post(url, json=INIT, headers=ACCEPT)
                assert own.status_code == 200, own.text
        finally:
            proc.terminate()
