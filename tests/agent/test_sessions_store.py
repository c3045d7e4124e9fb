"""The session file: written as it goes, read back whatever a crash left of it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codingcode.agent.sessions import store
from codingcode.agent.sessions.store import SessionError, SessionStore
from codingcode.agent.transcript import Message, ToolCall, ToolResult, Usage


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def conversation() -> list[Message]:
    call = ToolCall("c1", "read_file", {"path": "a"}, '{"path": "a"}')
    return [
        Message("user", "first prompt ✓"),
        Message("assistant", "", [call]),
        Message("tool", results=[ToolResult("c1", "read_file", "text", False, None)]),
        Message("assistant", "done"),
    ]


def saved(project: Path, sid: str = "20300101-000000-aaaaaa") -> SessionStore:
    s = SessionStore.create(project, sid, model="openai:m", mode="default")
    s.prompt(1, 0)
    for m in conversation():
        s.message(m)
        if m.role == "assistant":
            s.usage(Usage(10, 2), estimated=False)
    s.close()
    return s


def test_round_trip_and_summary(project: Path) -> None:
    s = saved(project)
    loaded = store.load(s.directory)
    assert loaded.history == conversation()
    # A turn is one prompt, however many responses it took.
    assert loaded.usage == Usage(20, 4) and loaded.turns == 1 and loaded.note is None
    assert loaded.prompt_marks == [(1, 0)] and loaded.last_turn == 1
    row = store.summarize(s.directory)
    assert row.first_prompt == "first prompt ✓" and row.turns == 1 and row.input_tokens == 20


def test_a_session_is_written_from_its_first_prompt(project: Path) -> None:
    s = SessionStore.create(project, "20300101-000000-bbbbbb", model="openai:m", mode="default")
    s.append({"type": "clear"})  # /clear before any prompt: nothing to save
    s.close()
    assert not s.directory.exists() and not s.written
    assert store.session_dirs(project) == []
    s.prompt(1, 0)
    s.message(Message("user", "hello"))
    s.outcome(1, "failed", "the endpoint refused the connection")
    s.close()
    row = store.summarize(s.directory)
    assert row.turns == 1 and row.outcome == "failed before any answer"
    assert "refused" in row.detail


def test_continue_skips_sessions_without_a_prompt(project: Path) -> None:
    with_prompt = saved(project, "20300101-000000-aaaaaa")
    empty = store.session_dirs(project)[0].parent / "20300101-000001-cccccc"
    empty.mkdir()
    (empty / store.FILE_NAME).write_text(
        json.dumps({"type": "start", "v": 1, "id": empty.name, "time": 1.0}) + "\n"
    )
    os.utime(empty / store.FILE_NAME)  # the newest
    assert store.session_dirs(project)[0] == empty
    assert store.latest(project) == with_prompt.directory


def test_a_session_of_the_first_format_counts_its_prompts(project: Path) -> None:
    directory = store.project_dir(project) / "20300101-000000-dddddd"
    directory.mkdir(parents=True)
    records = [{"type": "start", "v": 1, "id": directory.name, "time": 1.0}] + [
        {"type": "message", "message": m.to_json()} for m in [*conversation(), *conversation()]
    ]
    (directory / store.FILE_NAME).write_text("".join(json.dumps(r) + "\n" for r in records))
    loaded = store.load(directory)
    assert loaded.turns == 2 and loaded.prompt_marks == [(1, 0), (2, 4)]
    assert store.summarize(directory).turns == 2


def test_compaction_and_clear_records_replay(project: Path) -> None:
    s = saved(project)
    s.compaction("the gist", kept=1, reason="auto")
    s.message(Message("user", "next"))
    s.close()
    history = store.load(s.directory).history
    assert "the gist" in history[0].text and [m.text for m in history[1:]] == ["done", "next"]
    s.append({"type": "clear"})
    s.close()
    # An unknown record type (a newer version) is skipped, not an error.
    assert store.load(s.directory).history == []


def test_a_call_without_its_result_is_repaired(project: Path) -> None:
    s = SessionStore.create(project, "x1", model="m", mode="default")
    s.message(Message("user", "go"))
    s.message(Message("assistant", "", [ToolCall("c9", "execute_command", {"command": "make"})]))
    s.close()
    history = store.load(s.directory).history
    assert history[-1].role == "tool" and history[-1].results[0].call_id == "c9"
    assert history[-1].results[0].is_error


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_any_crash_point_loads_a_prefix(project: Path, cut: int) -> None:
    """Wherever a crash cut the file, what loads is a prefix of the conversation (the cut
    record skipped with a note), never an error — except before the start record."""
    import shutil

    shutil.rmtree(store.project_dir(project) / "crash", ignore_errors=True)
    s = saved(project, "crash")
    data = (s.path).read_bytes()
    cut = cut % (len(data) + 1)
    s.path.write_bytes(data[:cut])
    first_line = data.index(b"\n") + 1
    if cut < first_line - 1:
        with pytest.raises(SessionError):
            store.load(s.directory)
        return
    loaded = store.load(s.directory)
    full = conversation()
    assert len(loaded.history) <= len(full) + 1
    plain = [m for m in loaded.history if not (m.role == "tool" and m.results[0].is_error)]
    assert plain == full[: len(plain)]
    # Appending after a cut record starts on a fresh line: the file loads again.
    s2 = SessionStore(s.directory, "crash")
    s2.message(Message("user", "after the crash"))
    s2.close()
    assert store.load(s.directory).history[-1].text == "after the crash"


def test_damaged_middle_line_is_refused_with_the_line(project: Path) -> None:
    s = saved(project)
    lines = s.path.read_bytes().split(b"\n")
    lines[2] = b"{not json"
    s.path.write_bytes(b"\n".join(lines))
    with pytest.raises(SessionError, match="damaged at line 3"):
        store.load(s.directory)
    lines[2] = json.dumps({"type": "message", "message": {"role": "robot"}}).encode()
    s.path.write_bytes(b"\n".join(lines))
    with pytest.raises(SessionError, match="line 3: a message record is malformed"):
        store.load(s.directory)


def test_find_latest_fork(project: Path) -> None:
    with pytest.raises(SessionError, match="no saved session"):
        store.latest(project)
    a = saved(project, "20300101-000000-aaaaaa")
    b = saved(project, "20300102-000000-bbbbbb")
    import os

    os.utime(a.path, (1, 1))
    assert store.latest(project) == b.directory
    assert store.find(project, "20300101") == a.directory
    with pytest.raises(SessionError, match="ambiguous"):
        store.find(project, "2030")
    with pytest.raises(SessionError, match="not a session id"):
        store.find(project, "../etc")
    copy = store.fork(project, a.directory, "copy-1")
    copy.close()
    loaded = store.load(copy.directory)
    assert loaded.history == conversation() and loaded.start["parent"] == a.session_id
    assert store.load(a.directory).history == conversation()


def test_many_sessions_list_fast(project: Path) -> None:
    """20,000 sessions: listing the latest few reads only those files."""
    import time

    root = store.project_dir(project)
    root.mkdir(parents=True)
    for i in range(20_000):
        d = root / f"s{i:05d}"
        d.mkdir()
        (d / store.FILE_NAME).write_text('{"type":"start","id":"x","time":1}\n')
    began = time.perf_counter()
    dirs = store.session_dirs(project)[:20]
    rows = [store.summarize(d) for d in dirs]
    assert len(rows) == 20
    assert time.perf_counter() - began < 20  # generous: a shared, loaded machine
