"""The audit database fails in every way a file can; every tool call still ends cleanly.

A garbage file, a database another process holds locked, a read-only state directory, a
full disk, a database of a newer version: the call goes on (or, with ``audit.required``,
is refused saying why), one line on stderr names the problem, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codingcode.approval.pipeline import LayerResult, ToolCall
from codingcode.record import audit as audit_module
from codingcode.record.audit import AuditLog
from tests.conftest import CliResult, run_cli


@pytest.fixture(autouse=True)
def _fresh_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    # "once per process": each test is its own process as far as the report goes.
    monkeypatch.setattr(audit_module, "_REPORTED", set())


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


def env_for(state: Path, tmp_path: Path) -> dict[str, str]:
    return {"CODINGCODE_STATE_DIR": str(state), "CODINGCODE_CONFIG_DIR": str(tmp_path / "cfg")}


def read_x(project: Path, env: dict[str, str], **kw: object) -> CliResult:
    (project / "x.txt").write_text("hello\n")
    return run_cli(["tool", "read_file", '{"path": "x.txt"}'], cwd=project, env=env, **kw)  # type: ignore[arg-type]


def assert_degraded(r: CliResult, why: str) -> None:
    assert r.code == 0, r.stderr
    assert "hello" in r.stdout
    assert "Traceback" not in r.stderr
    lines = [line for line in r.stderr.splitlines() if "audit" in line]
    assert len(lines) == 1, r.stderr
    assert "the audit log is unavailable" in lines[0] and why in lines[0], lines[0]
    assert "calls go on without audit records" in lines[0]


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "64k") -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_garbage_file_as_database(project: Path, state: Path, tmp_path: Path) -> None:
    (state / "audit.db").write_bytes(b"this is not a database\n" * 100)
    r = read_x(project, env_for(state, tmp_path))
    assert_degraded(r, "not a usable SQLite database")
    # The damaged file is left as it was (the user may want it), and reading it is one line.
    assert (state / "audit.db").read_bytes() == b"this is not a database\n" * 100
    r = run_cli(["audit"], cwd=project, env=env_for(state, tmp_path))
    assert r.code == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("error: cannot read the audit log:"), r.stderr


HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("BEGIN EXCLUSIVE")
conn.execute("CREATE TABLE IF NOT EXISTS hold (x)")
print("locked", flush=True)
time.sleep(120)
"""


def test_database_locked_by_another_process(project: Path, state: Path, tmp_path: Path) -> None:
    db = state / "audit.db"
    AuditLog(db).record(  # an existing, healthy log
        ToolCall("t", {}, project), LayerResult("L", "allow", "r"), 1.0
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        r = read_x(project, env_for(state, tmp_path), timeout=120)
        took = time.monotonic() - started
        assert_degraded(r, "locked by another process")
        # One busy timeout for the whole call, not one per layer record.
        assert took < audit_module.BUSY_TIMEOUT_S * 2 + 20
    finally:
        holder.kill()
        holder.wait()
    assert len(AuditLog(db).query()) == 1


def test_lock_costs_one_wait_then_retries_later(
    project: Path, state: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = state / "audit.db"
    log = AuditLog(db, busy_timeout=0.3)
    call = ToolCall("t", {}, project)
    log.record(call, LayerResult("L", "allow", "before"), 1.0)
    log.close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    started = time.monotonic()
    for i in range(20):
        log.record(call, LayerResult("L", "allow", f"during {i}"), 2.0)
    assert time.monotonic() - started < 3  # one wait, then the log skips until the retry
    assert log.unavailable is not None and "locked" in log.unavailable
    holder.execute("ROLLBACK")
    holder.close()
    monkeypatch.setattr(log, "_retry_at", 0.0)  # the retry time has come
    log.record(call, LayerResult("L", "allow", "after"), 3.0)
    assert log.unavailable is None
    assert [r.reason for r in log.query()] == ["before", "after"]
    assert capsys.readouterr().err.count("the audit log is unavailable") == 1


def test_read_only_state_dir(project: Path, tmp_path: Path) -> None:
    state = tmp_path / "ro-state"
    with tmpfs(state):
        subprocess.run(["mount", "-o", "remount,ro", str(state)], check=True)
        r = read_x(project, env_for(state, tmp_path))
    assert_degraded(r, "cannot be written")


def test_read_only_state_dir_still_reads_the_log(project: Path, tmp_path: Path) -> None:
    state = tmp_path / "ro-state"
    with tmpfs(state, "1m"):
        log = AuditLog(state / "audit.db")
        log.record(ToolCall("t", {"a": 1}, project), LayerResult("L", "deny", "kept"), 1.0)
        log.close()
        subprocess.run(["mount", "-o", "remount,ro", str(state)], check=True)
        r = run_cli(["audit", "--json"], cwd=project, env=env_for(state, tmp_path))
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["reason"] == "kept"


def test_full_disk(project: Path, tmp_path: Path) -> None:
    state = tmp_path / "full-state"
    with tmpfs(state, "256k"):
        log = AuditLog(state / "audit.db")
        log.record(ToolCall("t", {}, project), LayerResult("L", "allow", "r"), 1.0)
        log.close()
        with contextlib.suppress(OSError), open(state / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        env = env_for(state, tmp_path)
        results = [read_x(project, env) for _ in range(2)]
    for r in results:
        assert_degraded(r, "full")


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))


def test_file_size_limit(project: Path, state: Path, tmp_path: Path) -> None:
    """RLIMIT_FSIZE: the other way a disk runs out (works without mount rights)."""
    (project / "x.txt").write_text("hello\n")
    env = {**os.environ, **env_for(state, tmp_path)}
    r = subprocess.run(
        [sys.executable, "-m", "codingcode", "tool", "read_file", '{"path": "x.txt"}'],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        preexec_fn=_limit_file_size,
        timeout=60,
    )
    assert_degraded(CliResult(r.returncode, r.stdout, r.stderr), "audit.db")


def test_required_audit_refuses_calls(project: Path, state: Path, tmp_path: Path) -> None:
    (state / "audit.db").write_bytes(b"garbage")
    env = env_for(state, tmp_path)
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "settings.json").write_text('{"audit": {"required": true}}')
    r = run_cli(
        ["tool", "execute_command", '{"command": "touch made"}', "--mode", "bypass"],
        cwd=project,
        env=env,
    )
    assert r.code == 1 and "Traceback" not in r.stderr
    assert "the audit log is unavailable" in r.stderr and "audit.required" in r.stderr
    assert not (project / "made").exists()
    (tmp_path / "cfg" / "settings.json").write_text('{"audit": {"required": "yes"}}')
    r = read_x(project, env)
    assert r.code == 2 and '"audit" must be an object' in r.stderr


def test_required_audit_cannot_be_lifted_by_a_later_file(project: Path, state: Path) -> None:
    from codingcode.config import audit_required, load_settings

    os.environ["CODINGCODE_STATE_DIR"] = str(state)
    cfg = Path(os.environ["CODINGCODE_CONFIG_DIR"])
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "settings.json").write_text('{"audit": {"required": true}}')
    (project / ".codingcode").mkdir()
    (project / ".codingcode" / "settings.json").write_text('{"audit": {"required": false}}')
    assert audit_required(load_settings(project))


def test_database_of_a_newer_version(project: Path, state: Path, tmp_path: Path) -> None:
    db = state / "audit.db"
    AuditLog(db).record(ToolCall("t", {}, project), LayerResult("L", "allow", "r"), 1.0)
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE approval_audit ADD COLUMN from_the_future TEXT")  # additive, nullable
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    r = read_x(project, env_for(state, tmp_path))
    assert r.code == 0 and r.stderr == "", r.stderr
    assert len(AuditLog(db).query(limit=100)) == 3  # the old record and this call's two
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == 99
    # A newer version that broke the rules (a NOT NULL column we cannot fill): still one line.
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE call_outcome")
    conn.execute("CREATE TABLE call_outcome (id INTEGER PRIMARY KEY, must TEXT NOT NULL)")
    conn.commit()
    conn.close()
    r = read_x(project, env_for(state, tmp_path))
    assert_degraded(r, "audit.db")
