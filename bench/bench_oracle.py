"""The execution oracle at scale: obfuscated forbidden commands, run for real in bubblewrap.

    ./dev bench bench_oracle [SEED] [COUNT_PER_PAYLOAD]

Prints how many candidates truly ran ``sudo``/``shutdown`` or read ``/etc/shadow`` and how
many of those ``check --mode bypass`` would allow (must be 0), and for the harmless
look-alikes how many were denied (must be 0) or asked (at most 10 %). The CI run
(tests/approval/test_oracle.py) uses a fixed seed and fewer candidates.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.approval import oracle


def main() -> None:
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 20261203
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    verbose = "-v" in sys.argv
    if not oracle.available():
        print("bubblewrap is not usable here: the oracle cannot run")
        return
    sandbox = oracle.Sandbox()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            candidates = list(oracle.generate(seed, count))
            start = time.perf_counter()
            report = oracle.judge(sandbox, candidates, Path(tmp).resolve())
            took = time.perf_counter() - start
    finally:
        sandbox.close()
    print(f"seed {seed}: {report.summary()} in {took:.1f}s")
    for j in report.forbidden_allowed:
        print(f"  ALLOWED {j.candidate.payload} {j.candidate.layers}: {j.candidate.command!r}")
    for j in report.benign_denied:
        print(f"  DENIED benign {j.candidate.layers}: {j.candidate.command!r} ({j.reason})")
    if verbose:
        for j in report.benign_asked:
            print(f"  asked benign {j.candidate.layers}: {j.candidate.command!r} ({j.reason})")


if __name__ == "__main__":
    main()
