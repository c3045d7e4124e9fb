"""The real `codingcode` against a real OAuth-protected MCP server on 127.0.0.1.

The server (tests/mcp/servers/oauth_server.py) is built from the SDK's own authorization
server pieces; $BROWSER is a script that follows the authorization redirect to our loopback
callback, as a person approving the login would.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.mcp.conftest import free_port, started_listening

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
SERVERS = Path(__file__).parent.parent / "mcp" / "servers"


class OAuthServer:
    def __init__(self, tmp: Path, *extra: str) -> None:
        for _ in range(5):  # again on another port if its port was taken meanwhile
            self.port = free_port()
            self.log = tmp / f"grants-{self.port}.jsonl"
            self.url = f"http://127.0.0.1:{self.port}/mcp"
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    str(SERVERS / "oauth_server.py"),
                    str(self.port),
                    str(self.log),
                    *extra,
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            if started_listening(self.proc, self.port):
                return
        raise AssertionError("the OAuth server found no free port")

    def grants(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def events(self) -> list[str]:
        return [g["event"] for g in self.grants()]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    follow = f"{sys.executable} {SERVERS / 'follow_browser.py'} %s"
    values = {
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
        "BROWSER": follow,
        "FOLLOW_LOG": str(tmp_path / "browser.log"),
    }
    return {**{k: v for k, v in os.environ.items() if k != "CODINGCODE_TRUST_ALL"}, **values}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[OAuthServer]:
    s = OAuthServer(tmp_path)
    yield s
    s.stop()


def _configure(env: dict[str, str], entry: dict[str, object]) -> None:
    config = Path(env["CODINGCODE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"mcpServers": {"docs": entry}}))


def _token_files(env: dict[str, str]) -> list[Path]:
    d = Path(env["CODINGCODE_STATE_DIR"]) / "mcp-oauth"
    return sorted(d.glob("*.json")) if d.exists() else []


def test_login_then_use_then_logout(
    project: Path, env: dict[str, str], server: OAuthServer, tmp_path: Path
) -> None:
    _configure(env, {"type": "http", "url": server.url})

    listed = run_cli(["mcp", "list"], cwd=project, env=env)
    assert listed.code == 1, listed
    assert (
        "docs (http, user scope, settings.json) needs login: run `codingcode mcp login docs`"
        in (listed.stdout)
    )
    called = run_cli(["tool", "docs:whoami", "{}"], cwd=project, env=env)
    assert called.code == 1, called
    assert called.stderr.strip().splitlines() == [
        "error: docs:whoami cannot be called: MCP server 'docs' needs login "
        "(run `codingcode mcp login docs`)."
    ]
    assert "register" not in server.events()  # a headless run registers nothing
    assert _token_files(env) == []

    login = run_cli(["mcp", "login", "docs", "--timeout", "60"], cwd=project, env=env)
    assert login.code == 0, login
    assert "Logged in to 'docs'" in login.stdout
    assert server.events() == ["register", "code", "token"]
    registered = server.grants()[0]["redirect_uris"][0]
    assert registered.startswith("http://127.0.0.1:") and registered.endswith("/callback")
    opened = (tmp_path / "browser.log").read_text()
    assert "code_challenge_method=S256" in opened and "code_challenge=" in opened
    assert "resource=" in opened

    files = _token_files(env)
    assert len(files) == 1
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(files[0].parent.stat().st_mode) == 0o700
    held = json.loads(files[0].read_text())
    assert held["url"] == server.url and held["tokens"]["access_token"]
    secret = held["tokens"]["access_token"]
    for path in project.rglob("*"):  # nothing of the login lands in the project
        assert not path.is_file() or secret not in path.read_text(errors="replace")

    used = run_cli(["tool", "docs:whoami", "{}", "--mode", "bypass"], cwd=project, env=env)
    assert used.code == 0, used
    assert used.stdout.strip() == f"client {held['client']['client_id']} scopes ['read']"
    listed = run_cli(["mcp", "list"], cwd=project, env=env)
    assert listed.code == 0, listed
    assert "docs (http, user scope, settings.json) ready" in listed.stdout

    # 403 insufficient_scope: the step-up needs a person at a browser; headless says so.
    more = run_cli(
        ["tool", "docs:write_note", '{"text": "x"}', "--mode", "bypass"], cwd=project, env=env
    )
    assert more.code == 1, more
    assert "needs a login (again, or with more permissions): run `codingcode mcp login docs`" in (
        more.stderr
    )
    assert "Traceback" not in more.stderr
    # The next login asks for the scopes the step-up wanted; then the call goes through.
    login = run_cli(["mcp", "login", "docs", "--timeout", "60"], cwd=project, env=env)
    assert login.code == 0, login
    code = [g for g in server.grants() if g["event"] == "code"][-1]
    assert set(code["scopes"]) == {"read", "write"}
    more = run_cli(
        ["tool", "docs:write_note", '{"text": "x"}', "--mode", "bypass"], cwd=project, env=env
    )
    assert more.code == 0 and more.stdout.strip() == "noted: x", more

    out = run_cli(["mcp", "logout", "docs"], cwd=project, env=env)
    assert out.code == 0 and "Logged out of 'docs'" in out.stdout, out
    assert _token_files(env) == []
    again = run_cli(["mcp", "list"], cwd=project, env=env)
    assert again.code == 1 and "needs login" in again.stdout, again


def test_an_expired_token_is_refreshed_not_sent(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    server = OAuthServer(tmp_path, "--expires-in", "2")
    try:
        _configure(env, {"type": "http", "url": server.url})
        login = run_cli(["mcp", "login", "docs", "--timeout", "60"], cwd=project, env=env)
        assert login.code == 0, login
        time.sleep(3)  # the access token has run out between two sessions
        used = run_cli(["tool", "docs:whoami", "{}", "--mode", "bypass"], cwd=project, env=env)
        assert used.code == 0, used
        assert "scopes ['read']" in used.stdout
        assert server.events() == ["register", "code", "token", "refresh", "token"]
    finally:
        server.stop()


def test_a_pre_registered_client_does_not_register(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    callback = free_port()
    server = OAuthServer(tmp_path, "--client", "fixed-client", "--callback-port", str(callback))
    try:
        _configure(
            env,
            {
                "type": "http",
                "url": server.url,
                "oauth": {"client_id": "fixed-client", "callback_port": callback},
            },
        )
        login = run_cli(["mcp", "login", "docs", "--timeout", "60"], cwd=project, env=env)
        assert login.code == 0, login
        assert server.events() == ["code", "token"]
        assert server.grants()[0]["client_id"] == "fixed-client"
        used = run_cli(["tool", "docs:whoami", "{}", "--mode", "bypass"], cwd=project, env=env)
        assert used.stdout.strip() == "client fixed-client scopes ['read']", used
    finally:
        server.stop()


def test_login_to_a_stdio_server_or_unknown_name_is_refused(
    project: Path, env: dict[str, str]
) -> None:
    _configure(env, {"command": "true"})
    stdio = run_cli(["mcp", "login", "docs"], cwd=project, env=env)
    assert stdio.code == 2 and "is a stdio server" in stdio.stderr, stdio
    unknown = run_cli(["mcp", "login", "nope"], cwd=project, env=env)
    assert unknown.code == 2 and "No MCP server named 'nope'" in unknown.stderr, unknown


def test_client_credentials_need_no_person(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    server = OAuthServer(tmp_path, "--cc-client", "robot:s3cret")
    try:
        entry = {
            "type": "http",
            "url": server.url,
            "oauth": {
                "grant_type": "client_credentials",
                "client_id": "robot",
                "client_secret": "${ROBOT_SECRET}",
            },
        }
        _configure(env, entry)
        used = run_cli(
            ["tool", "docs:whoami", "{}", "--mode", "bypass"],
            cwd=project,
            env={**env, "ROBOT_SECRET": "s3cret"},
        )
        assert used.code == 0, used
        assert used.stdout.strip() == "client robot scopes ['read']"
        assert server.events() == ["token", "cc-token"]
        assert not (tmp_path / "browser.log").exists()  # no browser, no login
        logout = run_cli(["mcp", "logout", "docs"], cwd=project, env={**env, "ROBOT_SECRET": "x"})
        assert logout.code == 0, logout
        wrong = run_cli(
            ["tool", "docs:whoami", "{}", "--mode", "bypass"],
            cwd=project,
            env={**env, "ROBOT_SECRET": "nope"},
        )
        assert wrong.code == 1, wrong
        assert "MCP server 'docs' failed" in wrong.stderr and "401" in wrong.stderr
        assert "Traceback" not in wrong.stderr
        assert len(wrong.stderr.strip().splitlines()) == 1, wrong.stderr
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("tamper", "State parameter mismatch"),
        ("deny", "refused the login: access_denied: the user said no"),
    ],
)
def test_a_forged_or_refused_callback_gets_no_tokens(
    project: Path, env: dict[str, str], server: OAuthServer, mode: str, said: str
) -> None:
    _configure(env, {"type": "http", "url": server.url})
    login = run_cli(
        ["mcp", "login", "docs", "--timeout", "60"], cwd=project, env={**env, "FOLLOW_MODE": mode}
    )
    assert login.code == 1, login
    assert "Login to 'docs' failed" in login.stderr and said in login.stderr
    assert "Traceback" not in login.stderr
    assert "token" not in server.events()  # the code was never exchanged
    held = [json.loads(p.read_text()) for p in _token_files(env)]
    assert all("tokens" not in h for h in held)
