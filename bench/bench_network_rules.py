"""Rules with a ``network(...)`` clause (issue 16) cost what plain rules cost: 20,000 allow
rules ``execute_command(toolN *) network(rN.example.com)`` against 20,000 without the clause
(the reference, measured in this run). Prints the engine build + first decision time of
each, one decision's median, and their ratios (expected close to 1; linear in the rules).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

N = 20_000


def measure(with_clause: bool, project: Path) -> tuple[float, float]:
    from codingcode.approval.pipeline import ToolCall
    from codingcode.approval.rules import Rule, RuleEngine

    clause = " network(r{i}.example.com)" if with_clause else ""
    rules = [Rule(f"execute_command(tool{i} *)" + clause.format(i=i), "allow") for i in range(N)]
    call = ToolCall("execute_command", {"command": f"tool{N - 1} fetch x"}, project)
    start = time.process_time()
    engine = RuleEngine(rules, project)
    first = engine.evaluate(call)
    build = time.process_time() - start
    assert first.action == "allow"
    assert bool(first.domains) == with_clause
    times = []
    for _ in range(200):
        t = time.perf_counter()
        engine.evaluate(call)
        times.append(time.perf_counter() - t)
    return build, statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        ref_build, ref_one = measure(False, project)
        build, one = measure(True, project)
    print(
        f"{N} rules, engine build + first decision (CPU): plain {ref_build * 1e3:.1f} ms, "
        f"with network(...) {build * 1e3:.1f} ms, ratio {build / ref_build:.2f}"
    )
    print(
        f"one decision (median of 200): plain {ref_one * 1e6:.1f} us, "
        f"with network(...) {one * 1e6:.1f} us, ratio {one / ref_one:.2f}"
    )


if __name__ == "__main__":
    main()
