"""`codingcode audit --network` (issue 16): the proxy's connection attempts, allowed and
refused, each with the call it belongs to; filters and `--json` as the rest of `audit`.

The real process runs the listing, the large log and the damaged log; the many filter and
refusal queries run the same command code in this process (``run_cli_in_process``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from codingcode.approval.call import LayerResult, ToolCall
from codingcode.record.audit import AuditLog
from tests.conftest import run_cli, run_cli_in_process

NOT_LISTED = "sandbox.network.allowedDomains"


def fill(project: Path) -> None:
    """Two calls with their approval records and their proxy's events (the real log)."""
    log = AuditLog()
    for call_id, command in (("c-npm", "npm install left-pad"), ("c-curl", "curl evil.test")):
        call = ToolCall(
            "execute_command",
            {"command": command},
            project,
            session_id="s1",
            turn_id=3,
            call_id=call_id,
        )
        log.record(call, LayerResult("RuleEngine", "allow", "a rule"), time.time())
    log.record_network(
        [
            {"call": "c-npm", "method": "CONNECT", "host": "registry.npmjs.org", "port": 443,
             "allowed": True, "address": "104.16.0.35", "when": 10.0},
            {"call": "c-curl", "method": "GET", "host": "evil.test", "port": 80,
             "allowed": False, "reason": f"evil.test is not in {NOT_LISTED}",
             "setting": NOT_LISTED, "when": 11.0},
            {"call": "gone", "method": "CONNECT", "host": "pypi.org", "port": 443,
             "allowed": False, "reason": "x", "setting": NOT_LISTED, "when": 12.0},
        ]
    )  # fmt: skip
    log.close()


def test_network_rows_show_the_verdict_and_the_call(project: Path) -> None:
    fill(project)
    r = run_cli(["audit", "--network"], cwd=project)
    assert r.code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3
    npm, curl, orphan = lines
    assert "allowed" in npm and "CONNECT registry.npmjs.org:443 (104.16.0.35)" in npm
    assert "[s1#3 execute_command c-npm: npm install left-pad]" in npm
    assert "refused" in curl and "GET     evil.test:80" in curl
    assert f"evil.test is not in {NOT_LISTED}" in curl and ": curl evil.test]" in curl
    assert "pypi.org:443" in orphan and "[call gone]" in orphan  # its call left no record


def test_network_filters_and_json(project: Path) -> None:
    fill(project)
    r = run_cli_in_process(["audit", "--network", "--json", "--decision", "deny"], cwd=project)
    assert r.code == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["host"], x["allowed"]) for x in rows] == [("evil.test", False), ("pypi.org", False)]
    assert rows[0]["call_id"] == "c-curl" and rows[0]["tool"] == "execute_command"
    assert rows[0]["args"] == {"command": "curl evil.test"} and rows[0]["setting"] == NOT_LISTED
    r = run_cli_in_process(["audit", "--network", "--json", "--host", "*.npmjs.org"], cwd=project)
    assert [json.loads(x)["host"] for x in r.stdout.splitlines()] == ["registry.npmjs.org"]
    r = run_cli_in_process(["audit", "--network", "--json", "--call", "c-curl"], cwd=project)
    assert [json.loads(x)["host"] for x in r.stdout.splitlines()] == ["evil.test"]
    r = run_cli_in_process(["audit", "--network", "--limit", "1"], cwd=project)
    assert len(r.stdout.splitlines()) == 1 and "pypi.org" in r.stdout  # the newest
    r = run_cli_in_process(["audit", "--network", "--decision", "allow"], cwd=project)
    assert len(r.stdout.splitlines()) == 1 and "registry.npmjs.org" in r.stdout


def test_network_options_that_do_not_go_together_say_so(project: Path) -> None:
    for args, words in (
        (["--network", "--decision", "ask"], "allow (connected) or deny (refused)"),
        (["--network", "--calls"], "--calls, --outcome and --tool do not apply"),
        (["--host", "x"], "--host and --call go with --network"),
    ):
        r = run_cli_in_process(["audit", *args], cwd=project)
        assert r.code != 0 and words in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr


def test_no_network_records_says_so(project: Path) -> None:
    r = run_cli_in_process(["audit", "--network"], cwd=project)
    assert r.code == 0 and r.stdout == "" and "no network records" in r.stderr
    r = run_cli_in_process(["audit", "--network", "--json"], cwd=project)
    assert r.code == 0 and r.stdout == ""


def test_a_large_network_log_is_shown_in_linear_time(project: Path) -> None:
    log = AuditLog()
    events = [
        {"call": f"c{i % 500}", "method": "CONNECT", "host": f"h{i}.test", "port": 443,
         "allowed": i % 2 == 0, "when": float(i)}
        for i in range(20_000)
    ]  # fmt: skip
    log.record_network(events)
    log.close()
    start = time.perf_counter()
    r = run_cli(["audit", "--network", "--json", "--limit", "20000"], cwd=project, timeout=120)
    took = time.perf_counter() - start
    assert r.code == 0, r.stderr
    assert len(r.stdout.splitlines()) == 20_000
    assert took < 60, took


def test_a_damaged_audit_log_is_one_clear_line(project: Path, tmp_path: Path) -> None:
    import os

    state = Path(os.environ["CODINGCODE_STATE_DIR"])
    state.mkdir(parents=True, exist_ok=True)
    (state / "audit.db").write_bytes(b"this is not a database" * 100)
    r = run_cli(["audit", "--network"], cwd=project)
    assert r.code != 0
    assert "cannot read the audit log" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
