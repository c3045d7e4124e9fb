"""Background commands end to end: the real `codingcode run` starts a server, uses it, ends it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step, tool_names, tool_results
from tests.e2e.test_agent_run import env_for, run
from tests.tools.builtin.test_background import alive, unique_token

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def allow_network(env: dict[str, str]) -> None:
    config = Path(env["CODINGCODE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"sandbox": {"network": "allow"}}))


def test_a_server_started_in_the_background_is_used_read_and_killed(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    port = free_port()
    (project / "hello.txt").write_text("hello from the project\n")
    server = f"{sys.executable} -m http.server {port} --bind 127.0.0.1"
    fake.script = [
        Step(tool_calls=[("execute_command", {"command": server, "run_in_background": True})]),
        Step(
            tool_calls=[
                (
                    "execute_command",
                    {
                        "command": f"for i in $(seq 50); do curl -sf http://127.0.0.1:{port}/hello.txt"
                        " && break; sleep 0.2; done"
                    },
                )
            ]
        ),
        Step(tool_calls=[("command_output", {"id": "bg1", "wait_seconds": 5})]),
        Step(tool_calls=[("command_kill", {"id": "bg1"})]),
        Step(text="The server answered."),
    ]
    env = env_for(fake, "openai", tmp_path)
    allow_network(env)
    result = run(["run", "serve and fetch", "--mode", "bypass"], project, env, timeout=120)
    assert result.returncode == 0, result.stderr
    bodies = fake.bodies()
    results = [r for r, _ in tool_results(bodies[-1])]
    assert "Started in the background as bg1" in results[0]
    assert "hello from the project" in results[1]
    assert "GET /hello.txt" in results[2]
    assert "ended" in results[3]
    # command_output and command_kill were offered once the process existed (not before).
    assert "command_output" not in tool_names(bodies[0])
    assert "command_output" in tool_names(bodies[1])
    assert not alive(f"http.server {port}")


def test_run_ends_promptly_and_kills_what_is_still_running(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    token = unique_token(8675)
    env = env_for(fake, "openai", tmp_path)

    def answer_to_exit(first: list[Step]) -> tuple[float, str, str]:
        """Seconds from the model's final answer to the end of `codingcode run`."""
        answered: list[float] = []

        def final(body: object) -> Step:
            answered.append(time.monotonic())
            return Step(text="Started it.")

        fake.script = [*first, final]
        proc = subprocess.Popen(
            [sys.executable, "-m", "codingcode", "run", "start it", "--mode", "bypass"],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        return time.monotonic() - answered[0], out, err

    start = Step(
        tool_calls=[
            (
                "execute_command",
                {"command": f"trap '' TERM; sleep {token}", "run_in_background": True},
            )
        ]
    )
    with_bg, out, err = answer_to_exit([start])
    assert out.strip() == "Started it."
    assert "ended background process bg1" in err
    # The reference, measured in the same test: the same run whose command is not in the
    # background (the machine's own exit time under whatever load it has).
    plain = Step(tool_calls=[("execute_command", {"command": "true"})])
    reference, _, _ = answer_to_exit([plain])
    # The process ignored TERM: a short grace period, then KILL; the run still ends promptly
    # (the target: within 2 s of the final answer on a quiet machine).
    assert with_bg - reference < 1.5, (with_bg, reference)
    assert not alive(token)
