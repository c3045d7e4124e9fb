"""The audit log: crash-safe SQLite (WAL), shared by processes, queryable."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from codingcode.approval.audit import AuditLog, shorten
from codingcode.approval.pipeline import LayerResult, ToolCall


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
from codingcode.approval.audit import AuditLog
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
