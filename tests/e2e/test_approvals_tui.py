"""The interactive app's approvals in a real terminal (tmux, scripted model): Ctrl-C after
one, two and parallel approvals; the grant choices; a session grant gone after a restart;
diffs before and after an edit."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step, system_text, tool_names, tool_results
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


def test_grants_session_then_gone_and_tell_the_model(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    touch = ("execute_command", {"command": "touch a.txt"})
    fake.script = [
        Step(tool_calls=[touch]),
        Step(text="done one"),
        Step(tool_calls=[touch]),  # granted for the session: not asked
        Step(text="done two"),
        Step(tool_calls=[("execute_command", {"command": "rm -f a.txt"})]),
        Step(text="understood"),
        # after a restart the session grant is gone
        Step(tool_calls=[touch]),
        Step(text="done three"),
    ]
    term = start_app(fake, project, tmp_path, tmp_path / "exit-1")
    try:
        term.wait_prompt()
        term.send("touch it", "Enter")
        screen = term.wait_text("Allow? [y/s/p/u/n/t]")
        assert "Why you are asked: this command may change files or run code" in screen
        assert "always saves: execute_command(touch a.txt)" in screen  # the exact text
        term.send("s")
        term.wait_text("Rule to save")
        term.send("Enter")
        term.wait_text("done one")
        term.wait_prompt()
        term.send("again", "Enter")
        screen = term.wait_text("done two")
        assert screen.count("Allow? [") == 1
        term.wait_prompt()
        term.send("remove it", "Enter")
        term.wait_for(lambda s: s.count("Allow? [") == 2, "the second question")
        term.send("t")
        term.wait_text("Tell the model:")
        term.send("use git clean instead", "Enter")
        term.wait_text("understood")
        term.wait_prompt()
        term.send("/exit", "Enter")
        assert wait_exit(term, tmp_path / "exit-1") == "0"
    finally:
        term.close()
    denied = [t for t, _ in tool_results(fake.bodies()[5])]
    assert any("The user says: use git clean instead" in t for t in denied), denied
    assert (project / "a.txt").exists()  # the rm was not run
    assert not (project / ".codingcode" / "settings.local.json").exists()  # nothing saved

    term = start_app(fake, project, tmp_path, tmp_path / "exit-2")
    try:
        term.wait_prompt()
        term.send("touch it again", "Enter")
        term.wait_text("Allow? [")  # asked again: the grant ended with the session
        term.send("y")
        term.wait_text("done three")
        term.wait_prompt()
        term.send("/exit", "Enter")
        assert wait_exit(term, tmp_path / "exit-2") == "0"
    finally:
        term.close()


def test_diffs_before_and_after_an_edit(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    (project / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    fake.script = [
        Step(
            tool_calls=[
                ("edit_file", {"path": "app.py", "old_string": "line 10\n", "new_string": "TEN\n"})
            ]
        ),
        Step(text="edited"),
        Step(
            tool_calls=[("edit_file", {"path": "app.py", "old_string": "line", "new_string": "x"})]
        ),
        Step(text="that failed"),
    ]
    term = start_app(fake, project, tmp_path, tmp_path / "exit")
    try:
        term.wait_prompt()
        term.send("edit", "Enter")
        screen = term.wait_text("Allow? [")
        assert "Edit app.py  [edit_file]" in screen
        assert "@@ -7,7 +7,7 @@" in screen and "-line 10" in screen and "+TEN" in screen
        assert " line 13" in screen and " line 14" not in screen  # 3 lines of context
        term.send("y")
        screen = term.wait_text("edited")
        assert "app.py: changed, +1 -1" in screen  # the applied change: its stat line
        assert screen.count("+TEN") == 1  # the diff the question showed is not shown again
        term.wait_prompt()
        # an edit that would fail (19 matches) is not asked: the model gets the error
        term.send("edit all", "Enter")
        screen = term.wait_text("that failed")
        assert screen.count("Allow? [") == 1
        term.wait_prompt()
        term.send("/exit", "Enter")
        assert wait_exit(term, tmp_path / "exit") == "0"
    finally:
        term.close()
    assert "TEN" in (project / "app.py").read_text()
    failed = tool_results(fake.bodies()[3])[-1]
    assert "occurs 19 times" in failed[0] and "no one was asked" in failed[0]


def test_plan_mode_by_shift_tab_and_exit_plan_mode(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    fake.script = [
        Step(tool_calls=[("exit_plan_mode", {"plan": "1. write notes.txt"})]),
        Step(text="carrying it out"),
    ]
    term = start_app(fake, project, tmp_path, tmp_path / "exit")
    try:
        term.wait_prompt()
        term.send("BTab")
        term.wait_for(lambda s: s.rstrip().endswith("acceptEdits ›"), "acceptEdits")
        term.send("BTab")
        term.wait_for(lambda s: s.rstrip().endswith("plan ›"), "plan mode")
        term.send("make a plan", "Enter")
        screen = term.wait_text("Allow? [")
        assert "Approve this plan and leave plan mode" in screen and "1. write notes.txt" in screen
        term.send("y")
        term.wait_text("carrying it out")
        term.wait_text("Plan approved.")
        term.wait_prompt()
        term.send("/exit", "Enter")
        assert wait_exit(term, tmp_path / "exit") == "0"
    finally:
        term.close()
    first, second = fake.bodies()[0], fake.bodies()[1]
    assert "Plan mode is on" in system_text(first)
    assert "write_file" not in tool_names(first) and "exit_plan_mode" in tool_names(first)
    assert "write_file" in tool_names(second) and "exit_plan_mode" not in tool_names(second)
    assert "Plan mode is on" not in system_text(second)


def test_codingcode_tool_on_a_terminal_asks(project: Path, tmp_path: Path) -> None:
    import os
    import shlex
    import sys

    env = {
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "cfg"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    done = tmp_path / "done"
    args = shlex.quote('{"command": "touch made.txt"}')
    command = (
        " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        + f" {shlex.quote(sys.executable)} -m codingcode tool execute_command {args}"
        + f" --project {shlex.quote(str(project))}; echo $? > {shlex.quote(str(done))}; sleep 30"
    )
    term = Tmux(f"cc-tool-{os.getpid()}-{time.monotonic_ns()}", command)
    try:
        screen = term.wait_text("Allow? [y/s/p/u/n/t]")
        assert "$ touch made.txt" in screen and "execute_command(touch made.txt)" in screen
        term.send("y", "Enter")
        deadline = time.monotonic() + 30
        while not done.exists():
            assert time.monotonic() < deadline, term.screen()
            time.sleep(0.1)
    finally:
        term.close()
    assert done.read_text().strip() == "0" and (project / "made.txt").exists()


def test_esc_interrupts_the_models_stream_and_keeps_what_was_typed(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    fake.script = [Step(text="thinking very slowly", hang=True), Step(text="fresh answer")]
    exit_file = tmp_path / "exit"
    term = start_app(fake, project, tmp_path, exit_file)
    try:
        term.wait_prompt()
        term.send("go", "Enter")
        term.wait_text("thinking very slowly")
        assert fake.hanging.wait(20)
        term.send("-l", "typed ahead")  # typed while the model streams: not echoed over it
        time.sleep(0.3)
        started = time.monotonic()
        term.send("Escape")
        term.wait_text("Interrupted (Esc)", timeout=20)
        term.wait_for(lambda s: s.rstrip().endswith("typed ahead"), "the typed-ahead prompt")
        assert time.monotonic() - started < 15  # not the 30 s the stream would hang
        term.send("Enter")
        term.wait_text("fresh answer")
        users = [m for m in fake.bodies()[-1]["messages"] if m["role"] == "user"]
        assert "typed ahead" in str(users[-1]["content"])
        term.wait_prompt()
        term.send("C-c")
        term.wait_text("Ctrl-C again")
        term.send("C-c")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()


def test_a_line_entered_during_the_turn_runs_after_it(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    fake.script = [Step(text="still streaming", hang=True)]
    exit_file = tmp_path / "exit"
    term = start_app(fake, project, tmp_path, exit_file)
    try:
        term.wait_prompt()
        term.send("go", "Enter")
        term.wait_text("still streaming")
        assert fake.hanging.wait(20)
        term.send("/exit", "Enter")  # typed ahead, Enter included: not lost, not half-kept
        time.sleep(0.3)
        after = term.screen().split("still streaming", 1)[1]
        assert "/exit" not in after  # not echoed over the model's output
        term.send("Escape")
        term.wait_text("Interrupted (Esc)", timeout=20)
        assert wait_exit(term, exit_file) == "0"  # the /exit ran at the next prompt
    finally:
        term.close()
