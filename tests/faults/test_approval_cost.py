"""The approval check's cost under huge input (issue 19, failures 7 and 13).

Before: a 20,000-stage pipeline took over 120 s to decide (quadratic), freezing the MCP
server that asked; start-up with 20,000 rules took 24.7 s. Now both are linear: the tests
compare 20,000 against 2,000 of the same in the same run (linear: ~10x, quadratic: ~100x)
and bound the 20,000 case far below the old cost. Lines beyond the size caps are asked
about at once, unparsed. CPU time, the best of a few runs: other workers' load does not
count (bench/bench_shell_cost.py and bench/bench_rules.py print the same figures).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from codingcode.approval.pipeline import ToolCall
from codingcode.approval.rules import Rule, RuleEngine
from codingcode.shell.model import MAX_COMMAND_CHARS, MAX_COMMANDS

#: Linear is ~10x for 10x the input; quadratic ~100x. Between, with room for noise.
MAX_RATIO = 30.0


def _best_cpu(fn: Callable[[int], object], runs: int = 3) -> float:
    best = float("inf")
    for attempt in range(runs):
        t0 = time.process_time()
        fn(attempt)
        best = min(best, time.process_time() - t0)
    return best


def _decide(command: str, project: Path, runs: int = 3) -> tuple[str, str, float]:
    """(action, reason, best CPU seconds) of one decision; never a cached analysis."""
    engine = RuleEngine([Rule("execute_command(git push *)", "ask")], project)
    results: list[tuple[str, str]] = []

    def once(attempt: int) -> None:
        # A different text each time (trailing spaces): the analysis cache never answers.
        call = ToolCall("execute_command", {"command": command + " " * attempt}, project)
        result = engine.evaluate(call)
        results.append((result.action, result.reason))

    took = _best_cpu(once, runs)
    action, reason = results[-1]
    return action, reason, took


def test_a_20000_stage_pipeline_is_decided_in_linear_time(tmp_path: Path) -> None:
    action_small, _, small = _decide(" | ".join(["cat"] * 2_000), tmp_path)
    action, _, big = _decide(" | ".join(["cat"] * 20_000), tmp_path)
    # Every stage is a read-only `cat`: nothing here needs a question.
    assert action_small == action == "continue"
    assert big < 15.0, big  # > 120 s before; ~0.6-0.9 s CPU here
    assert big / max(small, 1e-3) < MAX_RATIO, (small, big)


def test_a_20000_command_and_list_is_decided_in_linear_time(tmp_path: Path) -> None:
    _, _, small = _decide(" && ".join(["true"] * 2_000), tmp_path)
    action, _, big = _decide(" && ".join(["true"] * 20_000), tmp_path)
    assert action == "continue"
    assert big < 15.0, big
    assert big / max(small, 1e-3) < MAX_RATIO, (small, big)


def test_a_forbidden_stage_deep_in_a_long_pipeline_is_still_seen(tmp_path: Path) -> None:
    stages = ["cat"] * 20_000
    stages[15_000] = "sudo id"
    action, _, _ = _decide(" | ".join(stages), tmp_path, runs=1)
    assert action == "deny"


def test_a_line_over_the_size_cap_is_asked_at_once(tmp_path: Path) -> None:
    line = "a|" * (MAX_COMMAND_CHARS // 2 + 1)
    action, reason, took = _decide(line, tmp_path)
    assert action == "ask"
    assert f"longer than {MAX_COMMAND_CHARS} characters" in reason
    assert took < 0.5, took  # not parsed at all


def test_more_commands_than_the_cap_are_asked(tmp_path: Path) -> None:
    line = ";".join(["a"] * (MAX_COMMANDS + 10))  # under the character cap
    assert len(line) < MAX_COMMAND_CHARS
    action, reason, took = _decide(line, tmp_path, runs=1)
    assert action == "ask" and "commands" in reason, reason
    assert took < 15.0, took


def _settings_with_rules(project: Path, n: int) -> None:
    perms: dict[str, list[str]] = {"allow": [], "ask": [], "deny": []}
    for i in range(n):
        kind = i % 4
        if kind == 0:
            text = f"execute_command(tool{i % 60} sub{i} *)"
        elif kind == 1:
            text = f"read_file(src/module{i}/**)"
        elif kind == 2:
            text = f"fetch_url(domain:host{i}.example.com)"
        else:
            text = f"edit_file(**/generated{i}/**)"
        perms[("allow", "ask", "deny")[i % 3]].append(text)
    (project / ".codingcode").mkdir(parents=True, exist_ok=True)
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"permissions": perms}))


def _startup_cpu(project: Path) -> tuple[float, str]:
    """Settings read, rules parsed, pipeline built, first decision: best CPU seconds."""
    from codingcode.approval.setup import build_pipeline
    from codingcode.workspace import Workspace

    actions: list[str] = []

    def once(_: int) -> None:
        pipeline, _, _ = build_pipeline(Workspace.load(project))
        call = ToolCall("execute_command", {"command": "tool4 sub4 x"}, project.resolve())
        actions.append(pipeline.evaluate(call).action)

    return _best_cpu(once), actions[-1]


def test_start_up_with_20000_rules_is_linear(tmp_path: Path) -> None:
    small_project, big_project = tmp_path / "small", tmp_path / "big"
    _settings_with_rules(small_project, 2_000)
    _settings_with_rules(big_project, 20_000)
    small, _ = _startup_cpu(small_project)
    big, action = _startup_cpu(big_project)
    # Rule 4 (`tool4 sub4 *`, i % 3 == 1: ask) matches the call: the 20,000 rules were really read.
    assert action == "ask"
    assert big < 10.0, big  # 24.7 s before; ~0.4 s CPU here
    assert big / max(small, 1e-3) < MAX_RATIO, (small, big)
