"""Checkpoints end to end: the real agent changes files, `codingcode checkpoints` undoes it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step
from tests.checkpoints.test_store import dot_git_fingerprint, git
from tests.e2e.test_agent_run import env_for, run

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def test_restore_undoes_an_edit_and_what_a_command_did(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    git(project, "init", "-q")
    (project / "app.py").write_text("x = 1\n")
    (project / "docs").mkdir()
    (project / "docs" / "x.md").write_text("# docs\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "init")
    before = dot_git_fingerprint(project)
    fake.script = [
        Step(
            tool_calls=[
                ("edit_file", {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2"}),
                ("execute_command", {"command": "echo gen > gen.txt && rm docs/x.md"}),
            ]
        ),
        Step(text="Done."),
    ]
    env = env_for(fake, "openai", tmp_path)
    result = run(["run", "change things", "--mode", "bypass"], project, env)
    assert result.returncode == 0, result.stderr
    assert (project / "app.py").read_text() == "x = 2\n"
    assert (project / "gen.txt").exists() and not (project / "docs" / "x.md").exists()

    listed = run(["checkpoints", "list", "--json"], project, env)
    assert listed.returncode == 0, listed.stderr
    points = json.loads(listed.stdout)
    assert points and points[0]["turn"] == 1
    tools = [c["tool"] for p in points for c in p["calls"]]
    assert sorted(tools) == ["edit_file", "execute_command"]
    changed = {f for p in points for f in p["files_changed"]}
    assert {"app.py", "gen.txt", "docs/x.md"} <= changed

    # The session log links each checkpoint to the call it was taken before.
    logs = list(Path(env["CODINGCODE_STATE_DIR"]).glob("projects/*/*/session.jsonl"))
    assert len(logs) == 1
    records = [json.loads(line) for line in logs[0].read_text().splitlines()]
    linked = {r["checkpoint"] for r in records if r.get("type") == "checkpoint"}
    # one entry per prompt; the per-call points (--calls) are the ones the calls link to
    per_call = run(["checkpoints", "list", "--calls", "--json"], project, env)
    assert per_call.returncode == 0, per_call.stderr
    assert linked and linked <= {p["id"] for p in json.loads(per_call.stdout)}
    call_ids = {r["call_id"] for r in records if r.get("type") == "checkpoint"}
    assert len(call_ids) == 2  # the edit and the command

    diff = run(["checkpoints", "diff", points[0]["id"]], project, env)
    assert diff.returncode == 0 and "+x = 2" in diff.stdout, diff.stdout

    restored = run(["checkpoints", "restore", "--yes"], project, env)
    assert restored.returncode == 0, restored.stderr
    assert (project / "app.py").read_text() == "x = 1\n"
    assert not (project / "gen.txt").exists()
    assert (project / "docs" / "x.md").read_text() == "# docs\n"
    assert dot_git_fingerprint(project) == before
    assert git(project, "status", "--porcelain") == ""


def test_restore_refuses_to_clobber_outside_changes_without_force(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    (project / "a.txt").write_text("1\n")
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "a.txt", "content": "2\n"})]),
        Step(text="Done."),
    ]
    env = env_for(fake, "openai", tmp_path)
    assert run(["run", "write", "--mode", "acceptEdits"], project, env).returncode == 0
    (project / "a.txt").write_text("3 by hand\n")
    refused = run(["checkpoints", "restore", "--yes"], project, env)
    assert refused.returncode == 1
    assert "changed outside the agent" in refused.stderr and "--force" in refused.stderr
    assert (project / "a.txt").read_text() == "3 by hand\n"
    forced = run(["checkpoints", "restore", "--yes", "--force"], project, env)
    assert forced.returncode == 0, forced.stderr
    assert (project / "a.txt").read_text() == "1\n"


def test_bad_input_is_one_line(project: Path, fake: FakeModelServer, tmp_path: Path) -> None:
    env = env_for(fake, "openai", tmp_path)
    unknown = run(["checkpoints", "restore", "nope", "--yes"], project, env)
    assert unknown.returncode == 2
    assert unknown.stderr.strip().count("\n") == 0 and "no checkpoint" in unknown.stderr
    empty = run(["checkpoints", "list"], project, env)
    assert empty.returncode == 0 and "No checkpoints" in empty.stdout
    (project / ".codingcode").mkdir()
    (project / ".codingcode" / "settings.json").write_text('{"checkpoints": {"maxFiles": -1}}')
    bad = run(["checkpoints", "list"], project, env)
    assert bad.returncode == 2 and "checkpoints.maxFiles" in bad.stderr, bad.stderr


def test_a_broken_store_never_stops_the_agent(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    (project / "a.txt").write_text("1\n")
    env = env_for(fake, "openai", tmp_path)
    state = Path(env["CODINGCODE_STATE_DIR"])
    state.mkdir(parents=True)
    (state / "checkpoints").write_text("a file where the store's directory should be")
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "a.txt", "content": "2\n"})]),
        Step(text="Done."),
    ]
    result = run(["run", "write", "--mode", "acceptEdits"], project, env)
    assert result.returncode == 0, result.stderr
    assert (project / "a.txt").read_text() == "2\n"
    assert result.stderr.count("checkpoints are off for this session") == 1
