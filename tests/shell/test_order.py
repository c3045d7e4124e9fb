"""The commands the structured walk misses (found by the safety-net query) come in the
order of the text, the same on every run: the query's own order varies between runs, and
which of two nested commands is walked first changes what is found twice."""

from __future__ import annotations

from codingcode.shell.parse import _analyze_fresh

TEXTS = [
    "import os; print(sorted(k for k in os.environ if k in {'A', 'B'}))",
    "import sys\nsys.stderr.write('blocked by policy')\nsys.exit(2)\n",
]


def test_safety_net_commands_come_in_text_order_every_time() -> None:
    for text in TEXTS:
        orders = set()
        for i in range(12):
            ballast = [[j] for j in range(i * 500)]  # a different heap each time
            analysis = _analyze_fresh(text, "/tmp")
            orders.add(tuple(c.line() for c in analysis.commands))
            del ballast
        assert len(orders) == 1, orders
