"""The interactive app's own commands in a real terminal (tmux): /commands and !cmd never
reach the model as text, a command's output does join the conversation, --continue."""

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
from tests.e2e.test_agent_run import env_for, run
from tests.e2e.test_agent_tui import Tmux, wait_exit

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
]


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def start(
    fake: FakeModelServer, project: Path, tmp_path: Path, exit_file: Path, *args: str
) -> Tmux:
    env = {
        **fake.env("openai"),
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "user-config"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "user-state"),
        "CODINGCODE_MODEL": "openai:fake-model",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    command = (
        "env -u CODINGCODE_TRUST_ALL "
        + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        + f" {shlex.quote(sys.executable)} -m codingcode --project {shlex.quote(str(project))} "
        + " ".join(shlex.quote(a) for a in args)
        + f"; echo $? > {shlex.quote(str(exit_file))}; sleep 30"
    )
    return Tmux(f"cc-cmds-{os.getpid()}-{time.monotonic_ns()}", command)


def user_texts(body: dict[str, object]) -> list[str]:
    messages = body.get("messages")
    assert isinstance(messages, list)
    return [str(m.get("content")) for m in messages if m.get("role") == "user"]


def test_commands_shell_and_continue(project: Path, fake: FakeModelServer, tmp_path: Path) -> None:
    fake.script = [Step(text="Noted the colour: teal.")]
    first = run(["run", "remember the colour teal"], project, env_for(fake, "openai", tmp_path))
    assert first.returncode == 0, first.stderr

    exit_file = tmp_path / "exit"
    term = start(fake, project, tmp_path, exit_file, "--continue")
    try:
        term.wait_prompt()
        term.send("/compcat", "Enter")
        term.wait_text("Did you mean /compact?")
        term.wait_prompt()
        term.send("/cost", "Enter")
        term.wait_text("context ")
        term.wait_prompt()
        term.send("!echo made-by-$USER-shell", "Enter")
        term.wait_text("made-by-")
        term.wait_prompt()
        assert len(fake.requests) == 1  # nothing above reached the model
        fake.script = [Step(text="You ran echo; the colour was teal.")]
        term.send("what happened so far?", "Enter")
        term.wait_text("the colour was teal")
        term.wait_prompt()
        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()
    texts = user_texts(fake.bodies()[-1])
    assert texts[0] == "remember the colour teal"  # --continue sent the earlier turn
    assert any("made-by-" in t and "I ran this command myself" in t for t in texts)
    assert texts[-1] == "what happened so far?"
    assert not any(t.startswith("/") for t in texts)
