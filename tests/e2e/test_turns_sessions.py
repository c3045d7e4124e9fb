"""A day of work across prompts, end to end: a turn is one prompt (checkpoints, restore,
sessions), codingcode's own files are never the agent's changes, and ``--continue`` finds
the conversation and says which one it is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent.fake_model import FakeModelServer, Step
from tests.e2e.test_agent_run import env_for, run

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def user_texts(body: dict[str, Any]) -> list[str]:
    return [
        m["content"] if isinstance(m["content"], str) else str(m["content"])
        for m in body["messages"]
        if m["role"] == "user"
    ]


def test_a_turn_is_one_prompt_and_own_files_survive_a_restore(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    env = env_for(fake, "openai", tmp_path)
    # Prompt 1: an edit in one response, a command in a second, read-only calls between.
    fake.script = [
        Step(tool_calls=[("execute_command", {"command": "ls src"})]),
        Step(
            tool_calls=[
                ("edit_file", {"path": "src/app.py", "old_string": "x = 1", "new_string": "x = 2"})
            ]
        ),
        Step(tool_calls=[("execute_command", {"command": "echo gen > gen.txt"})]),
        Step(tool_calls=[("read_file", {"path": "gen.txt"})]),
        Step(text="Edited and generated."),
    ]
    first = run(["run", "edit the app and generate", "--mode", "bypass"], project, env)
    assert first.returncode == 0, first.stderr
    assert (project / "src" / "app.py").read_text() == "x = 2\n"
    assert (project / "gen.txt").read_text() == "gen\n"

    # codingcode's own files appear between the prompts (what an "always" answer writes).
    added = run(["rules", "add", "allow", "execute_command(echo *)"], project, env)
    assert added.returncode == 0, added.stderr
    own = project / ".codingcode" / "settings.local.json"
    ignore = project / ".codingcode" / ".gitignore"
    assert own.exists() and ignore.exists()
    own_before = own.read_text()

    # Prompt 2, continued: one more change.
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "notes.txt", "content": "n\n"})]),
        Step(text="Noted."),
    ]
    second = run(["run", "--continue", "take a note", "--mode", "bypass"], project, env)
    assert second.returncode == 0, second.stderr
    # It says which session it continued, with its first prompt.
    assert "Continuing session" in second.stderr
    assert "'edit the app and generate'" in second.stderr
    assert user_texts(fake.bodies()[-1])[0] == "edit the app and generate"

    listed = run(["checkpoints", "list", "--json"], project, env)
    assert listed.returncode == 0, listed.stderr
    turns = json.loads(listed.stdout)
    # One entry per prompt; read-only calls (ls, read_file) took no checkpoint.
    assert [t["turn"] for t in turns] == [1, 2]
    assert [c["tool"] for c in turns[0]["calls"]] == ["edit_file", "execute_command"]
    assert set(turns[0]["files_changed"]) == {"src/app.py", "gen.txt"}
    assert [c["tool"] for c in turns[1]["calls"]] == ["write_file"]
    assert turns[1]["files_changed"] == ["notes.txt"]
    per_call = json.loads(run(["checkpoints", "list", "--calls", "--json"], project, env).stdout)
    assert len(per_call) == 3 and [p["turn"] for p in per_call] == [1, 1, 2]
    text = run(["checkpoints", "list"], project, env).stdout
    assert text.count(" turn 1") == 1 and "ls src" not in text

    # No id: the state before the latest prompt (the note goes, the rest stays).
    latest = run(["checkpoints", "restore", "--yes"], project, env)
    assert latest.returncode == 0, latest.stderr
    assert not (project / "notes.txt").exists()
    assert (project / "gen.txt").exists()
    # The first prompt's entry: both of its responses' changes are undone at once.
    back = run(["checkpoints", "restore", turns[0]["id"], "--yes"], project, env)
    assert back.returncode == 0, back.stderr
    assert (project / "src" / "app.py").read_text() == "x = 1\n"
    assert not (project / "gen.txt").exists()
    # codingcode's own files were neither deleted nor offered.
    assert own.read_text() == own_before and ignore.exists()
    assert ".codingcode" not in latest.stdout + back.stdout

    sessions = run(["sessions", "--json"], project, env)
    rows = json.loads(sessions.stdout)
    assert len(rows) == 1 and rows[0]["turns"] == 2 and rows[0]["outcome"] == "answered"
    assert rows[0]["first_prompt"] == "edit the app and generate"


def test_continue_skips_empty_and_failed_runs_are_marked(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    env = env_for(fake, "openai", tmp_path)
    fake.script = [Step(text="The number is 7.")]
    assert run(["run", "remember 7"], project, env).returncode == 0
    # A run whose endpoint fails before any answer: saved, and marked so.
    fake.script = [Step(status=400, text="bad request")]
    failed = run(["run", "this one fails"], project, env)
    assert failed.returncode != 0
    rows = json.loads(run(["sessions", "--json"], project, env).stdout)
    assert [r["outcome"] for r in rows] == ["failed before any answer", "answered"]
    shown = run(["sessions"], project, env).stdout
    assert "failed before any answer" in shown and "'remember 7'" in shown
    # stream-json names the continued session in an event.
    fake.script = [Step(text="ok")]
    streamed = run(
        ["run", "--resume", rows[1]["id"], "and now?", "--output-format", "stream-json"],
        project,
        env,
    )
    assert streamed.returncode == 0, streamed.stderr
    events = [json.loads(line) for line in streamed.stdout.splitlines()]
    resumed = [e for e in events if e["type"] == "resumed"]
    assert resumed == [
        {"type": "resumed", "session_id": rows[1]["id"], "first_prompt": "remember 7", "turns": 1}
    ]
    assert user_texts(fake.bodies()[-1]) == ["remember 7", "and now?"]
    # The result names the prompt's turn in the session (the second) apart from the model
    # responses it took (Claude Code's num_turns, what --max-turns limits).
    result = events[-1]
    assert result["type"] == "result" and result["turn"] == 2 and result["num_turns"] == 1


def test_audit_shows_this_project_by_default(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    env = env_for(fake, "openai", tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    for where in (project, other):
        fake.script = [
            Step(tool_calls=[("write_file", {"path": "a.txt", "content": where.name})]),
            Step(text="ok"),
        ]
        assert run(["run", "write", "--mode", "bypass"], where, env).returncode == 0
    mine = run(["audit", "--calls", "--json"], project, env)
    assert mine.returncode == 0, mine.stderr
    rows = [json.loads(line) for line in mine.stdout.splitlines()]
    assert rows and {r["project"] for r in rows} == {str(project.resolve())}
    assert f"Project: {project.resolve()}" in run(["audit", "--calls"], project, env).stderr
    every = run(["audit", "--calls", "--all-projects"], project, env)
    assert str(other.resolve()) in every.stdout and str(project.resolve()) in every.stdout
    theirs = run(["audit", "--calls", "--json", "-p", str(other)], project, env)
    assert {json.loads(line)["project"] for line in theirs.stdout.splitlines()} == {
        str(other.resolve())
    }


def test_bad_input_is_one_line_and_the_rest_works(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    from codingcode.checkpoints.store import project_key

    env = env_for(fake, "openai", tmp_path)
    fake.script = [Step(text="first answer")]
    assert run(["run", "first"], project, env).returncode == 0
    # A session file cut mid-line (a crash while writing): a note, and it goes on.
    (log,) = Path(env["CODINGCODE_STATE_DIR"]).glob("projects/*/*/session.jsonl")
    with log.open("ab") as f:
        f.write(b'{"type":"message","message":{"role":"assi')
    fake.script = [Step(text="second answer")]
    cut = run(["run", "--continue", "second"], project, env)
    assert cut.returncode == 0, cut.stderr
    assert "was cut" in cut.stderr and "Traceback" not in cut.stderr
    assert user_texts(fake.bodies()[-1]) == ["first", "second"]

    # A checkpoint store of a newer version: one line from the CLI; the agent goes on.
    store = Path(env["CODINGCODE_STATE_DIR"]) / "checkpoints" / project_key(project)
    store.mkdir(parents=True, exist_ok=True)
    (store / "log.jsonl").write_text('{"type": "store", "version": 99}\n')
    listed = run(["checkpoints", "list"], project, env)
    assert listed.returncode != 0
    assert listed.stderr.strip().count("\n") == 0 and "newer codingcode" in listed.stderr
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "b.txt", "content": "b\n"})]),
        Step(text="wrote"),
    ]
    wrote = run(["run", "write b", "--mode", "bypass"], project, env)
    assert wrote.returncode == 0, wrote.stderr
    assert (project / "b.txt").read_text() == "b\n"
    assert wrote.stderr.count("checkpoints are off for this session") == 1
    assert "newer codingcode" in wrote.stderr
