"""The interactive app in a real terminal (tmux): a confirmation answered "always", the rule
it saved, Ctrl-C cancelling a prompt without ending the session, and /exit."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step, tool_names, tool_results

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
]


class Tmux:
    def __init__(self, name: str, command: str) -> None:
        self.name = name
        # A private tmux server per terminal: nothing shared with the user's or other tests'.
        self.tmux = ["tmux", "-L", name]
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-s", name, "-x", "120", "-y", "50", command],
            check=True,
        )

    def screen(self) -> str:
        return subprocess.run(
            [*self.tmux, "capture-pane", "-p", "-J", "-S", "-200", "-t", self.name],
            capture_output=True,
            text=True,
        ).stdout

    def send(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, predicate: Callable[[str], bool], what: str, timeout: float = 40) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if predicate(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; screen:\n{text}")
            time.sleep(0.1)

    def wait_text(self, needle: str, timeout: float = 40) -> str:
        return self.wait_for(lambda s: needle in s, repr(needle), timeout)

    def wait_prompt(self, timeout: float = 40) -> str:
        """Wait until the input prompt is the last thing on screen (ready for a line)."""
        return self.wait_for(lambda s: s.rstrip().endswith("›"), "the prompt", timeout)

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def start_app(fake: FakeModelServer, project: Path, tmp_path: Path, exit_file: Path) -> Tmux:
    env = {
        **fake.env("openai"),
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "cfg"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
        "CODINGCODE_MODEL": "openai:fake-model",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    command = (
        "env -u CODINGCODE_TRUST_ALL "
        + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        + f" {shlex.quote(sys.executable)} -m codingcode --project {shlex.quote(str(project))}"
        + f"; echo $? > {shlex.quote(str(exit_file))}; sleep 30"
    )
    return Tmux(f"cc-test-{os.getpid()}-{time.monotonic_ns()}", command)


def wait_exit(term: Tmux, exit_file: Path) -> str:
    # Generous: on a loaded 2-core machine, stopping the MCP server and Python's exit take time.
    deadline = time.monotonic() + 45
    while not exit_file.exists():
        assert time.monotonic() < deadline, term.screen()
        time.sleep(0.1)
    return exit_file.read_text().strip()


def test_first_run_asks_to_trust_the_project_once(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    server = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "tiny_server.py"
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"tiny": {"command": sys.executable, "args": [str(server)]}}})
    )
    fake.script = [Step(text="first"), Step(text="second")]
    for round_ in (1, 2):
        exit_file = tmp_path / f"exit-{round_}"
        term = start_app(fake, project, tmp_path, exit_file)
        try:
            if round_ == 1:
                screen = term.wait_text("[y/N]")
                assert ".mcp.json (not trusted)" in screen and "tiny" in screen
                term.send("y", "Enter")
                term.wait_text("Trusted.")
            term.wait_prompt()
            assert "[y/N]" not in term.screen() or round_ == 1  # asked only once
            if round_ == 2:  # the history survives the session: Up, Up recalls "hello"
                term.send("Up")
                term.wait_for(lambda s: s.rstrip().endswith("› /exit"), "the last line")
                term.send("Up")
                term.wait_for(lambda s: s.rstrip().endswith("› hello"), "the line before")
                term.send("C-u")
            term.send("hello", "Enter")
            answer = "first" if round_ == 1 else "second"  # a line of its own: the project's
            term.wait_for(lambda s, a=answer: a in s.split(), repr(answer))  # path has "first"
            term.wait_prompt()
            # Typed text survives a busy machine (a lone Ctrl-D sent in the instant before
            # the prompt reads the terminal can be swallowed by the line discipline).
            term.send("/exit", "Enter")
            assert wait_exit(term, exit_file) == "0"
        finally:
            term.close()
        # Trusted: the project's MCP server started and its tools were offered.
        assert "tiny__shout" in tool_names(fake.bodies()[round_ - 1])


def test_interactive_confirmation_always_saves_a_rule(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    plan = [
        {"step": "write out.txt", "status": "completed"},
        {"step": "report", "status": "in_progress"},
    ]
    fake.script = [
        Step(
            text="I will write the file.",
            tool_calls=[
                ("write_file", {"path": "out.txt", "content": "hi\n"}),
                ("todo_write", {"plan": plan}),
            ],
        ),
        Step(text="Wrote **out.txt** for you."),
        # second prompt: the same call again, now allowed by the saved rule (no prompt)
        Step(tool_calls=[("write_file", {"path": "out.txt", "content": "again\n"})]),
        Step(text="Second write done."),
        # third prompt: hangs until Ctrl-C
        Step(text="Thinking for a long time", hang=True),
        Step(text="Still here after the cancel."),
    ]
    exit_file = tmp_path / "exit-code"
    term = start_app(fake, project, tmp_path, exit_file)
    try:
        term.wait_prompt()
        term.send("please write the file", "Enter")
        screen = term.wait_text("Allow? [y/s/p/u/n/t]")
        assert "Write out.txt  [write_file]" in screen
        assert "+++ b/out.txt" in screen and "+hi" in screen  # the diff of the new file
        assert "always saves: write_file(out.txt)" in screen
        assert "p) yes, always in this project" in screen  # the answer keys, not eaten
        assert "Todo 1/2" in screen  # the todo list, rendered
        assert not (project / "out.txt").exists()
        term.send("p")
        term.wait_text("Rule to save")
        term.send("Enter")
        term.wait_text("Wrote out.txt for you.")  # Markdown rendered: no ** left
        term.wait_prompt()
        assert (project / "out.txt").read_text() == "hi\n"
        saved = json.loads((project / ".codingcode" / "settings.local.json").read_text())
        assert "write_file(out.txt)" in saved["permissions"]["allow"]

        term.send("again", "Enter")
        screen = term.wait_text("Second write done.")
        term.wait_prompt()
        assert screen.count("Allow? [") == 1  # the saved rule allowed it
        assert (project / "out.txt").read_text() == "again\n"

        term.send("think hard", "Enter")
        term.wait_text("Thinking for a long time")
        term.send("C-c")
        term.wait_text("Cancelled. The session goes on.")  # C-c interrupted the model
        term.wait_prompt()
        term.send("are you there?", "Enter")
        term.wait_text("Still here after the cancel.")
        term.wait_prompt()

        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()
    # The model saw the tool results of the first prompt (the write succeeded).
    assert "Created out.txt" in tool_results(fake.bodies()[1])[0][0]
