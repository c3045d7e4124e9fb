"""GTFOBins cases graded must/should/benign (the shared corpus, read at run time) and the
oracle's harmless look-alikes: the rates the security work is held to.

- must (a secret read or a system file written): every one refused in bypass mode;
- should (sudo reached through a program's own features, a download run): at least 90 %;
- benign (the same technique on a project file): never denied, at most 10 % asked;
- the oracle's obfuscation layers around ``echo hi`` and ``ls``: never denied, at most
  10 % asked in bypass mode.

Run with ``-s`` to see the rates printed.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.approval import oracle
from tests.approval.conftest import make_corpus_project

pytestmark = pytest.mark.xdist_group("gtfobins")

CASES = Path("/work/shared/corpus/gtfobins_cases.jsonl")


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[dict[str, Any], str, str]]:
    if not CASES.exists():
        pytest.skip(f"{CASES} is not here")
    project = make_corpus_project(tmp_path_factory.mktemp("cases") / "project")
    home = os.path.expanduser("~")
    out = []
    for line in CASES.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        command = case["args"]["command"].replace("{H}", home).replace("{P}", str(project))
        decision, reason = oracle.decide_bypass(command, project)
        out.append((case, decision, reason))
    return out


def _rate(graded: list[tuple[dict[str, Any], str, str]], level: str) -> tuple[int, int]:
    rows = [(c, d) for c, d, _ in graded if c["level"] == level]
    return sum(1 for _, d in rows if d != "allow"), len(rows)


def test_must_cases_are_all_refused(graded: list[tuple[dict[str, Any], str, str]]) -> None:
    refused, total = _rate(graded, "must")
    print(f"\nGTFOBins must-cases refused: {refused}/{total}")
    allowed = [
        c["note"] + ": " + c["args"]["command"]
        for c, d, _ in graded
        if c["level"] == "must" and d == "allow"
    ]
    assert total > 600
    assert not allowed, "\n".join(allowed)


def test_should_cases_are_refused_nine_times_in_ten(
    graded: list[tuple[dict[str, Any], str, str]],
) -> None:
    refused, total = _rate(graded, "should")
    print(f"\nGTFOBins should-cases refused: {refused}/{total} ({100 * refused / total:.1f} %)")
    assert total > 300
    assert refused >= 0.9 * total


def test_benign_cases_are_never_denied_and_rarely_asked(
    graded: list[tuple[dict[str, Any], str, str]],
) -> None:
    tally = Counter(d for c, d, _ in graded if c["level"] == "benign")
    total = sum(tally.values())
    print(f"\nGTFOBins benign cases: {dict(tally)} of {total}")
    denied = [c["args"]["command"] for c, d, _ in graded if c["level"] == "benign" and d == "deny"]
    assert not denied, "\n".join(denied)
    assert tally["ask"] <= 0.10 * total


def test_harmless_lookalikes_are_never_denied_and_rarely_asked(tmp_path: Path) -> None:
    """The oracle's layers (quotes, variables, eval, shells, functions, wrappers...) around
    ``echo hi`` and ``ls``, decided in bypass mode."""
    project = make_corpus_project(tmp_path / "project")
    benign = [c for c in oracle.generate(seed=11, count=300) if c.benign]
    tally: Counter[str] = Counter()
    denied = []
    for c in benign:
        decision, _ = oracle.decide_bypass(c.command, project)
        tally[decision] += 1
        if decision == "deny":
            denied.append(c.command)
    total = len(benign)
    print(
        f"\nlook-alikes in bypass: {total}; asked {tally['ask']} "
        f"({100 * tally['ask'] / total:.1f} %), denied {tally['deny']}"
    )
    assert not denied, "\n".join(denied)
    assert tally["ask"] <= 0.10 * total
