"""A sandboxed MCP server's connections through the network proxy reach the audit log, as a
command's do (the real server process, in the real sandbox, against a loopback server)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codingcode.mcp.client import McpManager, ServerState, sandbox_launcher
from codingcode.record.audit import AuditLog
from codingcode.tools import ToolService
from codingcode.workspace import Workspace
from tests.mcp.test_client import SERVERS, _server
from tests.sandbox.conftest import needs_bwrap
from tests.sandbox.network.server import LoggingServer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def web() -> Iterator[LoggingServer]:
    with LoggingServer() as srv:
        yield srv


@needs_bwrap
async def test_a_sandboxed_servers_connections_are_audited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, web: LoggingServer
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(config))
    (config / "settings.json").write_text(
        json.dumps({"sandbox": {"network": {"allowedDomains": ["localhost"]}}})
    )
    project = (tmp_path / "proj").resolve()
    project.mkdir()
    fetch = (
        "import urllib.request\n"
        f"for url in ('http://localhost:{web.port}/allowed', "
        f"'http://127.0.0.1:{web.port}/refused'):\n"
        "    try:\n"
        "        urllib.request.urlopen(url, timeout=10).read()\n"
        "    except Exception:\n"
        "        pass\n"
    )
    server = project / "fetching_server.py"
    server.write_text(
        (SERVERS / "tiny_server.py")
        .read_text()
        .replace(
            'MARKERS = Path(os.environ.get("TINY_MARKERS", "."))',
            'MARKERS = Path(os.environ.get("TINY_MARKERS", "."))\n' + fetch,
        )
    )
    cfg = _server(
        "boxed", {"command": sys.executable, "args": [str(server)], "sandbox": True}, tmp_path
    )
    launcher = sandbox_launcher(Workspace.load(project))
    async with McpManager([cfg], project=project, service=ToolService(), launcher=launcher) as m:
        conn = m.servers["boxed"]
        assert conn.state is ServerState.READY, conn.error
    assert web.paths() == ["/allowed"]  # what the proxy let through, really
    rows = AuditLog().query_network()
    seen = {(r[3], r[5]) for r in rows}
    assert ("localhost", 1) in seen and ("127.0.0.1", 0) in seen, rows
    # filed under the server's command line (no call: it runs for the whole session)
    assert all(str(r[0]).endswith("fetching_server.py") for r in rows), rows
