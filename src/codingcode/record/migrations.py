"""The audit database's schema, as migrations (see ``codingcode.record.audit``).

Applied in order and counted in ``PRAGMA user_version``; each is additive (new tables, or
new columns that are nullable or have a default), so an older database is brought up to
date and an older codingcode can still write to a newer one. To add a column: append a
migration, bump nothing else.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


def _script(conn: sqlite3.Connection, script: str) -> None:
    # Statement by statement: ``executescript`` would commit the migration's transaction.
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _add_column(conn: sqlite3.Connection, table: str, column: str, decl: str) -> None:
    have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    if column not in have:
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")


def _v1(conn: sqlite3.Connection) -> None:
    # The layer records. IF NOT EXISTS: a database from before versioning already has them.
    _script(
        conn,
        """
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
        """,
    )


def _v2(conn: sqlite3.Connection) -> None:
    # Call ids link a call's layer records to its outcome.
    _add_column(conn, "approval_audit", "call_id", "TEXT")
    _script(
        conn,
        """
        CREATE INDEX IF NOT EXISTS approval_audit_call ON approval_audit (call_id);
        CREATE TABLE IF NOT EXISTS call_outcome (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            call_id TEXT NOT NULL,
            time REAL NOT NULL,
            session TEXT NOT NULL,
            turn INTEGER NOT NULL,
            tool TEXT NOT NULL,
            project TEXT NOT NULL,
            decision TEXT NOT NULL,
            layer TEXT,
            rule TEXT,
            outcome TEXT NOT NULL,
            error_kind TEXT,
            exit_code INTEGER,
            duration_ms REAL,
            result_bytes INTEGER,
            detail TEXT
        );
        CREATE INDEX IF NOT EXISTS call_outcome_call ON call_outcome (call_id);
        CREATE INDEX IF NOT EXISTS call_outcome_tool ON call_outcome (tool);
        """,
    )


def _v3(conn: sqlite3.Connection) -> None:
    # The user's answer (once, session, always (project), always (user), no) and the rule
    # it granted, on the UserConfirmation record (issue 13).
    _add_column(conn, "approval_audit", "answer", "TEXT")
    _add_column(conn, "approval_audit", "grant_rule", "TEXT")


def _v4(conn: sqlite3.Connection) -> None:
    # Every connection attempt through the sandbox's network proxy, allowed or refused,
    # with the call it belongs to (issue 16).
    _script(
        conn,
        """
        CREATE TABLE IF NOT EXISTS network_audit (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            call_id TEXT,
            time REAL NOT NULL,
            method TEXT NOT NULL,
            host TEXT NOT NULL,
            port INTEGER NOT NULL,
            allowed INTEGER NOT NULL,
            reason TEXT,
            setting TEXT,
            address TEXT
        );
        CREATE INDEX IF NOT EXISTS network_audit_call ON network_audit (call_id);
        """,
    )


#: MIGRATIONS[i] brings a database from version i to i + 1. Append only; each one additive.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_v1, _v2, _v3, _v4]
SCHEMA_VERSION = len(MIGRATIONS)
