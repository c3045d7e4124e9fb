"""The app in a real terminal (tmux): an app opened and closed saves no session; --continue
shows the last exchanges; multi-line input; a running command shows its elapsed time and
last lines; a retry is shown while it waits; an answer not offered says why."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step
from tests.e2e.test_agent_app_commands import start, user_texts
from tests.e2e.test_agent_run import env_for, run
from tests.e2e.test_agent_tui import wait_exit

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
]


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def sessions(project: Path, fake: FakeModelServer, tmp_path: Path) -> list[dict[str, object]]:
    listed = run(["sessions", "--json"], project, env_for(fake, "openai", tmp_path))
    assert listed.returncode == 0, listed.stderr
    rows: list[dict[str, object]] = json.loads(listed.stdout)
    return rows


def test_resume_progress_and_multiline(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    env = env_for(fake, "openai", tmp_path)
    # An app opened and closed writes no session.
    exit_file = tmp_path / "exit-0"
    term = start(fake, project, tmp_path, exit_file)
    try:
        term.wait_prompt()
        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()
    assert sessions(project, fake, tmp_path) == []

    fake.script = [Step(text="The colour is teal.")]
    assert run(["run", "remember the colour teal"], project, env).returncode == 0

    exit_file = tmp_path / "exit-1"
    term = start(fake, project, tmp_path, exit_file, "--continue", "--mode", "bypass")
    try:
        # --continue shows where the conversation was.
        # (the header line can be on the screen before the exchanges below it)
        term.wait_for(
            lambda s: (
                "the last exchanges" in s
                and "› remember the colour teal" in s
                and "The colour is teal." in s
            ),
            "the last exchanges of the conversation",
        )
        term.wait_prompt()
        # A running command: its elapsed time and last lines while it runs.
        loop = "for i in 1 2 3 4 5 6; do echo tick-$i; sleep 1; done"
        fake.script = [
            Step(tool_calls=[("execute_command", {"command": loop})]),
            Step(text="Ticked."),
        ]
        # Multi-line input: a backslash then Enter continues the prompt on a new line.
        term.send("first line \\", "Enter")
        term.send("second line", "Enter")
        term.wait_for(
            lambda s: "running for" in s and "tick-" in s, "the running command's progress"
        )
        term.wait_text("Ticked.")
        term.wait_prompt()
        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()
    texts = user_texts(fake.bodies()[-1])
    assert "first line \nsecond line" in texts
    rows = sessions(project, fake, tmp_path)
    assert len(rows) == 1 and rows[0]["turns"] == 2


def test_a_retry_is_shown_while_it_waits(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    fake.script = [Step(status=503, text="busy"), Step(text="Here now.")]
    exit_file = tmp_path / "exit"
    term = start(fake, project, tmp_path, exit_file)
    try:
        term.wait_prompt()
        term.send("hello", "Enter")
        term.wait_text("(attempt 2 of 5): HTTP 503")
        term.wait_text("Here now.")
        term.wait_prompt()
        # No rule can be made for this line (a * would be a wildcard): s says why.
        fake.script = [
            Step(tool_calls=[("execute_command", {"command": "touch a && touch 'b*'"})]),
            Step(text="Not touched."),
        ]
        term.send("touch them", "Enter")
        term.wait_text("Allow? [y/n/t]")
        term.send("s")
        term.wait_text("s (yes, for this session) is not offered: no rule can be saved")
        term.send("n")
        term.wait_text("Not touched.")
        term.wait_prompt()
        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()


def test_init_writes_agents_md_through_the_model_and_asks_before_overwriting(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    fake.script = [
        Step(tool_calls=[("read_file", {"path": "pyproject.toml"})]),
        Step(
            tool_calls=[("write_file", {"path": "AGENTS.md", "content": "# demo\nTest: pytest\n"})]
        ),
        Step(text="Wrote AGENTS.md."),
    ]
    exit_file = tmp_path / "exit"
    term = start(fake, project, tmp_path, exit_file, "--mode", "acceptEdits")
    try:
        term.wait_prompt()
        term.send("/init", "Enter")
        term.wait_text("Wrote AGENTS.md.")
        term.wait_prompt()
        assert (project / "AGENTS.md").read_text() == "# demo\nTest: pytest\n"
        asked = user_texts(fake.bodies()[0])[-1]
        assert "AGENTS.md" in asked and "write_file" in asked
        sent = len(fake.requests)
        # It exists now: asked first; no keeps it and sends nothing.
        term.send("/init", "Enter")
        term.wait_text("Let the model rewrite it? [y/N]")
        term.send("n", "Enter")
        term.wait_text("Kept AGENTS.md as it is; nothing was sent.")
        term.wait_prompt()
        assert len(fake.requests) == sent
        term.send("/help", "Enter")
        term.wait_text("a new line in the prompt")
        term.wait_prompt()
        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()


def test_a_users_own_command_sees_the_paths_it_names(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    (project / ".env").write_text("TOKEN=user-can-read-this\n")
    exit_file = tmp_path / "exit"
    term = start(fake, project, tmp_path, exit_file)
    try:
        term.wait_prompt()
        term.send("!cat .env", "Enter")
        term.wait_text("TOKEN=user-can-read-this")
        term.wait_prompt()
        # Named by a glob, not literally: not exposed (the sandbox's mask holds).
        term.send("!cat .en*", "Enter")
        screen = term.wait_prompt()
        assert screen.count("TOKEN=user-can-read-this") == 1
        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()


def test_ctrl_c_ends_a_users_own_command_not_the_app(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    import subprocess
    import time

    exit_file = tmp_path / "exit"
    term = start(fake, project, tmp_path, exit_file, "--mode", "bypass")
    try:
        term.wait_prompt()
        term.send("!sleep 4321", "Enter")
        term.wait_text("!sleep 4321")
        deadline = time.monotonic() + 20
        while subprocess.run(["pgrep", "-fx", "sleep 4321"], capture_output=True).returncode:
            assert time.monotonic() < deadline, "the command never started"
        term.send("C-c")
        term.wait_text("Cancelled: !sleep 4321")
        term.wait_prompt()
        # nothing of it runs on, and the app goes on
        assert subprocess.run(["pgrep", "-fx", "sleep 4321"], capture_output=True).returncode
        term.send("!echo still-here", "Enter")
        term.wait_text("still-here\n")
        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()
