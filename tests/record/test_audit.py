"""The audit log: crash-safe SQLite (WAL), shared by processes, queryable."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from codingcode.approval.pipeline import LayerResult, ToolCall
from codingcode.errors import AgentError, DeniedError, ToolTimeoutError
from codingcode.record.audit import AuditLog, CallRecord, default_audit_path
from codingcode.record.calls import reported_exit_code
from codingcode.record.migrations import MIGRATIONS, SCHEMA_VERSION
from codingcode.record.redaction import shorten
from codingcode.text import safe_text
from codingcode.workspace import Workspace


def test_records_and_queries(tmp_path: Path, project: Path) -> None:
    log = AuditLog(tmp_path / "a.db")
    call = ToolCall("read_file", {"path": "x"}, project, "s", 2)
    log.record(call, LayerResult("RuleEngine", "continue", "none"), 1.0)
    log.record(call, LayerResult("ReadonlyWhitelist", "allow", "read-only"), 2.0)
    log.record(
        ToolCall("execute_command", {"command": "sudo"}, project),
        LayerResult("RuleEngine", "deny", "R2", "R2"),
        3.0,
    )
    assert [r.decision for r in log.query()] == ["continue", "allow", "deny"]
    assert [r.tool for r in log.query(decision="deny")] == ["execute_command"]
    assert len(log.query(tool="read_*")) == 2
    assert [r.time for r in log.query(limit=1)] == [3.0]
    mode = sqlite3.connect(tmp_path / "a.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_shorten() -> None:
    assert shorten({"content": "x" * 1000})["content"].endswith("[1000 characters]")
    assert shorten(["a"] * 30)[-1] == "... [30 items]"


WRITER = """
import sys
from pathlib import Path
from codingcode.record.audit import AuditLog
from codingcode.approval.pipeline import LayerResult, ToolCall
log = AuditLog(Path(sys.argv[1]))
for i in range(50):
    log.record(ToolCall("t", {"i": i}, Path("/p"), sys.argv[2]), LayerResult("L", "allow", "r"), float(i))
"""


def test_concurrent_processes(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), f"s{n}"]) for n in range(6)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 6
    assert len(AuditLog(db).query(limit=1000)) == 300


# -- outcomes: one record per call, linked to its layer records --------------------------------
def _runner(project: Path, mode: str = "bypass") -> Any:
    from codingcode.runner import build_runner

    return build_runner(Workspace.load(project), mode=mode)


def _calls() -> list[CallRecord]:
    return AuditLog().query_calls(limit=100)


@pytest.mark.anyio
async def test_outcome_of_each_call(project: Path) -> None:
    runner = _runner(project)
    (project / "a.txt").write_text("abc\n")
    out = await runner.run("read_file", {"path": "a.txt"})
    await runner.run("execute_command", {"command": "echo 'Exit code: 9'; exit 3"})
    with pytest.raises(AgentError):
        await runner.run("read_file", {"path": "missing.txt"})
    with pytest.raises(DeniedError):
        await runner.run("execute_command", {"command": "sudo id"})
    with pytest.raises(ToolTimeoutError):
        await runner.run("execute_command", {"command": "sleep 5", "timeout_ms": 100})
    calls = _calls()
    assert [(c.tool, c.outcome) for c in calls] == [
        ("read_file", "ran"),
        ("execute_command", "ran"),
        ("read_file", "failed"),
        ("execute_command", "denied"),
        ("execute_command", "failed"),
    ]
    read, command, missing, sudo, slow = calls
    assert read.result_bytes == len(out.encode()) and read.exit_code is None
    assert (read.decision, read.layer) == ("allow", "ReadonlyWhitelist")
    # The exit code from the tool's header, not from what the command printed.
    assert command.exit_code == 3 and command.error_kind is None
    assert command.duration_ms is not None and command.duration_ms > 0
    assert missing.error_kind == "not_found" and "missing.txt" in (missing.detail or "")
    assert (sudo.decision, sudo.rule, sudo.error_kind) == ("deny", "R2", "denied")
    assert sudo.duration_ms is None  # it never ran
    assert slow.error_kind == "timeout"
    # Every layer record of a call carries its id: the call's whole story joins up.
    layers = AuditLog().query(limit=100)
    for call in calls:
        mine = [r for r in layers if r.call_id == call.call_id]
        assert mine and mine[-1].decision == call.decision and mine[-1].layer == call.layer
    assert len({c.call_id for c in calls}) == len(calls)


@pytest.mark.anyio
async def test_cancelled_call_is_recorded(project: Path) -> None:
    import anyio

    runner = _runner(project)
    with anyio.move_on_after(0.5):
        await runner.run("execute_command", {"command": "sleep 30"})
    (call,) = _calls()
    assert (call.outcome, call.error_kind) == ("cancelled", "cancelled")
    assert call.duration_ms is not None and call.duration_ms < 30_000


@pytest.mark.anyio
async def test_no_audit_no_outcome(project: Path) -> None:
    from codingcode.runner import build_runner

    runner = build_runner(Workspace.load(project), mode="bypass", audit=False)
    await runner.run("execute_command", {"command": "true"})
    assert not default_audit_path().exists()


def test_old_database_is_migrated(tmp_path: Path, project: Path) -> None:
    """A log written before versioning (no call ids, no outcomes) opens and keeps its rows."""
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        """
        CREATE TABLE approval_audit (
            id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL, session TEXT NOT NULL,
            turn INTEGER NOT NULL, tool TEXT NOT NULL, args TEXT NOT NULL, layer TEXT NOT NULL,
            decision TEXT NOT NULL, reason TEXT NOT NULL, rule TEXT, project TEXT NOT NULL);
        INSERT INTO approval_audit VALUES (1, 1.0, 's', 0, 'read_file', '{"path": "x"}',
            'ReadonlyWhitelist', 'allow', 'old', NULL, '/p');
        """
    )
    conn.close()
    log = AuditLog(db)
    assert [(r.reason, r.call_id) for r in log.query()] == [("old", None)]  # read: no change
    assert log.query_calls() == []
    call = ToolCall("read_file", {"path": "y"}, project, call_id="c1")
    log.record(call, LayerResult("ReadonlyWhitelist", "allow", "new"), 2.0)
    log.record_outcome(call, None, "ran", result_bytes=3)
    assert [(r.reason, r.call_id) for r in log.query()] == [("old", None), ("new", "c1")]
    assert [(c.call_id, c.outcome) for c in log.query_calls()] == [("c1", "ran")]
    version = sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0]
    assert version == SCHEMA_VERSION


def test_migrations_are_additive_and_idempotent(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for migrate in MIGRATIONS:
        migrate(conn)
        migrate(conn)  # a second run (two processes racing) changes nothing and fails nothing
    conn.close()


def test_surrogates_are_stored_and_read_back(tmp_path: Path, project: Path) -> None:
    log = AuditLog(tmp_path / "s.db")
    call = ToolCall("read_file", {"path": "a\udcff\ud800b"}, project, "s\udcff", call_id="c")
    log.record(call, LayerResult("RuleEngine", "deny", "no \udcff", "rule\udcff"), 1.0)
    log.record_outcome(call, None, "failed", error=AgentError("bad \udcff"))
    (rec,) = log.query()
    assert rec.args == {"path": "a\udcff\ud800b"}  # JSON escapes: the same characters again
    assert (rec.reason, rec.rule, rec.session) == ("no \\udcff", "rule\\udcff", "s\\udcff")
    assert log.query_calls()[0].detail == "bad \\udcff"


def test_reported_exit_code() -> None:
    assert reported_exit_code("Exit code: 0\n--- stdout ---\nx") == 0
    assert reported_exit_code("notice\nExit code: -9\n(no output)") == -9
    assert reported_exit_code("Timed out\n--- stdout ---\nExit code: 4") is None
    assert reported_exit_code("x" * 50_000_000) is None


# -- properties: any text, surrogates included, is stored and read back ------------------------
surrogates = st.integers(0xD800, 0xDFFF).map(chr)
#: A high surrogate then a low one, as two code points: their escapes read back as the one
#: character they encode (JSON's rule). Such strings come only from Python code: decoding
#: bytes with surrogateescape yields low surrogates alone, a model's JSON joins pairs.
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
texts = st.text(st.characters() | surrogates, max_size=30)


@given(texts)
def test_safe_text_is_valid_and_keeps_valid_text(text: str) -> None:
    out = safe_text(text)
    out.encode("utf-8")  # never raises
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        assert out != text
    else:
        assert out == text


@given(
    st.recursive(
        st.none() | st.integers() | texts,
        lambda c: st.lists(c, max_size=3) | st.dictionaries(texts, c, max_size=3),
        max_leaves=10,
    )
)
def test_json_through_safe_text_reads_back_the_same(value: Any) -> None:
    assume(not _PAIR.search(json.dumps(value, ensure_ascii=False)))
    assert json.loads(safe_text(json.dumps(value, ensure_ascii=False))) == value


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(texts, texts, max_size=4), texts)
def test_any_arguments_round_trip_through_the_log(args: dict[str, str], reason: str) -> None:
    assume(not _PAIR.search(json.dumps(args, ensure_ascii=False)))
    with tempfile.TemporaryDirectory() as tmp:
        log = AuditLog(Path(tmp) / "p.db")
        log.record(ToolCall("t", args, Path(tmp)), LayerResult("L", "deny", reason), 1.0)
        (rec,) = log.query()
        log.close()
    assert rec.args == {k: v for k, v in args.items()}
    assert rec.reason == safe_text(reason)
