"""Small helpers shared by the benchmarks: medians of interleaved runs."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(
    fns: dict[str, Callable[[], object]], runs: int, warmup: int = 1
) -> dict[str, float]:
    """Median wall time of each function, running them in turn so load affects all alike."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(s) for name, s in samples.items()}


def verdict(ratio: float, target: float) -> str:
    return "ok" if ratio <= target else "OVER TARGET"
