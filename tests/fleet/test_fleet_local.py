"""``codingcode fleet run`` on the local engine, end to end: the real command, real git
repositories, real sandboxed sessions against the scripted model server."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer
from tests.fleet.helpers import (
    check_patch_applies,
    fleet,
    fleet_env,
    leftover_processes,
    make_repos,
    result_lines,
    scripted_server,
    task_lines,
    write_tasks,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    s = scripted_server()
    yield s
    s.close()


@pytest.fixture
def env(server: FakeModelServer, tmp_path: Path) -> dict[str, str]:
    e = fleet_env(server, tmp_path / "home")
    e["CODINGCODE_FLEET_WORKDIR"] = str(tmp_path / "work")
    return e


@pytest.mark.timeout(600)  # long: started first
def test_fifty_tasks_over_five_repositories(
    tmp_path: Path, env: dict[str, str], server: FakeModelServer
) -> None:
    repos = make_repos(tmp_path / "repos", 5)
    tasks = task_lines(repos, 50)
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "out"
    run = fleet(
        ["run", "tasks.jsonl", "--out", "out", "--concurrency", "4", "--json"], env, tmp_path
    )
    assert run.returncode == 0, run.stderr[-2000:]
    results = result_lines(out)
    assert sorted(r["id"] for r in results) == [t["id"] for t in tasks]  # each exactly once
    assert {r["status"] for r in results} == {"done"}
    for r in results:
        assert r["answer"] == f"finished {r['id']}" and r["num_turns"] == 2 and r["attempts"] == 1
        assert r["session_id"] and r["changed"] and r["input_tokens"] > 0
        folder = out / "tasks" / r["id"]
        events = [json.loads(x) for x in (folder / "events.jsonl").read_text().splitlines()]
        assert events[0]["type"] == "init" and events[-1]["type"] == "result"
        start = json.loads((folder / "session.jsonl").read_text().splitlines()[0])
        assert start["id"] == r["session_id"]
    repo_of = {t["id"]: Path(t["repo"]) for t in tasks}
    for r in results[::7]:  # a sample (a clone each): every repository, text and binary
        check_patch_applies(out, r, repo_of[r["id"]], tmp_path)
    # The progress events: one start, every task started and finished, one end.
    events = [json.loads(x) for x in run.stdout.splitlines()]
    assert events[0]["type"] == "start" and events[0]["total"] == 50
    assert sum(e["type"] == "task_finished" for e in events) == 50
    assert events[-1]["type"] == "end" and events[-1]["done"] == 50
    assert events[-1]["tasks_per_minute"] > 0
    # The sources were not touched; no working copy, session or sandbox is left.
    for repo in repos:
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True
        )
        assert status.stdout == ""
    assert not list((tmp_path / "work").iterdir())
    assert leftover_processes(str(tmp_path)) == []
    # status and results read it back.
    status = fleet(["status", "out"], env, tmp_path)
    assert status.returncode == 0 and "50 of 50 tasks have a result" in status.stdout
    assert "done 50" in status.stdout
    listed = fleet(["results", "out", "--json"], env, tmp_path)
    assert [r["id"] for r in json.loads(listed.stdout)] == [r["id"] for r in results]
