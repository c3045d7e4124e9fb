"""Bytes that are not UTF-8 (a file name, argv, stdin, a model's escaped lone surrogate) reach
the audit, the JSON output and the model's wire format: nothing crashes, nothing is lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codingcode.record.audit import AuditLog
from tests.agent.fake_model import FakeModelServer, Step, tool_results

pytestmark = pytest.mark.e2e


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "CODINGCODE_"))
    }
    env["CODINGCODE_STATE_DIR"] = str(tmp_path / "state")
    env["CODINGCODE_CONFIG_DIR"] = str(tmp_path / "cfg")
    return env


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def cc(
    args: list[bytes | str], project: Path, env: dict[str, str], stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "codingcode", *args],
        cwd=project,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=60,
    )


def test_tool_with_a_non_utf8_file_name_is_audited(project: Path, env: dict[str, str]) -> None:
    (project / os.fsdecode(b"caf\xe9.txt")).write_text("bonjour\n")
    r = cc(["tool", "read_file", b'{"path": "caf\xe9.txt"}'], project, env)
    assert r.returncode == 0, r.stderr
    assert b"bonjour" in r.stdout and b"Traceback" not in r.stderr
    r = cc(["tool", "read_file", "-"], project, env, stdin=b'{"path": "caf\xe9.txt"}')
    assert r.returncode == 0, r.stderr
    r = cc(["audit", "--json"], project, env)
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in r.stdout.decode().splitlines()]
    # The audit keeps the very name (its JSON escape reads back as the same character).
    assert {rec["args"]["path"] for rec in records} == {os.fsdecode(b"caf\xe9.txt")}
    r = cc(["audit", "--calls"], project, env)
    assert r.returncode == 0 and r.stdout.decode().count(" ran ") == 2, r.stdout
    records = AuditLog(Path(env["CODINGCODE_STATE_DIR"]) / "audit.db").query()
    assert len(records) == 4


def test_check_and_a_missing_file_print_valid_text(project: Path, env: dict[str, str]) -> None:
    r = cc(["check", "read_file", b'{"path": "x\xff"}'], project, env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.decode())["decision"] == "allow"
    r = cc(["tool", "read_file", b'{"path": "x\xff"}'], project, env)
    # The file tools show an undecodable byte as the byte it is (\xff), in valid text.
    assert r.returncode == 1 and r.stderr.startswith(b"error: File not found: x\\xff")


def test_run_with_a_non_utf8_prompt(
    project: Path, env: dict[str, str], fake: FakeModelServer
) -> None:
    env |= fake.env("openai")
    env["CODINGCODE_MODEL"] = "openai:fake-model"
    fake.script = [
        # The model escapes a lone surrogate in its arguments: the result goes back valid.
        Step(tool_calls=[("read_file", {"path": "gone\udcff.txt"})]),
        Step(text="done \udcff"),
    ]
    r = cc(["run", b"look at caf\xe9"], project, env)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    assert r.stdout.decode().strip() == "done \\udcff"
    bodies = fake.bodies()
    assert bodies[0]["messages"][-1]["content"] == "look at caf\\udce9"
    assert "gone\\xff.txt" in tool_results(bodies[1])[-1][0]
    fake.script = [Step(text="ok \udcff")]
    r = cc(["run", "-", "--json"], project, env, stdin=b"from stdin \xff")
    assert r.returncode == 0, r.stderr
    payload = json.loads(r.stdout.decode())
    assert payload["answer"] == "ok \udcff"
