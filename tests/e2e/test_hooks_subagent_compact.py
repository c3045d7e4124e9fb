"""SubagentStop and PreCompact hooks end to end (issue 17), with hook scripts written the way
Claude Code's documentation writes them, against the real ``codingcode run``."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent.fake_model import FakeModelServer, Step, system_text
from tests.e2e.test_agent_run import env_for, run
from tests.e2e.test_hooks_lifecycle import command, script, user_texts

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def must_compact(project: Path, fake: FakeModelServer, tmp_path: Path, hook: str) -> None:
    """A run that must compact on its own (a small window, big reads), ``hook`` its
    PreCompact hook."""
    user_settings(
        tmp_path,
        {
            "contextWindow": 8_000,
            "toolOutputLimit": 6_000,
            "hooks": {"PreCompact": command(hook, "auto")},
        },
    )
    for i in range(3):
        text = "".join(f"file {i} line {n:04d} " + "x" * 40 + "\n" for n in range(300))
        (project / f"big{i}.txt").write_text(text)
    turns = {"n": 0}

    def step(body: dict[str, Any]) -> Step:
        if "You summarise" in system_text(body):
            return Step(text="Summary: read big files.")
        turns["n"] += 1
        if turns["n"] <= 8:
            return Step(tool_calls=[("read_file", {"path": f"big{turns['n'] % 3}.txt"})])
        return Step(text="All read.")

    fake.script = [step] * 40
    fake.context_window = 8_000


def user_settings(tmp_path: Path, values: dict[str, Any]) -> None:
    config = tmp_path / "user-config"
    config.mkdir(exist_ok=True)
    (config / "settings.json").write_text(json.dumps(values))


def test_subagent_stop_that_blocks_once_gives_the_sub_agent_one_more_turn(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    log = tmp_path / "subagent-stop.log"
    hook = script(
        tmp_path,
        "substop.py",
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        f"open({str(log)!r}, 'a').write(json.dumps(data) + '\\n')\n"
        "if not data['stop_hook_active']:\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'also list the tests'}))\n",
    )
    stop_log = tmp_path / "stop.log"
    stop = script(tmp_path, "stop.sh", f"#!/bin/sh\ncat >> {stop_log}\necho >> {stop_log}\n")
    user_settings(tmp_path, {"hooks": {"SubagentStop": command(hook), "Stop": command(stop)}})
    fake.script = [
        Step(tool_calls=[("dispatch_agent", {"agent": "general", "prompt": "find the code"})]),
        Step(text="The code is in src."),  # the sub-agent's first answer: blocked
        Step(text="The code is in src; tests in tests."),  # its second: let through
        Step(text="Sub-agent says: src and tests."),  # the main agent
    ]
    result = run(["run", "where is the code?"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Sub-agent says: src and tests."
    bodies = fake.bodies()
    assert len(bodies) == 4
    assert any("also list the tests" in t for t in user_texts(bodies[2]))
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["hook_event_name"] for r in records] == ["SubagentStop", "SubagentStop"]
    assert [r["stop_hook_active"] for r in records] == [False, True]
    assert records[0]["last_assistant_message"] == "The code is in src."
    # The main agent's own end fires Stop once, not SubagentStop.
    stops = [json.loads(line) for line in stop_log.read_text().splitlines() if line.strip()]
    assert [s["hook_event_name"] for s in stops] == ["Stop"]
    assert stops[0]["last_assistant_message"] == "Sub-agent says: src and tests."


def test_pre_compact_runs_before_an_automatic_compaction(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    log = tmp_path / "precompact.log"
    hook = script(
        tmp_path,
        "precompact.sh",
        f'#!/bin/bash\ninput=$(cat)\necho "$input" >> {log}\n',
    )
    must_compact(project, fake, tmp_path, hook)
    result = run(["run", "read them"], project, env_for(fake, "anthropic", tmp_path), 240)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "All read."
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert records, "PreCompact never ran"
    assert all(r["hook_event_name"] == "PreCompact" for r in records)
    assert all(r["trigger"] == "auto" and r["custom_instructions"] == "" for r in records)
    assert all(r["cwd"] == str(project) for r in records)
    summaries = [b for b in fake.bodies() if "You summarise" in system_text(b)]
    assert len(summaries) == len(records)  # once per compaction, before it


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_notification_fires_when_the_app_waits_for_the_user(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    from tests.e2e.test_agent_tui import Tmux, wait_exit

    log = tmp_path / "notify.log"
    hook = script(tmp_path, "notify.sh", f"#!/bin/sh\ncat >> {log}\necho >> {log}\n")
    config = tmp_path / "cfg"
    config.mkdir()
    (config / "settings.json").write_text(
        json.dumps({"hooks": {"Notification": command(hook, "idle_prompt")}})
    )
    env = {
        **fake.env("openai"),
        "CODINGCODE_CONFIG_DIR": str(config),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
        "CODINGCODE_MODEL": "openai:fake-model",
        "CODINGCODE_IDLE_NOTIFICATION_S": "1",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    exit_file = tmp_path / "exit"
    line = (
        "env -u CODINGCODE_TRUST_ALL "
        + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        + f" {shlex.quote(sys.executable)} -m codingcode --project {shlex.quote(str(project))}"
        + f"; echo $? > {shlex.quote(str(exit_file))}; sleep 30"
    )
    fake.script = [Step(text="Answered.")]
    term = Tmux(f"cc-idle-{os.getpid()}-{time.monotonic_ns()}", line)
    try:
        term.wait_prompt()
        term.send("hello", "Enter")
        term.wait_text("Answered.")
        deadline = time.monotonic() + 30
        while not (log.exists() and log.read_text().strip()):
            assert time.monotonic() < deadline, "no idle notification; screen:\n" + term.screen()
            time.sleep(0.1)
        first = json.loads(log.read_text().split("\n", 1)[0])
        assert first["notification_type"] == "idle_prompt"
        assert first["hook_event_name"] == "Notification"
        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()
