"""The public corpus: every attack is refused (or asked) by the right preset rule, and no
benign call trips a preset rule. The cases are data (corpus/*.jsonl) so they can grow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codingcode.approval.pipeline import ToolCall
from codingcode.approval.rules import RuleEngine
from tests.approval.conftest import make_corpus_project

CORPUS = Path(__file__).parent / "corpus"


def _load(name: str) -> list[dict[str, Any]]:
    with open(CORPUS / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


ATTACKS = _load("attacks.jsonl")
BENIGN = _load("benign.jsonl")


def _id(case: dict[str, Any]) -> str:
    return f"{case['tool']}:{json.dumps(case['args'])[:80]}"


@pytest.fixture(scope="module")
def corpus_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_corpus_project(tmp_path_factory.mktemp("corpus") / "project")


def _decide(case: dict[str, Any], project: Path) -> Any:
    engine = RuleEngine([], project)
    return engine.evaluate(ToolCall(case["tool"], case["args"], project))


def test_corpus_is_big_enough() -> None:
    assert len(ATTACKS) >= 150
    assert len(BENIGN) >= 50


@pytest.mark.parametrize("case", ATTACKS, ids=_id)
def test_attack_is_stopped(case: dict[str, Any], corpus_project: Path) -> None:
    result = _decide(case, corpus_project)
    assert (result.action, result.rule) == (case["expect"], case["rule"]), result.reason


@pytest.mark.parametrize("case", BENIGN, ids=_id)
def test_benign_call_passes_the_presets(case: dict[str, Any], corpus_project: Path) -> None:
    result = _decide(case, corpus_project)
    assert result.action == "continue", result.reason
