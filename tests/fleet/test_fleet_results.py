"""The results store: whole lines only, a crash's half line cut off, one writer at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode.fleet.results import Artifacts, ResultsStore, TaskResult
from codingcode.fleet.tasks import FleetError


def test_a_half_line_left_by_a_crash_is_cut_off(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    whole = TaskResult(id="a", status="done").model_dump_json() + "\n"
    (out / "results.jsonl").write_text(whole + '{"id": "b", "stat')
    store = ResultsStore(out)
    assert [r.id for r in store.read()] == ["a"]  # a reader skips it
    store.acquire()
    try:
        assert (out / "results.jsonl").read_text() == whole  # the writer cuts it
        store.record(TaskResult(id="b", status="failed"), Artifacts(patch=b"\x00\xff"))
    finally:
        store.release()
    assert [r.id for r in store.read()] == ["a", "b"]
    assert (out / "tasks" / "b" / "changes.patch").read_bytes() == b"\x00\xff"


def test_one_writer_at_a_time(tmp_path: Path) -> None:
    first, second = ResultsStore(tmp_path), ResultsStore(tmp_path)
    first.acquire()
    try:
        assert first.running() and second.running()
        with pytest.raises(FleetError, match="another `codingcode fleet run`"):
            second.acquire()
    finally:
        first.release()
    assert not second.running()
    second.acquire()
    second.release()
