"""`codingcode sandbox status` and `sandbox run` with a limited network (the real command)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.e2e.test_sandbox_cli import env, user_settings
from tests.sandbox.conftest import needs_bwrap
from tests.sandbox.network.server import LoggingServer

pytestmark = [pytest.mark.e2e, needs_bwrap]
__all__ = ["env"]


@pytest.fixture
def server() -> Iterator[LoggingServer]:
    with LoggingServer() as srv:
        yield srv


def test_status_checks_the_proxy_live(project: Path, env: dict[str, str]) -> None:
    user_settings(env, {"network": {"allowedDomains": ["pypi.org"], "deniedDomains": ["x.org"]}})
    r = run_cli(["sandbox", "status", "--json"], cwd=project, env=env)
    assert r.code == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["policy"]["network"] == "limited"
    assert report["policy"]["allowedDomains"] == ["pypi.org"]
    checks = {c["key"]: c for c in report["checks"]}
    assert checks["network-proxy"]["enforced"] is True, checks["network-proxy"]
    assert checks["network"]["enforced"] is True


def test_sandbox_run_reaches_listed_localhost_only(
    project: Path, env: dict[str, str], server: LoggingServer
) -> None:
    user_settings(env, {"network": {"mode": "limited", "allowedDomains": ["localhost"]}})
    ok = run_cli(
        ["sandbox", "run", "--", "curl", "-sS", "-m", "10", f"http://localhost:{server.port}/a"],
        cwd=project,
        env=env,
    )
    assert ok.code == 0 and "hello from the test server" in ok.stdout, ok.stderr
    refused = run_cli(
        ["sandbox", "run", "--", "curl", "-sS", "-m", "10", f"http://127.0.0.1:{server.port}/b"],
        cwd=project,
        env=env,
    )
    assert "sandbox.network.allowedDomains" in refused.stdout + refused.stderr
    assert server.paths() == ["/a"]
