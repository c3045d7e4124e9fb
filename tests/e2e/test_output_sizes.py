"""The model is told the true size of a long output, cut once, and where all of it is."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent.fake_model import FakeModelServer, Step, tool_results
from tests.e2e.test_agent_run import env_for, run

pytestmark = pytest.mark.e2e

SEQ_BYTES = sum(len(str(n)) + 1 for n in range(1, 2_000_001))  # 14,888,896


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def test_a_15_mb_output_is_cut_once_with_its_real_size(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    saved: list[Path] = []

    def read_the_saved_file(body: dict[str, Any]) -> Step:
        content = tool_results(body)[-1][0]
        found = re.search(r"all of it is saved in (\S+) — read it with read_file", content)
        assert found, content[-2000:]
        saved.append(Path(found[1]))
        return Step(tool_calls=[("read_file", {"path": found[1], "offset": 1999999})])

    def after_deletion(body: dict[str, Any]) -> Step:
        saved[0].unlink()  # the output file goes away before the model reads it again
        return Step(tool_calls=[("read_file", {"path": str(saved[0])})])

    fake.script = [
        Step(tool_calls=[("execute_command", {"command": "seq 1 2000000"})]),
        read_the_saved_file,
        after_deletion,
        Step(text="Counted."),
    ]
    env = env_for(fake, "openai", tmp_path)
    result = run(["run", "count", "--mode", "bypass"], project, env, timeout=120)
    assert result.returncode == 0, result.stderr
    bodies = fake.bodies()
    first = tool_results(bodies[1])[-1][0]
    # Cut once, within the result budget, saying the real size in bytes and lines.
    assert len(first) <= 30_000
    assert first.count("[... output cut:") == 1
    assert f"The whole stdout is {SEQ_BYTES:,} bytes, 2,000,000 lines" in first
    assert first.startswith("Exit code: 0\n--- stdout ---\n1\n2\n3\n")
    assert first.rstrip().endswith("1999999\n2000000")
    # The saved file holds the whole output (it was read back, then deleted by the test).
    read_back = tool_results(bodies[2])[-1][0]
    assert "1999999" in read_back and "2000000" in read_back
    gone = tool_results(bodies[3])[-1]
    assert "deleted since" in gone[0]
    assert len(gone[0].strip().splitlines()) == 1, gone[0]
