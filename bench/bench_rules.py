"""Rule engine speed: one decision with 1,000 rules loaded must take at most 50 µs, and
start-up (settings read, rules parsed, engine built, first decision) with 20,000 rules at
most 0.5 s — linear in the number of rules (the ratio to 2,000 rules, same run, ~10x).

Prints, per kind of call, the median CPU time of one ``RuleEngine.evaluate`` (preset rules
included) with 1,000 user rules, the same with no user rules (the reference, measured in
this run), their ratio, and the ratio to the 50 µs budget. Shell commands are measured
both as the engine sees them in a session (what the text of a command line gives is cached;
what its words name on disk is looked at afresh on every call) and with a new command line
every time (parse included). CPU time, taken over batches of
calls, is the fair figure on a shared machine (wall time there is mostly waiting); the
last line says whether the slowest kind meets the budget.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codingcode.approval.rules.syntax import RuleAction

BUDGET_US = 50.0
ACTIONS: tuple[RuleAction, ...] = ("allow", "ask", "deny")


def make_rules(n: int) -> list[Any]:
    from codingcode.approval.rules import Rule

    programs = [f"tool{i}" for i in range(60)] + ["git", "npm", "cargo", "docker", "make"]
    rules = []
    for i in range(n):
        action: RuleAction = ACTIONS[i % 3]
        kind = i % 5
        if kind == 0:
            text = f"execute_command({programs[i % len(programs)]} sub{i} *)"
        elif kind == 1:
            text = f"read_file(src/module{i}/**)"
        elif kind == 2:
            text = f"fetch_url(domain:host{i}.example.com)"
        elif kind == 3:
            text = f"server{i % 40}:tool{i}"
        else:
            text = f"edit_file(**/generated{i}/**)"
        rules.append(Rule(text, action, priority=i % 4))
    return rules


STARTUP_BUDGET_S = 0.5


def startup_seconds(n: int, root: Path) -> tuple[float, float]:
    """Read a settings file of ``n`` rules, build the pipeline, decide one call: the best
    (wall, CPU) seconds of three runs (CPU is the fair figure on a shared machine)."""
    import json

    from codingcode.approval.pipeline import ToolCall
    from codingcode.approval.setup import build_pipeline
    from codingcode.workspace import Workspace

    project = root / f"p{n}"
    (project / ".codingcode").mkdir(parents=True, exist_ok=True)
    perms: dict[str, list[str]] = {"allow": [], "ask": [], "deny": []}
    for r in make_rules(n):
        perms[r.action].append(r.text)
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"permissions": perms}))
    best, best_cpu = float("inf"), float("inf")
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        pipeline, _, _ = build_pipeline(Workspace.load(project))
        pipeline.evaluate(ToolCall("execute_command", {"command": "git status"}, project.resolve()))
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return best, best_cpu


def median_us(fn: Any, rounds: int = 2000, batch: int = 10) -> float:
    """The median CPU time of one call of ``fn``, over ``rounds`` calls in batches."""
    samples = []
    for _ in range(max(1, rounds // batch)):
        t0 = time.process_time_ns()
        for _ in range(batch):
            fn()
        samples.append((time.process_time_ns() - t0) / batch)
    return statistics.median(samples) / 1000


def main() -> None:
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs (figures are CPU time)")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("CODINGCODE_STATE_DIR", str(Path(tmp) / "state"))
        os.environ.setdefault("CODINGCODE_CONFIG_DIR", str(Path(tmp) / "config"))
        from codingcode.approval.pipeline import ToolCall
        from codingcode.approval.rules import RuleEngine

        project = Path(tmp).resolve()
        loaded = RuleEngine(make_rules(1000), project)
        empty = RuleEngine([], project)
        calls = {
            "read_file": ToolCall("read_file", {"path": "src/module3/x.py"}, project),
            "edit_file": ToolCall(
                "edit_file", {"path": "a/b/c.py", "old_string": "a", "new_string": "b"}, project
            ),
            "fetch_url": ToolCall("fetch_url", {"url": "https://docs.python.org/3/"}, project),
            "mcp tool": ToolCall("server7:tool7", {"q": "x"}, project),
            "execute_command `git status`": ToolCall(
                "execute_command", {"command": "git status"}, project
            ),
            "execute_command `ls -la src`": ToolCall(
                "execute_command", {"command": "ls -la src"}, project
            ),
            "execute_command": ToolCall(
                "execute_command", {"command": "git push origin main && npm test"}, project
            ),
        }
        print(f"{'call':34} {'1,000 rules':>12} {'no rules':>10} {'ratio':>7} {'of budget':>10}")
        worst = 0.0
        for name, call in calls.items():
            loaded.evaluate(call)
            with_rules = median_us(lambda c=call: loaded.evaluate(c))
            without = median_us(lambda c=call: empty.evaluate(c))
            worst = max(worst, with_rules)
            print(
                f"{name:34} {with_rules:10.1f}µs {without:8.1f}µs {with_rules / without:6.2f}x"
                f" {with_rules / BUDGET_US:9.2f}x"
            )
        counter = iter(range(10**9))

        def fresh() -> None:
            n = next(counter)
            loaded.evaluate(
                ToolCall(
                    "execute_command", {"command": f"git push origin b{n} && npm test"}, project
                )
            )

        uncached = median_us(fresh, rounds=500)
        print(f"{'execute_command (new line, parsed)':34} {uncached:10.1f}µs")
        print(
            f"median of the slowest kind (analysis cached): {worst:.1f}µs CPU, "
            f"{worst / BUDGET_US:.2f}x the {BUDGET_US:.0f}µs target -> "
            f"{'met' if worst <= BUDGET_US else 'NOT met'}"
        )
        small, small_cpu = startup_seconds(2_000, project)
        big, big_cpu = startup_seconds(20_000, project)
        print(
            f"start-up with 2,000 rules {small:.3f}s ({small_cpu:.3f}s CPU), with 20,000 rules "
            f"{big:.3f}s ({big_cpu:.3f}s CPU); ratio {big_cpu / small_cpu:.1f}x for 10x the "
            f"rules; {big_cpu / STARTUP_BUDGET_S:.2f}x the {STARTUP_BUDGET_S}s target -> "
            f"{'met' if big_cpu <= STARTUP_BUDGET_S else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
