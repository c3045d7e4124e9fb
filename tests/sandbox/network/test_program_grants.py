"""Ground truth for per-program network grants (issue 16): the real runner, the real rules,
the real bubblewrap sandbox with ``sandbox.network.mode = limited``, and a loopback HTTP
server that records what really reached it.

A test resolver handed to the proxy maps ``*.test`` names and the npm registry's names to
127.0.0.1 (``allowLocalAddresses`` on, so a name resolving to loopback may be reached once it
is granted); nothing leaves the machine. ``npm`` here is a small script on PATH that fetches
from the registry name through the proxy variables, as the real one would.
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from codingcode.approval.confirm import Answer, Reply, ScriptedConfirmer
from codingcode.approval.rules import settings_path_for
from codingcode.config import Scope
from codingcode.runner import build_runner
from codingcode.sandbox.network.addresses import IPAddress
from codingcode.sandbox.network.proxy import NetworkProxy
from codingcode.workspace import Workspace
from tests.sandbox.conftest import needs_bwrap
from tests.sandbox.network.server import LoggingServer

LOOPBACK = ipaddress.ip_address("127.0.0.1")
LOOPBACK_NAMES = ("registry.npmjs.org", "registry.yarnpkg.com")

FETCH = textwrap.dedent(
    """\
    import sys, urllib.request
    try:
        with urllib.request.urlopen(sys.argv[-1], timeout=10) as r:
            print("FETCHED", r.read().decode().strip())
    except Exception as exc:
        print("FAILED", exc)
        sys.exit(1)
    """
)


async def fake_resolver(host: str, port: int) -> list[IPAddress]:
    if host.endswith(".test") or host in LOOPBACK_NAMES:
        return [LOOPBACK]
    raise OSError(f"{host}: no such name (test resolver)")


@pytest.fixture
def server() -> Any:
    with LoggingServer() as srv:
        yield srv


@pytest.fixture
def npm_project(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose PATH has an ``npm`` that fetches its last argument's URL (inside the
    project: the sandbox shows the project, not the host's /tmp)."""
    bin_dir = project / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(f"#!{sys.executable}\n" + FETCH)
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return project


def settings(project: Path, allow: list[str], **network: Any) -> None:
    """User settings (a project file could not widen the network before it is trusted)."""
    path = settings_path_for(Scope.USER, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    net = {"mode": "limited", "allowLocalAddresses": True, **network}
    path.write_text(json.dumps({"sandbox": {"network": net}, "permissions": {"allow": allow}}))


def runner_for(project: Path, answers: list[Any] | None = None) -> Any:
    confirmer = ScriptedConfirmer(answers) if answers is not None else None
    runner = build_runner(Workspace.load(project), audit=False, confirmer=confirmer)
    runner.launcher.network_proxy = NetworkProxy(resolver=fake_resolver, connect_timeout_s=5)
    return runner


def run(runner: Any, command: str) -> str:
    return str(anyio.run(runner.run, "execute_command", {"command": command}))


@needs_bwrap
def test_a_command_grant_reaches_its_name_and_nothing_else_does(
    project: Path, server: LoggingServer
) -> None:
    (project / "fetch.py").write_text(FETCH)
    url = f"http://grant.test:{server.port}"
    settings(
        project,
        [
            "execute_command(curl *) network(grant.test, denied.test)",
            "execute_command(python3 fetch.py *)",
        ],
        allowedDomains=[],
        deniedDomains=["denied.test"],
    )
    runner = runner_for(project)
    try:
        # the rule's command with its granted name: it connects
        text = run(runner, f"curl -sS -m 10 {url}/granted")
        assert "hello from the test server" in text, text
        assert server.paths() == ["/granted"]
        # another command, allowed by a rule without the clause, same name: blocked
        text = run(runner, f"python3 fetch.py {url}/other-command")
        assert "FAILED" in text and "blocked by the network policy" in text, text
        assert "grant.test" in text
        # the granted command, a name the rule does not grant: blocked
        text = run(runner, f"curl -sS -m 10 http://other.test:{server.port}/ungranted")
        assert "other.test" in text and "blocked by the network policy" in text, text
        # a name the rule grants but deniedDomains lists: deniedDomains wins
        text = run(runner, f"curl -sS -m 10 http://denied.test:{server.port}/denied")
        assert "deniedDomains" in text, text
        # a line that joins the granted command with another: only the names both share
        text = run(runner, f"curl -sS -m 10 {url}/joined; python3 fetch.py {url}/joined2")
        assert "blocked by the network policy" in text, text
        assert server.paths() == ["/granted"]
    finally:
        runner.launcher.close()


@needs_bwrap
def test_without_the_grant_the_command_is_blocked(project: Path, server: LoggingServer) -> None:
    settings(project, ["execute_command(curl *)"], allowedDomains=[])
    runner = runner_for(project)
    try:
        text = run(runner, f"curl -sS -m 10 http://grant.test:{server.port}/no-grant")
    finally:
        runner.launcher.close()
    assert "blocked by the network policy: grant.test" in text, text
    assert server.paths() == [] and server.connections == 0


@needs_bwrap
def test_session_answer_for_npm_grants_only_the_registry(
    npm_project: Path, server: LoggingServer
) -> None:
    settings(npm_project, ["execute_command(npm run *)"], allowedDomains=[])
    registry = f"http://registry.npmjs.org:{server.port}"
    runner = runner_for(npm_project, ["session"])
    try:
        confirmer = runner.pipeline.confirmer
        # asked: the suggested grant is npm's install, scoped to its registry
        text = run(runner, f"npm install {registry}/left-pad")
        (request,) = confirmer.requests
        assert request.suggested_rule == (
            "execute_command(npm install *) network(registry.npmjs.org, registry.yarnpkg.com)"
        )
        assert request.capabilities.domains == {"registry.npmjs.org", "registry.yarnpkg.com"}
        assert "FETCHED hello from the test server" in text, text
        # the session grant holds for the next install (no question) ...
        text = run(runner, f"npm install {registry}/is-odd")
        assert "FETCHED" in text and len(confirmer.requests) == 1, text
        # ... and for the registry only
        text = run(runner, f"npm install http://evil.test:{server.port}/x")
        assert "FAILED" in text and "evil.test" in text, text
        # another npm command (allowed by a rule without the clause): no registry
        text = run(runner, f"npm run {registry}/script")
        assert "FAILED" in text and "registry.npmjs.org" in text, text
    finally:
        runner.launcher.close()
    assert server.paths() == ["/left-pad", "/is-odd"]


@needs_bwrap
def test_allow_once_carries_the_edited_rules_names_for_that_call_only(
    project: Path, server: LoggingServer
) -> None:
    settings(project, [], allowedDomains=[])
    url = f"http://grant.test:{server.port}"
    edited = Reply(Answer.ALLOW, rule="execute_command(curl *) network(grant.test)")
    runner = runner_for(project, [edited, "allow"])
    try:
        text = run(runner, f"curl -sS -m 10 {url}/once")
        assert "hello from the test server" in text, text
        text = run(runner, f"curl -sS -m 10 {url}/again")  # allowed once more, no names
        assert "blocked by the network policy" in text, text
    finally:
        runner.launcher.close()
    assert server.paths() == ["/once"]
