"""Every connection attempt through the proxy reaches the audit log with its call's id, and
the agent's tool result says what the network policy blocked (through the real runner)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from codingcode.config import user_config_dir
from codingcode.record.audit import AuditLog
from codingcode.runner import build_runner
from codingcode.workspace import Workspace
from tests.sandbox.conftest import needs_bwrap
from tests.sandbox.network.server import LoggingServer


@pytest.fixture
def server() -> Iterator[LoggingServer]:
    with LoggingServer() as srv:
        yield srv


def test_record_and_query_network_events(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.db")
    log.record_network(
        [
            {"call": "c1", "method": "CONNECT", "host": "pypi.org", "port": 443, "allowed": True,
             "address": "151.101.0.223", "when": 1.0},
            {"call": "c1", "method": "GET", "host": "evil.org", "port": 80, "allowed": False,
             "reason": "evil.org is not in sandbox.network.allowedDomains",
             "setting": "sandbox.network.allowedDomains", "when": 2.0},
        ]
    )  # fmt: skip
    rows = log.query_network(call_id="c1")
    assert [(r[3], r[5]) for r in rows] == [("pypi.org", 1), ("evil.org", 0)]
    assert rows[1][7] == "sandbox.network.allowedDomains"
    log.close()


@needs_bwrap
def test_runner_files_connections_under_the_call(project: Path, server: LoggingServer) -> None:
    settings = user_config_dir() / "settings.json"  # the user's own: trusted
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"sandbox": {"network": {"allowedDomains": ["localhost"]}}}))
    runner = build_runner(Workspace.load(project), mode="bypass")
    command = (
        f"curl -sS -m 10 http://localhost:{server.port}/allowed; "
        f"curl -sS -m 10 http://127.0.0.1:{server.port}/refused"
    )
    try:
        result = anyio.run(lambda: runner.run("execute_command", {"command": command}))
    finally:
        runner.launcher.close()
    assert server.paths() == ["/allowed"], result
    assert "blocked by the network policy" in result and "127.0.0.1" in result
    log = AuditLog()
    calls = log.query_calls(tool="execute_command")
    rows = log.query_network(call_id=calls[-1].call_id)
    assert [(r[3], r[5]) for r in rows] == [("localhost", 1), ("127.0.0.1", 0)]
