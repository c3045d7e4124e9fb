"""AuditLog (SPEC A6): every layer's decision and every call's outcome, crash-safe, shared.

Records live in SQLite in WAL mode under the user's state directory: a crash loses at most
the record being written, never the file; concurrent codingcode processes append to it
safely (SQLite's own locking, a busy timeout instead of errors). Large argument values are
shortened before they are stored. Each layer record is also emitted as ``tool.approval.post``.

Two tables, linked by a call id (the runner makes one per call):

- ``approval_audit``: one row per layer decision (A6), as the pipeline decides;
- ``call_outcome``: one row per call the runner handled: the final decision, then what
  happened — ``ran``, ``failed``, ``cancelled`` or ``denied`` — with the error kind, a
  command's exit code where the tool reports one, the duration and the result's size.

**The audit degrades, it never breaks a call.** A damaged, locked, read-only or full
database makes the call go on without its record, and one line on stderr (once per
process) says the audit is unavailable and why. Users who would rather refuse calls than run
them unaudited set ``"audit": {"required": true}`` in a settings file: then a call whose
decision cannot be recorded is denied, saying why. After a failure the log tries the
database again after :data:`RETRY_AFTER_S` (a lock or a full disk may pass).

**Schema changes are migrations** (:data:`MIGRATIONS`, applied in order and counted in
``PRAGMA user_version``), each additive: new tables, or new columns that are nullable or
have a default. So a database of an older version opens and is brought up to date, and an
older codingcode can still write to a newer database (it names the columns it knows and
leaves the others to their defaults); if it cannot, that is one more reason the audit is
unavailable, never a crash. To add a column: append a migration, bump nothing else.
"""

from __future__ import annotations

import errno
import json
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from codingcode.approval.pipeline import LayerResult, ToolCall
from codingcode.config import user_state_dir
from codingcode.errors import AgentError, DeniedError, ErrorKind
from codingcode.record.migrations import MIGRATIONS as MIGRATIONS
from codingcode.record.migrations import SCHEMA_VERSION as SCHEMA_VERSION
from codingcode.record.redaction import MAX_DEPTH as MAX_DEPTH
from codingcode.record.redaction import MAX_VALUE_CHARS as MAX_VALUE_CHARS
from codingcode.record.redaction import REDACTED as REDACTED
from codingcode.record.redaction import redact as redact
from codingcode.record.redaction import shorten as shorten
from codingcode.text import safe_text

if TYPE_CHECKING:
    from codingcode.approval.pipeline import Decision

#: After a failure, the database is tried again after this many seconds (not on every call:
#: a lock held for minutes must not cost every call the busy timeout).
RETRY_AFTER_S = 30.0
#: How long a write waits for another process's lock before the audit counts as unavailable.
BUSY_TIMEOUT_S = 5.0

Outcome = Literal["ran", "failed", "cancelled", "denied"]


class Filters(TypedDict, total=False):
    """What :meth:`AuditLog.query` and :meth:`AuditLog.query_calls` both filter on (None or
    "": any): ``tool``, a glob on the tool's name; ``project``, the project's resolved
    root; ``limit``, the newest this many records (50 when not given)."""

    tool: str | None
    project: str | None
    limit: int


class NetworkFilters(TypedDict, total=False):
    """What :meth:`AuditLog.query_network` and :meth:`AuditLog.network_records` filter on
    (None: any): ``call_id``; ``allowed``, only allowed (True) or refused (False)
    connections; ``host``, a glob on the name; ``limit``, the newest this many (50 when not
    given)."""

    call_id: str | None
    allowed: bool | None
    host: str | None
    limit: int


def default_audit_path() -> Path:
    return user_state_dir() / "audit.db"


def _loads(text: Any) -> Any:
    """A stored JSON value, or the text itself when it is not JSON (a damaged row)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


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
    call_id: str | None = None
    #: The user's answer and the rule it granted (UserConfirmation records only).
    answer: str | None = None
    grant: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CallRecord:
    """One call: its final decision and what happened when it ran (or why it did not)."""

    id: int
    call_id: str
    time: float
    session: str
    turn: int
    tool: str
    project: str
    decision: str
    layer: str | None
    rule: str | None
    outcome: str
    error_kind: str | None
    exit_code: int | None
    duration_ms: float | None
    result_bytes: int | None
    detail: str | None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class NetworkRecord:
    """One connection attempt through the sandbox's proxy, with the call it belongs to."""

    call_id: str | None
    time: float
    method: str
    host: str
    port: int
    allowed: bool
    reason: str | None
    setting: str | None
    address: str | None
    session: str | None = None
    turn: int | None = None
    tool: str | None = None
    args: Any = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class AuditUnavailableError(AgentError):
    """The audit database cannot be read (for ``codingcode audit``)."""

    kind = ErrorKind.TOOL_FAILURE


def describe_failure(exc: BaseException, path: Path) -> str:
    """Why the audit database at ``path`` cannot be used, in words a user can act on."""
    text = str(exc)
    lowered = text.lower()
    code = getattr(exc, "errno", None)
    if "not a database" in lowered or "malformed" in lowered:
        return (
            f"{path} is not a usable SQLite database (damaged?); move it aside to start a new log"
        )
    if "locked" in lowered or "busy" in lowered:
        return f"{path} is locked by another process"
    if "full" in lowered or code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return f"the disk holding {path} is full"
    if (
        "readonly" in lowered
        or "read-only" in lowered
        or "unable to open" in lowered
        or isinstance(exc, PermissionError)
        or code in (errno.EROFS, errno.EACCES, errno.EPERM)
    ):
        return f"{path} cannot be written (a read-only or inaccessible directory?)"
    return f"{path}: {type(exc).__name__}: {safe_text(text)}"


#: Paths whose unavailability this process has reported already (one line each, ever).
_REPORTED: set[str] = set()
_REPORTED_LOCK = threading.Lock()


def _report_once(path: Path, reason: str, required: bool) -> None:
    with _REPORTED_LOCK:
        if str(path) in _REPORTED:
            return
        _REPORTED.add(str(path))
    consequence = (
        "calls are refused while it is (the settings set audit.required)"
        if required
        else "calls go on without audit records"
    )
    try:
        sys.stderr.write(f"codingcode: the audit log is unavailable: {reason}; {consequence}.\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # no stderr to say it on: nothing more we can do
        pass


class AuditLog:
    def __init__(
        self,
        path: Path | None = None,
        *,
        emit: Any = None,
        required: bool = False,
        busy_timeout: float = BUSY_TIMEOUT_S,
    ) -> None:
        self.path = Path(path) if path is not None else default_audit_path()
        self._emit = emit
        #: Refuse calls whose decision cannot be recorded (settings ``audit.required``).
        self.required = required
        self.busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        #: Why the database cannot be used now (None: it can), and when to try it again.
        self.unavailable: str | None = None
        self._retry_at = 0.0

    # -- connecting ------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=self.busy_timeout, check_same_thread=False, isolation_level=None
            )
            try:
                self._prepare(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        # Switching to WAL (first use) needs the database to itself, and SQLite does not
        # always wait for that: several processes starting at once retry briefly.
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                self._migrate(conn)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        if conn.execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION:
            return  # current, or written by a newer codingcode: use the columns we know
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for migrate in MIGRATIONS[version:]:
                migrate(conn)
            if version < SCHEMA_VERSION:
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _write(self, sql: str, row: tuple[Any, ...]) -> bool:
        """Run one INSERT; False (after saying why, once) when the database cannot be used."""
        with self._lock:
            if self.unavailable is not None and time.monotonic() < self._retry_at:
                return False
            try:
                self._connect().execute(sql, row)
            except Exception as exc:  # whatever it is, the call goes on
                self.unavailable = describe_failure(exc, self.path)
                self._retry_at = time.monotonic() + RETRY_AFTER_S
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                _report_once(self.path, self.unavailable, self.required)
                return False
            self.unavailable = None
            return True

    def _refuse(self, call: ToolCall) -> None:
        raise DeniedError(
            f"{call.tool} was not run: the audit log is unavailable ({self.unavailable}) and the "
            'settings require it ("audit": {"required": true}). Fix the audit database, or '
            "set audit.required to false to let calls run unaudited."
        )

    # -- writing ---------------------------------------------------------------------------
    def record(self, call: ToolCall, result: LayerResult, when: float) -> None:
        """Record one layer's decision. Never raises, unless the settings require the audit."""
        args = safe_text(json.dumps(shorten(redact(call.args)), ensure_ascii=False, default=str))
        answer = getattr(result, "answer", None)
        grant = getattr(result, "grant", None)
        row = (
            when,
            safe_text(call.session_id),
            call.turn_id,
            safe_text(call.tool),
            args,
            result.layer,
            result.action,
            safe_text(redact(result.reason)),
            safe_text(redact(result.rule)) if result.rule is not None else None,
            safe_text(str(call.project_path)),
            call.call_id or None,
            answer,
            safe_text(redact(grant)) if grant is not None else None,
        )
        written = self._write(
            "INSERT INTO approval_audit (time, session, turn, tool, args, layer, decision,"
            " reason, rule, project, call_id, answer, grant_rule)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            row,
        )
        if self._emit is not None:
            self._emit(
                {
                    "time": when,
                    "session": row[1],
                    "turn": call.turn_id,
                    "tool": row[3],
                    "args": json.loads(args),
                    "layer": result.layer,
                    "decision": result.action,
                    "reason": row[7],
                    "rule": row[8],
                    "call_id": row[10],
                    "answer": answer,
                    "grant": row[12],
                }
            )
        if not written and self.required and result.action != "deny":
            self._refuse(call)

    def record_outcome(
        self,
        call: ToolCall,
        decision: Decision | None,
        outcome: Outcome,
        *,
        when: float | None = None,
        error: BaseException | None = None,
        exit_code: int | None = None,
        duration_s: float | None = None,
        result_bytes: int | None = None,
    ) -> None:
        """Record what became of one call. Never raises: the call is over either way."""
        kind: str | None = None
        detail: str | None = None
        if isinstance(error, AgentError):
            kind = error.kind.value
            detail = error.message
        elif error is not None and outcome == "cancelled":
            kind = ErrorKind.CANCELLED.value
        elif error is not None:
            kind = type(error).__name__
            detail = str(error)
        if detail is not None:
            detail = safe_text(shorten(detail.strip().splitlines()[0] if detail.strip() else ""))
        row = (
            call.call_id,
            time.time() if when is None else when,
            safe_text(call.session_id),
            call.turn_id,
            safe_text(call.tool),
            safe_text(str(call.project_path)),
            decision.decision if decision is not None else "none",
            decision.layer if decision is not None else None,
            safe_text(decision.rule) if decision is not None and decision.rule else None,
            outcome,
            kind,
            exit_code,
            None if duration_s is None else round(duration_s * 1000, 3),
            result_bytes,
            detail,
        )
        self._write(
            "INSERT INTO call_outcome (call_id, time, session, turn, tool, project, decision,"
            " layer, rule, outcome, error_kind, exit_code, duration_ms, result_bytes, detail)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            row,
        )

    def record_network(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Record the sandbox proxy's connection events of one call (``ConnectionEvent.to_json``
        form). Never raises: the command is over either way."""
        for e in events:
            row = (
                safe_text(str(e.get("call") or "")) or None,
                float(e.get("when") or time.time()),
                safe_text(str(e.get("method", "")))[:20],
                safe_text(str(e.get("host", "")))[:300],
                int(e.get("port") or 0),
                1 if e.get("allowed") else 0,
                safe_text(shorten(str(e.get("reason") or ""))) or None,
                str(e.get("setting") or "") or None,
                str(e.get("address") or "") or None,
            )
            if not self._write(
                "INSERT INTO network_audit (call_id, time, method, host, port, allowed, reason,"
                " setting, address) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            ):
                return

    def query_network(self, **where: Unpack[NetworkFilters]) -> list[Any]:
        """The proxy's connection records (newest last): (call_id, time, method, host, port,
        allowed, reason, setting, address)."""
        columns = [
            "call_id", "time", "method", "host", "port", "allowed", "reason", "setting", "address",
        ]  # fmt: skip
        allowed, host = where.get("allowed"), where.get("host")
        filters = [
            ("call_id = ?", where.get("call_id")),
            ("allowed = ?", None if allowed is None else int(allowed)),
            ("host GLOB ?", None if host is None else host.lower()),
        ]
        return self._select("network_audit", columns, filters, where.get("limit", 50))

    def network_records(self, **where: Unpack[NetworkFilters]) -> list[NetworkRecord]:
        """The proxy's connection records with the call each belongs to (its session, turn,
        tool and arguments, from the call's first approval record), newest last."""
        rows = self.query_network(**where)
        calls = self._calls_by_id({r[0] for r in rows if r[0]})
        out = []
        for r in rows:
            session, turn, tool, args = calls.get(r[0] or "", (None, None, None, None))
            out.append(
                NetworkRecord(
                    call_id=r[0], time=r[1], method=r[2], host=r[3], port=r[4],
                    allowed=bool(r[5]), reason=r[6], setting=r[7], address=r[8],
                    session=session, turn=turn, tool=tool, args=args,
                )
            )  # fmt: skip
        return out

    def _calls_by_id(self, ids: set[str]) -> dict[str, tuple[Any, Any, Any, Any]]:
        if not ids or not self.path.exists():
            return {}
        found: dict[str, tuple[Any, Any, Any, Any]] = {}
        with self._reading() as conn:
            have = {row[1] for row in conn.execute("PRAGMA table_info(approval_audit)")}
            if "call_id" not in have:
                return {}
            for one in ids:  # each through the call_id index: linear in the rows shown
                row = conn.execute(
                    "SELECT session, turn, tool, args FROM approval_audit WHERE call_id = ?"
                    " ORDER BY id LIMIT 1",
                    (one,),
                ).fetchone()
                if row is not None:
                    found[one] = (row[0], row[1], row[2], _loads(row[3]))
        return found

    # -- reading ---------------------------------------------------------------------------
    def _reader(self) -> sqlite3.Connection:
        """A connection that only reads (works in a read-only directory too)."""
        uri = self.path.resolve().as_uri()
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=self.busy_timeout)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error:
            # No -shm file and no right to create one: read the file as it is.
            conn = sqlite3.connect(f"{uri}?immutable=1", uri=True)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A reading connection (:meth:`_reader`), closed after; any SQLite failure while
        reading is an AuditUnavailableError."""
        try:
            conn = self._reader()
            try:
                yield conn
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise AuditUnavailableError(
                f"cannot read the audit log: {describe_failure(exc, self.path)}."
            ) from None

    def _select(
        self, table: str, columns: list[str], filters: list[tuple[str, Any]], limit: int
    ) -> list[Any]:
        """The newest ``limit`` rows of ``table`` (oldest first) matching every filter whose
        value is not None (``("tool GLOB ?", value)``); a column the table lacks (an older
        log) reads as NULL."""
        where = [clause for clause, value in filters if value is not None]
        params = [value for _, value in filters if value is not None]
        if not self.path.exists():
            return []
        with self._reading() as conn:
            have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            if not have:
                return []
            shown = ", ".join(c if c in have else f"NULL AS {c}" for c in columns)
            sql = f"SELECT {shown} FROM {table}"
            if where:
                sql += " WHERE " + " AND ".join(where)
            sql += " ORDER BY id DESC LIMIT ?"
            rows = conn.execute(sql, [*params, limit]).fetchall()
        return list(reversed(rows))

    def _matching(
        self, table: str, columns: list[str], where: Filters, **equal: str | None
    ) -> list[tuple[Any, ...]]:
        """The rows of ``table`` that ``where`` and ``equal`` (column: value, None or "":
        any) pick, newest last."""
        filters = [("tool GLOB ?", where.get("tool") or None)]
        equal["project"] = where.get("project")
        filters += [(f"{column} = ?", value or None) for column, value in equal.items()]
        return self._select(table, columns, filters, where.get("limit", 50))

    def query(self, *, decision: str | None = None, **where: Unpack[Filters]) -> list[AuditRecord]:
        """One record per layer decision, newest last."""
        columns = [
            "id", "time", "session", "turn", "tool", "args", "layer", "decision", "reason",
            "rule", "project", "call_id", "answer", "grant_rule",
        ]  # fmt: skip
        rows = self._matching("approval_audit", columns, where, decision=decision)
        return [AuditRecord(*(*r[:5], _loads(r[5]), *r[6:])) for r in rows]

    def query_calls(
        self, *, outcome: str | None = None, **where: Unpack[Filters]
    ) -> list[CallRecord]:
        """One record per call: the final decision and the outcome, newest last."""
        columns = [
            "id", "call_id", "time", "session", "turn", "tool", "project", "decision", "layer",
            "rule", "outcome", "error_kind", "exit_code", "duration_ms", "result_bytes", "detail",
        ]  # fmt: skip
        rows = self._matching("call_outcome", columns, where, outcome=outcome)
        return [CallRecord(*r) for r in rows]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
