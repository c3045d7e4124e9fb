"""The audit at 20,000 calls: per-call cost stays flat, and a query stays fast.

Each call writes what a real one does (four layer records and one outcome). Prints the cost
per call for the first and the last 2,000 calls (linear: the ratio stays near 1), against a
bare SQLite insert of the same rows in the same run, and the time of ``audit --calls``'s
query over the whole log.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path

from codingcode.approval.pipeline import Decision, LayerResult, ToolCall
from codingcode.record.audit import AuditLog

CALLS = 20_000
WINDOW = 2_000


def audited(db: Path) -> list[float]:
    log = AuditLog(db)
    times = []
    for i in range(CALLS):
        start = time.perf_counter()
        call = ToolCall("execute_command", {"command": f"echo {i}"}, Path("/p"), call_id=f"c{i}")
        for layer in ("RuleEngine", "ReadonlyWhitelist", "PermissionMode"):
            log.record(call, LayerResult(layer, "continue", "no rule matches"), time.time())
        final = LayerResult("UserConfirmation", "allow", "the user answered allow")
        log.record(call, final, time.time())
        decision = Decision("allow", final.layer, final.reason, None, call.args)
        log.record_outcome(call, decision, "ran", exit_code=0, duration_s=0.01, result_bytes=20)
        times.append(time.perf_counter() - start)
    log.close()
    return times


def bare(db: Path) -> float:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE t (a, b, c, d, e, f, g, h, i, j, k)")
    start = time.perf_counter()
    for i in range(WINDOW):
        for _ in range(5):
            conn.execute("INSERT INTO t VALUES (?,?,?,?,?,?,?,?,?,?,?)", (i,) * 11)
    conn.close()
    return (time.perf_counter() - start) / WINDOW


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    reference = bare(base / "bare.db")
    times = audited(base / "audit.db")
    first = sum(times[:WINDOW]) / WINDOW
    last = sum(times[-WINDOW:]) / WINDOW
    log = AuditLog(base / "audit.db")
    start = time.perf_counter()
    calls = log.query_calls(limit=50)
    query = time.perf_counter() - start
    start = time.perf_counter()
    denied = log.query_calls(outcome="denied", limit=50)
    scan = time.perf_counter() - start
    assert len(calls) == 50 and not denied
    print(
        f"{CALLS} audited calls: {first * 1e6:.0f} us/call for the first {WINDOW}, "
        f"{last * 1e6:.0f} us/call for the last (ratio {last / first:.2f}); "
        f"bare SQLite, same 5 rows: {reference * 1e6:.0f} us/call (ratio {first / reference:.1f}x)"
    )
    print(
        f"audit --calls over {CALLS} calls: {query * 1e3:.1f} ms; filtered scan: {scan * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
