"""Analysis cost is linear: ``check`` of a 20,000-stage pipeline within 1 s.

Prints the time of one decision (shell analysis, preset rules, user rules) for pipelines of
2,000 and 20,000 stages, their ratio (linear: ~10x), and the time of a line past the size
cap (MAX_COMMAND_CHARS), which is asked about at once. Also a long ``&&`` list and a
deeply nested ``bash -c``.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

BUDGET_S = 1.0


def decide_seconds(command: str, project: Path) -> tuple[float, str]:
    """The best CPU time of one decision (wall time on a shared machine is mostly waiting)."""
    from codingcode.approval.pipeline import ToolCall
    from codingcode.approval.rules import Rule, RuleEngine

    engine = RuleEngine([Rule("execute_command(git push *)", "ask")], project)
    best = float("inf")
    action = ""
    for n in range(3):
        call = ToolCall("execute_command", {"command": command + " " * n}, project)  # no cache
        t0 = time.process_time()
        action = engine.evaluate(call).action
        best = min(best, time.process_time() - t0)
    return best, action


def parse_seconds(command: str) -> float:
    import tree_sitter
    import tree_sitter_bash

    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        parser.parse(command.encode())
        best = min(best, time.process_time() - t0)
    return best


def main() -> None:
    from codingcode.shell import MAX_COMMAND_CHARS

    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs (figures are CPU time)")
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp).resolve()
        small, _ = decide_seconds(" | ".join(["cat"] * 2_000), project)
        big, action = decide_seconds(" | ".join(["cat"] * 20_000), project)
        print(
            f"pipeline of 2,000 stages: {small:.3f}s CPU; of 20,000 stages: {big:.3f}s CPU "
            f"({action})"
        )
        print(
            f"ratio {big / small:.1f}x for 10x the stages (linear: ~10x); 20,000 stages are "
            f"{big / BUDGET_S:.2f}x the {BUDGET_S}s target -> "
            f"{'met' if big <= BUDGET_S else 'NOT met'}"
        )
        # A reference measured in the same run, as loaded as the rest: tree-sitter's own
        # parse of the same text (C code; the decision cannot cost less than it).
        parse = parse_seconds(" | ".join(["cat"] * 20_000))
        print(
            f"reference: parsing the 20,000 stages alone {parse:.3f}s CPU; the whole decision "
            f"is {big / parse:.1f}x the parse"
        )
        chain, action = decide_seconds(" && ".join(["true"] * 20_000), project)
        print(f"&& list of 20,000 commands: {chain:.3f}s ({action})")
        nested = "echo hi"
        for _ in range(10):
            nested = "bash -c " + "'" + nested.replace("'", "'\\''") + "'"
        deep, action = decide_seconds(nested, project)
        print(f"bash -c nested 10 deep ({len(nested)} chars): {deep:.4f}s ({action})")
        over, action = decide_seconds("a|" * (MAX_COMMAND_CHARS // 2 + 1), project)
        print(f"a line over the {MAX_COMMAND_CHARS}-character cap: {over:.4f}s ({action})")


if __name__ == "__main__":
    main()
