"""A Claude Code user's habits at the command line: ``codingcode "PROMPT"`` starts the app
with that prompt (in a real terminal, tmux), and ``codingcode -p "PROMPT"`` says what to type
instead of failing on a directory that does not exist."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step
from tests.conftest import run_cli
from tests.e2e.test_agent_tui import Tmux, wait_exit

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_a_prompt_as_the_first_argument_starts_the_app_with_it(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    fake.script = [Step(text="the answer is here")]
    env = {
        **fake.env("openai"),
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "cfg"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "CODINGCODE_MODEL": "openai:fake-model",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    exit_file = tmp_path / "exit"
    command = (
        " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        + f" {shlex.quote(sys.executable)} -m codingcode 'fix the bug'"
        + f"; echo $? > {shlex.quote(str(exit_file))}; sleep 30"
    )
    term = Tmux(f"cc-habit-{os.getpid()}-{time.monotonic_ns()}", f"cd {project} && {command}")
    try:
        term.wait_text("the answer is here")
        term.wait_prompt()
        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()
    first = fake.bodies()[0]["messages"]
    assert any(m["role"] == "user" and "fix the bug" in str(m["content"]) for m in first)


def test_dash_p_with_a_prompt_says_what_to_type(project: Path) -> None:
    r = run_cli(["-p", "fix it"], cwd=project)
    assert r.code == 2
    assert 'codingcode "fix it"' in r.stderr and 'codingcode run "fix it"' in r.stderr
    assert "Traceback" not in r.stderr
    # a real command word is still the command
    assert run_cli(["config"], cwd=project).code == 0
