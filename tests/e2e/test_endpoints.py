"""A dead or mistyped model endpoint fails fast with one line; every retry is shown."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step
from tests.e2e.test_agent_run import env_for, run

pytestmark = pytest.mark.e2e


def refused_url() -> str:
    """An address where nothing listens (a port just freed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_a_refused_connection_fails_fast_showing_each_retry(project: Path, tmp_path: Path) -> None:
    fake = FakeModelServer()
    try:
        env = env_for(fake, "openai", tmp_path)
    finally:
        fake.close()
    env["OPENAI_BASE_URL"] = refused_url()
    text = run(["run", "hi"], project, env)
    assert text.returncode == 1
    lines = text.stderr.strip().splitlines()
    retries = [line for line in lines if "retrying in" in line]
    assert len(retries) == 2, text.stderr
    assert "(attempt 2 of 3): connection refused" in retries[0]
    assert "(attempt 3 of 3): connection refused" in retries[1]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and "connection refused" in errors[0], text.stderr
    assert "Traceback" not in text.stderr

    streamed = run(["run", "hi", "--output-format", "stream-json"], project, env)
    assert streamed.returncode == 1
    events = [json.loads(line) for line in streamed.stdout.splitlines()]
    waits = [e for e in events if e["type"] == "model_retry"]
    assert [(e["attempt"], e["attempts"], e["reason"]) for e in waits] == [
        (2, 3, "connection refused"),
        (3, 3, "connection refused"),
    ]
    assert sum(e["wait_s"] for e in waits) <= 2.0  # briefly: a dead endpoint fails fast
    assert events[-1]["type"] == "result" and "connection refused" in json.dumps(events[-1])


def test_an_invalid_base_url_is_never_retried(project: Path, tmp_path: Path) -> None:
    fake = FakeModelServer()
    fake.script = [Step(text="never asked")]
    try:
        env = env_for(fake, "openai", tmp_path)
        env["OPENAI_BASE_URL"] = "not-a-url"
        result = run(["run", "hi"], project, env)
        assert fake.requests == []
    finally:
        fake.close()
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "OPENAI_BASE_URL='not-a-url' is not a valid URL" in result.stderr
    assert "retrying" not in result.stderr
