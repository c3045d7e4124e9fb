"""AuditLog (SPEC A6): one record per layer decision, crash-safe, shared by processes.

Records live in SQLite in WAL mode under the user's state directory: a crash loses at most
the record being written, never the file; concurrent codingcode processes append to it
safely (SQLite's own locking, a busy timeout instead of errors). Large argument values are
shortened before they are stored. Each record is also emitted as ``tool.approval.post``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codingcode.approval.pipeline import LayerResult, ToolCall
from codingcode.config import user_state_dir

MAX_VALUE_CHARS = 200
_SCHEMA = """
CREATE TABLE IF NOT EXISTS approval_audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    session TEXT NOT NULL,
    turn INTEGER NOT NULL,
    tool TEXT NOT NULL,
    args TEXT NOT NULL,
    layer TEXT NOT NULL,
    decision TEXT NOT NULL,
    reason TEXT NOT NULL,
    rule TEXT,
    project TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS approval_audit_tool ON approval_audit (tool);
CREATE INDEX IF NOT EXISTS approval_audit_decision ON approval_audit (decision);
"""


def default_audit_path() -> Path:
    return user_state_dir() / "audit.db"


def shorten(value: Any, limit: int = MAX_VALUE_CHARS) -> Any:
    """Arguments as stored: long strings cut with their full length said."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return value[:limit] + f"... [{len(value)} characters]"
    if isinstance(value, dict):
        return {k: shorten(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        shown = [shorten(v, limit) for v in value[:20]]
        if len(value) > 20:
            shown.append(f"... [{len(value)} items]")
        return shown
    return value


@dataclass(frozen=True)
class AuditRecord:
    id: int
    time: float
    session: str
    turn: int
    tool: str
    args: dict[str, Any]
    layer: str
    decision: str
    reason: str
    rule: str | None
    project: str

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class AuditLog:
    def __init__(self, path: Path | None = None, *, emit: Any = None) -> None:
        self.path = Path(path) if path is not None else default_audit_path()
        self._emit = emit
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=10, check_same_thread=False)
            # Switching to WAL (first use) needs the database to itself, and SQLite does not
            # always wait for that: several processes starting at once retry briefly.
            deadline = time.monotonic() + 10
            while True:
                try:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.execute("PRAGMA synchronous=NORMAL")
                    conn.executescript(_SCHEMA)
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() > deadline:
                        conn.close()
                        raise
                    time.sleep(0.02)
            self._conn = conn
        return self._conn

    def record(self, call: ToolCall, result: LayerResult, when: float) -> None:
        args = json.dumps(shorten(call.args), ensure_ascii=False, default=str)
        row = (
            when,
            call.session_id,
            call.turn_id,
            call.tool,
            args,
            result.layer,
            result.action,
            result.reason,
            result.rule,
            str(call.project_path),
        )
        with self._lock:
            conn = self._connect()
            with conn:
                conn.execute(
                    "INSERT INTO approval_audit (time, session, turn, tool, args, layer, decision,"
                    " reason, rule, project) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
        if self._emit is not None:
            self._emit(
                {
                    "time": when,
                    "session": call.session_id,
                    "turn": call.turn_id,
                    "tool": call.tool,
                    "args": json.loads(args),
                    "layer": result.layer,
                    "decision": result.action,
                    "reason": result.reason,
                    "rule": result.rule,
                }
            )

    def query(
        self, *, decision: str | None = None, tool: str | None = None, limit: int = 50
    ) -> list[AuditRecord]:
        if not self.path.exists():
            return []
        where, params = [], []
        if decision:
            where.append("decision = ?")
            params.append(decision)
        if tool:
            where.append("tool GLOB ?")
            params.append(tool)
        sql = "SELECT id, time, session, turn, tool, args, layer, decision, reason, rule, project FROM approval_audit"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT ?"
        with self._lock:
            rows = self._connect().execute(sql, [*params, limit]).fetchall()
        return [
            AuditRecord(
                r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6], r[7], r[8], r[9], r[10]
            )
            for r in reversed(rows)
        ]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
