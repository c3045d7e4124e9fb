"""A killed ``fleet run`` and ``--resume``; Ctrl-C; a second run into the same DIR."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer
from tests.fleet.helpers import (
    fleet,
    fleet_env,
    make_repos,
    result_lines,
    scripted_server,
    start_fleet,
    task_lines,
    wait_for_event,
    wait_gone,
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


@pytest.mark.timeout(300)
def test_resume_after_a_killed_run_finishes_only_the_missing_tasks(
    tmp_path: Path, env: dict[str, str]
) -> None:
    repos = make_repos(tmp_path / "repos", 2)
    tasks = task_lines(repos, 6, slow=1.0)
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    args = ["run", "tasks.jsonl", "--out", "out", "--concurrency", "2", "--json"]
    proc = start_fleet(args, env, tmp_path)
    try:
        wait_for_event(proc, "task_finished", 2)
    finally:
        proc.send_signal(signal.SIGKILL)  # no clean-up of its own: its sessions must die
        proc.wait(timeout=30)
    assert wait_gone(str(tmp_path)) == []
    first = {r["id"] for r in result_lines(tmp_path / "out")}
    assert 2 <= len(first) < 6
    # Without --resume, a DIR with results is not run again (nothing recorded twice).
    again = fleet(args, env, tmp_path)
    assert again.returncode == 2 and "--resume" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    resumed = fleet([*args, "--resume"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    events = [json.loads(x) for x in resumed.stdout.splitlines()]
    start = next(e for e in events if e["type"] == "start")
    assert start["skipped"] == len(first) and start["total"] == 6
    started = {e["id"] for e in events if e["type"] == "task_started"}
    assert started == {t["id"] for t in tasks} - first
    results = result_lines(tmp_path / "out")
    assert sorted(r["id"] for r in results) == [t["id"] for t in tasks]
    assert {r["status"] for r in results} == {"done"}
    assert not list((tmp_path / "work").iterdir())  # the killed run's copies are gone too
    status = fleet(["status", "out"], env, tmp_path)
    assert "6 of 6 tasks have a result" in status.stdout


@pytest.mark.timeout(300)
def test_ctrl_c_cancels_running_tasks_and_a_second_run_is_refused(
    tmp_path: Path, env: dict[str, str]
) -> None:
    repos = make_repos(tmp_path / "repos", 1)
    tasks = task_lines(repos, 5, slow=20.0)
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    args = ["run", "tasks.jsonl", "--out", "out", "--concurrency", "2", "--json"]
    proc = start_fleet(args, env, tmp_path)
    try:
        seen = wait_for_event(proc, "task_started", 2)
        # While it runs, another run into the same DIR is refused, in one line.
        second = fleet(args, env, tmp_path)
        assert second.returncode == 2
        assert "another `codingcode fleet run`" in second.stderr
        assert len(second.stderr.strip().splitlines()) == 1
        status = fleet(["status", "out"], env, tmp_path)
        assert "a fleet run is writing here now" in status.stdout
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    running = {e["id"] for e in seen if e["type"] == "task_started"}
    results = result_lines(tmp_path / "out")
    assert {r["id"] for r in results} == running
    assert {r["status"] for r in results} == {"cancelled"}
    assert wait_gone(str(tmp_path)) == []
    assert not list((tmp_path / "work").iterdir())
