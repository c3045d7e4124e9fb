"""``fleet status`` and ``fleet results``: what an out dir holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codingcode.fleet.results import RESULTS, ResultsStore, TaskResult
from codingcode.fleet.tasks import FleetError

STATUSES = ("done", "failed", "timeout", "cancelled")


def _store(out: Path) -> ResultsStore:
    store = ResultsStore(out)
    if not (out / RESULTS).exists() and not store.read_manifest():
        raise FleetError(f"{out} holds no fleet run (no {RESULTS})")
    return store


def read_results(out: Path) -> list[TaskResult]:
    return _store(out).read()


def summarize(out: Path) -> dict[str, Any]:
    store = _store(out)
    results = store.read()
    ids = list(store.read_manifest().get("ids") or [])
    by_status = {s: 0 for s in STATUSES}
    for r in results:
        by_status[r.status] = by_status.get(r.status, 0) + 1
    have = {r.id for r in results}
    missing = [i for i in ids if i not in have]
    running = store.running()
    total = max(len(ids), len(results))
    duration = sum(r.duration_s for r in results)
    cost = sum(r.cost_usd or 0.0 for r in results)
    lines = [
        f"{out}: {len(results)} of {total} tasks have a result"
        + (" (a fleet run is writing here now)" if running else ""),
        "  " + "  ".join(f"{s} {n}" for s, n in by_status.items()),
    ]
    if missing:
        more = f" (+{len(missing) - 10} more)" if len(missing) > 10 else ""
        lines.append(f"  without a result: {', '.join(missing[:10])}{more}")
        if not running:
            lines.append("  finish them with `codingcode fleet run TASKS --out DIR --resume`")
    lines.append(
        f"  tokens in {sum(r.input_tokens for r in results)}, out "
        f"{sum(r.output_tokens for r in results)}; cost ${cost:.4f}; "
        f"session time {duration:.1f} s"
    )
    return {
        "total": total,
        "results": len(results),
        "statuses": by_status,
        "missing": missing,
        "running": running,
        "lines": lines,
    }
