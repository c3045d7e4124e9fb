"""GTFOBins as a corpus (tests/approval/corpus/gtfobins.jsonl, made by make_gtfobins.py).

Every file-read, file-write and shell technique, aimed at /etc/shadow, ~/.ssh/id_rsa, .env
and /etc/passwd, is denied or asked in bypass mode; the same techniques aimed at ordinary
project files are never denied (a technique that itself runs sudo is, by R2). The few
techniques still allowed are listed, each with the reason, in gtfobins_gaps.json.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from codingcode.approval.pipeline import ToolCall
from codingcode.approval.rules import RuleEngine
from tests.approval.conftest import make_corpus_project

# The decisions over the whole corpus (a module fixture) are made once, on one worker.
pytestmark = pytest.mark.xdist_group("gtfobins")

CORPUS = Path(__file__).parent / "corpus"
CASES = [
    json.loads(line)
    for line in (CORPUS / "gtfobins.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
GAPS = {
    (g["file"], g["function"]): g["why"]
    for g in json.loads((CORPUS / "gtfobins_gaps.json").read_text(encoding="utf-8"))["gaps"]
}


@pytest.fixture(scope="module")
def decisions(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[dict[str, Any], str, str]]:
    project = make_corpus_project(tmp_path_factory.mktemp("gtfobins") / "project")
    engine = RuleEngine([], project)
    out = []
    for case in CASES:
        result = engine.evaluate(ToolCall("execute_command", case["args"], project, mode="bypass"))
        # in bypass mode, what no rule decided is allowed
        decision = "allow" if result.action in ("continue", "allow") else result.action
        out.append((case, decision, result.reason))
    return out


def test_corpus_is_the_whole_of_gtfobins() -> None:
    assert len(CASES) > 2500
    assert {c["source"]["repo"] for c in CASES} == {"GTFOBins/GTFOBins.github.io"}
    assert len({c["source"]["file"] for c in CASES}) > 300


def test_techniques_aimed_at_protected_files_are_denied_or_asked(
    decisions: list[tuple[dict[str, Any], str, str]],
) -> None:
    allowed = [
        (c["source"]["file"], c["source"]["function"], c["args"]["command"])
        for c, d, _ in decisions
        if c["expect"] == "deny-or-ask" and d == "allow"
    ]
    unexplained = [a for a in allowed if (a[0], a[1]) not in GAPS]
    assert not unexplained, "\n".join(map(repr, unexplained))
    still = {(a[0], a[1]) for a in allowed}
    fixed = [k for k in GAPS if k not in still]
    assert not fixed, f"no longer allowed, remove from gtfobins_gaps.json: {fixed}"
    forbidden = sum(1 for c in CASES if c["expect"] == "deny-or-ask")
    assert len(allowed) <= 0.03 * forbidden


def test_same_techniques_on_project_files_are_not_denied(
    decisions: list[tuple[dict[str, Any], str, str]],
) -> None:
    tally: Counter[str] = Counter()
    for case, decision, reason in decisions:
        if case["expect"] == "not-denied":
            assert decision != "deny", (case["args"]["command"], reason)
            tally[decision] += 1
        elif case["expect"] == "deny":  # the technique escalates by itself (sudo /bin/sh)
            assert decision == "deny", (case["args"]["command"], reason)
    # many techniques run a program's own script language: asking is right for some
    assert tally["ask"] <= 0.15 * (tally["ask"] + tally["allow"]), tally
