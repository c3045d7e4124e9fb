"""Bad input to ``fleet run``: one clear line each, the other tasks go on, and
``results.jsonl`` never holds half a line."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codingcode.fleet.tasks import parse_tasks
from tests.agent.fake_model import FakeModelServer
from tests.fleet.helpers import (
    fleet,
    fleet_env,
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


def test_task_file_problems_are_one_line_each(tmp_path: Path) -> None:
    text = "\n".join(
        [
            '{"id": "a", "project": ".", "prompt": "x"}',
            '{"id": "a", "project": ".", "prompt": "y"}',
            '{"id": "b", "project": "."}',
            '{"id": "c", "prompt": "x"}',
            '{"id": "d", "repo": "r", "project": ".", "prompt": "x"}',
            '{"id": "../e", "project": ".", "prompt": "x"}',
            '{"id": "f", "project": ".", "prompt": "x", "colour": "red"}',
            '{"id": "g", "project": ".", "prompt": "x", "mode": "yolo"}',
            "not json",
            "[1, 2]",
            '{"id": "h", "project": ".", "prompt": "x", "timeout_s": 5}',
        ]
    )
    parsed = parse_tasks(text, "t.jsonl", tmp_path)
    assert [t.id for t in parsed.tasks] == ["a", "h"]
    assert parsed.tasks[0].mode == "acceptEdits" and parsed.tasks[0].project == str(tmp_path)
    p = parsed.problems
    assert len(p) == 9 and all(line.startswith("t.jsonl:") and "\n" not in line for line in p)
    assert "duplicate id 'a' (first on line 1)" in p[0]
    assert "missing field `prompt`" in p[1]
    assert "either `project`" in p[2] and "either `project`" in p[3]
    assert "`id`" in p[4] and "unknown field `colour`" in p[5] and "`mode`" in p[6]
    assert "not JSON" in p[7] and "a JSON object" in p[8]


@pytest.mark.timeout(300)
def test_bad_tasks_fail_alone_and_the_others_go_on(tmp_path: Path, env: dict[str, str]) -> None:
    repos = make_repos(tmp_path / "repos", 1)
    good = task_lines(repos, 2)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "README.md").write_text("# plain\n\nversion = 1\n")
    good.append(
        good[0] | {"id": "plain", "project": "plain", "prompt": "TASK t900 FILE=out_900.txt SLOW=0"}
    )
    del good[-1]["repo"], good[-1]["ref"]
    extra = [
        json.dumps(good[0] | {"prompt": "again"}),  # duplicate id
        json.dumps({"id": "noprompt", "project": "plain"}),  # missing field
        json.dumps({"id": "nowhere", "project": "does/not/exist", "prompt": "x"}),
        json.dumps({"id": "badref", "repo": str(repos[0]), "ref": "nope", "prompt": "x"}),
    ]
    write_tasks(tmp_path / "tasks.jsonl", good, extra)
    run = fleet(["run", "tasks.jsonl", "--out", "out"], env, tmp_path)
    err = run.stderr
    assert run.returncode == 1
    assert "tasks.jsonl:4: duplicate id 't000'" in err
    assert "tasks.jsonl:5 (task 'noprompt'): missing field `prompt`" in err
    assert f"task nowhere failed: project {tmp_path}/does/not/exist does not exist" in err
    assert "task badref failed: ref 'nope' not found" in err
    assert "Traceback" not in err
    results = {r["id"]: r for r in result_lines(tmp_path / "out")}
    assert set(results) == {"t000", "t001", "plain", "nowhere", "badref"}
    assert results["nowhere"]["status"] == "failed" and results["plain"]["status"] == "done"
    # The plain directory was copied, not changed; its patch applies to a copy of it.
    assert (plain / "README.md").read_text() == "# plain\n\nversion = 1\n"
    assert "+version = t900" in (tmp_path / "out/tasks/plain/changes.patch").read_text()


@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap for the mounts")
def test_an_out_dir_that_is_read_only_or_full(tmp_path: Path, env: dict[str, str]) -> None:
    repos = make_repos(tmp_path / "repos", 1)
    write_tasks(tmp_path / "tasks.jsonl", task_lines(repos, 5))
    py = [sys.executable, "-m", "codingcode", "fleet", "run", "tasks.jsonl", "--out"]
    # Root writes anywhere: the directory is made read-only (a bind mount) or small (tmpfs).
    ro = tmp_path / "ro"
    ro.mkdir()
    import subprocess

    kept = tmp_path / "kept"

    def under(mounts: list[str], out: Path) -> subprocess.CompletedProcess[str]:
        # The fleet, then a copy of what it left (a tmpfs is gone with the mount).
        script = '"$@"; rc=$?; cp -r "$OUT" "$KEPT" 2>/dev/null; exit $rc'
        return subprocess.run(
            ["bwrap", "--dev-bind", "/", "/", *mounts, "--", "sh", "-c", script, "sh",
             *py, str(out / "run")],
            cwd=tmp_path, env=env | {"OUT": str(out / "run"), "KEPT": str(kept)},
            capture_output=True, text=True, timeout=240,
        )  # fmt: skip

    refused = under(["--ro-bind", str(ro), str(ro)], ro)
    assert refused.returncode == 2
    assert refused.stderr.strip() == f"error: cannot write to {ro}/run: Read-only file system"
    full = tmp_path / "full"
    full.mkdir()
    run = under(["--size", str(48 * 1024), "--tmpfs", str(full)], full)
    assert run.returncode == 1, run.stderr
    lines = [ln for ln in run.stderr.splitlines() if "not recorded" in ln]
    assert lines and all(
        "No space left on device" in ln or "the disk is full" in ln for ln in lines
    )
    assert "Traceback" not in run.stderr
    # What was recorded is whole: complete lines, each with its complete folder.
    results = result_lines(kept)
    assert 1 <= len(results) < 5
    for r in results:
        for name in ("events.jsonl", "session.jsonl", "changes.patch"):
            assert (kept / "tasks" / r["id"] / name).stat().st_size > 0
