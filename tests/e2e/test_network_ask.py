"""The question after a network block, end to end (issue 16): the real ``codingcode`` app in
a terminal (tmux) and ``codingcode run`` headless, the scripted model, the real bubblewrap
sandbox with ``sandbox.network.mode = limited``, and a loopback HTTP server reached as
``localhost`` that records what really reached it; then ``codingcode audit --network``.

The first command names the proxy for ``localhost`` explicitly (``curl --noproxy ''``): until
``localhost`` is allowed a command's ``localhost`` is its own empty namespace, not the proxy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step, tool_results
from tests.e2e.test_agent_run import env_for, run
from tests.e2e.test_agent_tui import Tmux, start_app, wait_exit
from tests.sandbox.conftest import needs_bwrap
from tests.sandbox.network.server import LoggingServer

pytestmark = [pytest.mark.e2e, needs_bwrap]


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


@pytest.fixture
def web() -> Iterator[LoggingServer]:
    with LoggingServer() as srv:
        yield srv


def user_settings(config_dir: Path) -> None:
    """The user's own settings (trusted): limited network, nothing listed, curl allowed."""
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "settings.json").write_text(
        json.dumps(
            {
                "sandbox": {"network": {"mode": "limited", "allowedDomains": []}},
                "permissions": {"allow": ["execute_command(curl *)"]},
            }
        )
    )


def curl(web: LoggingServer, path: str, *, force_proxy: bool) -> tuple[str, dict[str, object]]:
    proxy = "--noproxy '' " if force_proxy else ""
    return (
        "execute_command",
        {"command": f"curl -sS -m 10 {proxy}http://localhost:{web.port}{path}"},
    )


def audit_network(
    tmp_path: Path, state: Path, config: Path, *, network: bool = True
) -> list[dict[str, object]]:
    env = {"CODINGCODE_STATE_DIR": str(state), "CODINGCODE_CONFIG_DIR": str(config)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "codingcode",
            "audit",
            *(["--network"] if network else []),
            "--all-projects",  # the state dir is this test's own
            "--json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, **env},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_app_asks_after_a_block_and_a_session_answer_reaches(
    project: Path, fake: FakeModelServer, web: LoggingServer, tmp_path: Path
) -> None:
    user_settings(tmp_path / "cfg")
    fake.script = [
        Step(tool_calls=[curl(web, "/first", force_proxy=True)]),
        Step(text="first done"),
        Step(tool_calls=[curl(web, "/second", force_proxy=False)]),
        Step(text="second done"),
    ]
    exit_file = tmp_path / "exit"
    term: Tmux = start_app(fake, project, tmp_path, exit_file)
    try:
        term.wait_prompt()
        term.send("fetch it", "Enter")
        screen = term.wait_text("Allow? [y/s/p/u/n/t]", timeout=60)
        assert "Let this command reach localhost and run it again" in screen, screen
        assert "refused localhost:" in screen and "sandbox.network.allowedDomains" in screen
        assert f"curl -sS -m 10 --noproxy '' http://localhost:{web.port}/first" in screen
        term.send("s")
        term.wait_text("Names to save (edit it, Enter to save): localhost")
        term.send("Enter")
        term.wait_text("first done", timeout=60)
        term.wait_prompt()
        # the first run never reached the server; the rerun did
        assert web.paths() == ["/first"]
        result = tool_results(fake.bodies()[1])[-1][0]
        assert "the user allowed localhost for this session" in result, result
        assert "hello from the test server" in result
        # the next call reaches it unasked
        term.send("again", "Enter")
        screen = term.wait_text("second done", timeout=60)
        assert screen.count("Allow? [") == 1, screen
        assert web.paths() == ["/first", "/second"]
        term.wait_prompt()
        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()
    rows = audit_network(tmp_path, tmp_path / "state", tmp_path / "cfg")
    answers = audit_network(tmp_path, tmp_path / "state", tmp_path / "cfg", network=False)
    (answer,) = [a for a in answers if str(a["reason"]).startswith("network:")]
    assert answer["answer"] == "session" and answer["decision"] == "allow", answer
    assert answer["reason"] == 'network: the user allowed localhost for this session ("localhost")'
    assert [(r["host"], r["allowed"]) for r in rows] == [
        ("localhost", False),
        ("localhost", True),
        ("localhost", True),
    ], rows
    # the refusal and the rerun are filed under the same call; the next call has its own
    assert rows[0]["call_id"] == rows[1]["call_id"] != rows[2]["call_id"]
    assert rows[0]["tool"] == "execute_command"
    assert "/first" in str(rows[0]["args"]) and "/second" in str(rows[2]["args"])


def test_headless_run_says_what_to_add_and_does_not_wait(
    project: Path, fake: FakeModelServer, web: LoggingServer, tmp_path: Path
) -> None:
    env = env_for(fake, "openai", tmp_path)
    user_settings(Path(env["CODINGCODE_CONFIG_DIR"]))
    fake.script = [
        Step(tool_calls=[curl(web, "/headless", force_proxy=True)]),
        Step(text="could not fetch"),
    ]
    proc = run(["run", "fetch it"], project, env, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert "could not fetch" in proc.stdout
    assert 'add ["localhost"] to "sandbox.network.allowedDomains"' in proc.stderr, proc.stderr
    result = tool_results(fake.bodies()[1])[-1][0]
    assert "no one can be asked in this run" in result
    assert web.paths() == []
