"""The command-rule index (first word, and first two words) finds exactly what a scan of
every rule in order finds: the index is a speed-up, never a change of meaning."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from codingcode.approval.rules import Rule
from codingcode.approval.rules.matching import _compile, _KindIndex

WORDS = ["git", "push", "status", "npm", "test", "*", "", "origin", "a*", "*b", "x:*"]

specs = (
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)
    .map(" ".join)
    .filter(lambda s: s.strip() != "")
)
subjects = st.lists(st.sampled_from([w for w in WORDS if "*" not in w]), max_size=5).map(" ".join)


def _scan(compiled: list, subject: str) -> object:
    for c in compiled:  # every rule, in order: the first that matches
        if re.fullmatch(c.regex, subject, re.DOTALL):
            return c
    return None


@settings(max_examples=400, deadline=None)
@given(st.lists(specs, min_size=1, max_size=12), st.lists(subjects, min_size=1, max_size=3))
def test_index_finds_what_a_scan_of_every_rule_finds(
    rule_specs: list[str], subs: list[str]
) -> None:
    compiled = [
        _compile(Rule(f"execute_command({s})", "deny"), i, Path("/p"))
        for i, s in enumerate(rule_specs)
    ]
    index = _KindIndex("command", compiled)
    found = index.best(subs)
    scanned = [c for c in (_scan(compiled, s) for s in subs) if c is not None]
    expected = min(scanned, key=lambda c: c.index) if scanned else None  # type: ignore[attr-defined]
    assert found is expected, (rule_specs, subs)


def test_two_word_rules_are_found_by_their_first_two_words() -> None:
    compiled = [
        _compile(Rule(f"execute_command({s})", "deny"), i, Path("/p"))
        for i, s in enumerate(["git push *", "git status", "git *", "npm test:*"])
    ]
    index = _KindIndex("command", compiled)
    assert index.keyed.keys() >= {"git push", "git status", "git", "npm test"}
    hit = index.best(["git push origin main"])
    assert hit is not None and hit.rule.text == "execute_command(git push *)"
    hit = index.best(["git status"])
    assert hit is not None and hit.rule.text == "execute_command(git status)"
    hit = index.best(["git log"])
    assert hit is not None and hit.rule.text == "execute_command(git *)"
    hit = index.best(["npm test --watch"])
    assert hit is not None and hit.rule.text == "execute_command(npm test:*)"
    assert index.best(["git  push origin"]) is not None  # `git *` still holds it
    assert index.best(["npm tests"]) is None
