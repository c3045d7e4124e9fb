"""One audit record per call, with every layer's decision and the outcome (issue 19): through
the real command for a call that ran, one that failed, one denied and one cancelled by
Ctrl-C (SIGINT) while its command ran; and in the library for a call cancelled while it was
still being decided (a question nobody answers), which must not leave the call unrecorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from codingcode.errors import DeniedError
from codingcode.record.audit import AuditLog
from codingcode.workspace import Workspace

pytestmark = [pytest.mark.timeout(180)]
CODINGCODE = str(Path(sys.executable).parent / "codingcode")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    values = {
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
    }
    return {**os.environ, **values}


def cc(args: list[str], project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CODINGCODE, *args], cwd=project, env=env, capture_output=True, text=True, timeout=90
    )


def _sleep_running(marker: bytes) -> bool:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\0" + marker + b"\0":
                    return True
            except OSError:
                continue
    return False


def _interrupted_call(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`codingcode tool execute_command 'sleep …'` stopped by SIGINT while the sleep runs."""
    marker = b"%d.25" % (time.monotonic_ns() % 100_000 + 60)  # a sleep no one else runs
    argv = [
        CODINGCODE,
        "tool",
        "execute_command",
        json.dumps({"command": f"sleep {marker.decode()}"}),
    ]
    proc = subprocess.Popen(
        [*argv, "--mode", "bypass"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not _sleep_running(marker):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert not _sleep_running(marker), "the command outlived its cancelled call"
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def test_each_call_has_one_record_with_its_layers_and_outcome(
    project: Path, env: dict[str, str]
) -> None:
    (project / "a.txt").write_text("hello\n")
    ran = cc(["tool", "read_file", '{"path": "a.txt"}'], project, env)
    assert ran.returncode == 0, ran.stderr
    exited = cc(
        ["tool", "execute_command", '{"command": "exit 3"}', "--mode", "bypass"], project, env
    )
    failed = cc(["tool", "read_file", '{"path": "missing.txt"}'], project, env)
    assert failed.returncode == 1 and "missing.txt" in failed.stderr
    denied = cc(
        ["tool", "execute_command", '{"command": "sudo id"}', "--mode", "bypass"], project, env
    )
    assert denied.returncode == 1 and "denied" in denied.stderr
    cancelled = _interrupted_call(project, env)
    assert cancelled.returncode == 130, cancelled
    assert "Traceback" not in ran.stderr + exited.stderr + failed.stderr + denied.stderr
    assert "Traceback" not in cancelled.stderr

    listing = cc(["audit", "--calls", "--json", "--limit", "100"], project, env)
    assert listing.returncode == 0, listing.stderr
    calls = [json.loads(line) for line in listing.stdout.splitlines()]
    assert [(c["tool"], c["outcome"]) for c in calls] == [
        ("read_file", "ran"),
        ("execute_command", "ran"),
        ("read_file", "failed"),
        ("execute_command", "denied"),
        ("execute_command", "cancelled"),
    ]
    read, exit3, missing, sudo, stopped = calls
    # What came of each: bytes, duration, exit code, error kind.
    assert (
        read["result_bytes"] == len(ran.stdout.encode()) - 1
    )  # the printed result, its newline not
    assert read["duration_ms"] is not None and read["duration_ms"] >= 0
    assert read["exit_code"] is None and read["error_kind"] is None
    assert exit3["exit_code"] == 3 and exit3["duration_ms"] > 0
    assert missing["error_kind"] == "not_found" and "missing.txt" in missing["detail"]
    assert (sudo["decision"], sudo["rule"], sudo["duration_ms"]) == ("deny", "R2", None)
    assert stopped["error_kind"] == "cancelled" and stopped["decision"] == "allow"
    assert stopped["duration_ms"] is not None and stopped["duration_ms"] < 60_000

    # Every layer's decision, joined to its call by the call id.
    layers = [
        json.loads(line)
        for line in cc(["audit", "--json", "--limit", "1000"], project, env).stdout.splitlines()
    ]
    for call in calls:
        mine = [r for r in layers if r["call_id"] == call["call_id"]]
        assert mine, call
        assert (mine[-1]["decision"], mine[-1]["layer"]) == (call["decision"], call["layer"])
    by_call = {c["call_id"]: [r for r in layers if r["call_id"] == c["call_id"]] for c in calls}
    # bypass mode: the rules continued, the permission mode allowed (three layers' words)
    assert [(r["layer"], r["decision"]) for r in by_call[exit3["call_id"]]] == [
        ("RuleEngine", "continue"),
        ("ReadonlyWhitelist", "continue"),
        ("PermissionMode", "allow"),
    ]
    assert len(set(by_call)) == len(calls)

    # The text listing says the same, one line per call.
    text = cc(["audit", "--calls"], project, env).stdout.splitlines()
    assert len(text) == 5
    assert " ran " in text[1] and "exit 3" in text[1]
    assert " cancelled " in text[4] and "cancelled" in text[4]


class _NobodyAnswers:
    async def confirm(self, request: Any) -> Any:
        await anyio.sleep_forever()


@pytest.mark.anyio
async def test_a_call_cancelled_while_it_is_asked_is_recorded(project: Path) -> None:
    from codingcode.runner import build_runner

    runner = build_runner(Workspace.load(project), mode="default", confirmer=_NobodyAnswers())
    with anyio.move_on_after(1.0) as scope:
        await runner.run("write_file", {"path": "new.txt", "content": "x"})
    assert scope.cancelled_caught
    assert not (project / "new.txt").exists()
    (call,) = AuditLog().query_calls()
    assert (call.tool, call.outcome, call.error_kind) == ("write_file", "cancelled", "cancelled")
    assert call.duration_ms is None  # it never ran
    layers = [r for r in AuditLog().query(limit=100) if r.call_id == call.call_id]
    assert layers and all(r.decision == "continue" for r in layers)


@pytest.mark.anyio
async def test_a_call_refused_before_any_decision_is_recorded(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A layer that fails (here: a confirmation that raises) leaves a record too."""
    from codingcode.runner import build_runner

    class Refuses:
        async def confirm(self, request: Any) -> Any:
            raise DeniedError("the user closed the prompt")

    runner = build_runner(Workspace.load(project), mode="default", confirmer=Refuses())
    with pytest.raises(DeniedError):
        await runner.run("write_file", {"path": "new.txt", "content": "x"})
    (call,) = AuditLog().query_calls()
    assert (call.outcome, call.error_kind) == ("denied", "denied")
    assert "closed the prompt" in (call.detail or "")


def test_ctrl_c_during_start_up_is_one_line_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGINT while the command still starts (imports, option parsing) once printed a
    traceback of typer's internals; now it is one line and exit 130, as later."""
    import codingcode.cli
    from codingcode.__main__ import main

    def interrupted(*_: object) -> list[str]:
        raise KeyboardInterrupt

    monkeypatch.setattr(codingcode.cli, "hoist_global_options", interrupted)
    monkeypatch.setattr(sys, "argv", ["codingcode", "tools"])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 130
    assert capsys.readouterr().err == "Interrupted.\n"
