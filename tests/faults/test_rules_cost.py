"""Hostile command lines cost the rules a bounded time, and what is not analysed is asked.

tree-sitter-bash parses many assignments followed by a long pipeline in time that grows with
their product (15,000 of each took ~16 s to parse); such a line is asked about at once.
Many variables and many pipeline stages otherwise share one variable table (copied on
write), so neither multiplies the other.
"""

from __future__ import annotations

import time
from pathlib import Path

from codingcode.approval.pipeline import ToolCall
from codingcode.approval.rules import RuleEngine


def _decide(command: str, project: Path) -> tuple[str, float]:
    engine = RuleEngine([], project)
    t0 = time.process_time()
    result = engine.evaluate(
        ToolCall("execute_command", {"command": command}, project, mode="bypass")
    )
    return result.action, time.process_time() - t0


def test_assignments_then_a_long_pipeline_is_asked_at_once(tmp_path: Path) -> None:
    n = 15_000
    line = ";".join(f"a{i}=1" for i in range(n)) + "; " + "|".join(["cat"] * n)
    action, took = _decide(line, tmp_path)
    assert action == "ask"
    assert took < 2.0, took  # ~16 s before (tree-sitter alone)


def test_a_forbidden_command_after_many_assignments_is_still_seen(tmp_path: Path) -> None:
    line = ";".join(f"a{i}=1" for i in range(1_000)) + "; x=sudo; " + "|".join(["cat"] * 500)
    line += " | $x id"
    action, _ = _decide(line, tmp_path)
    assert action == "deny"


def test_variables_stay_per_pipeline_stage(tmp_path: Path) -> None:
    # each stage is a subshell: an assignment in one is not seen by the next, nor after
    action, _ = _decide("x=ls; echo | x=sudo; $x -la", tmp_path)
    assert action in ("allow", "continue")
    action, _ = _decide("x=ls; echo | { x=sudo; $x id; }", tmp_path)
    assert action == "deny"
