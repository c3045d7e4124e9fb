"""Claude Code's sub-agents, as published (``/work/shared/corpus/claude-compat``, read at
run time), placed in ``.claude/agents/``: every counted agent listed and dispatched by the
real ``codingcode run`` with its tools in our names and its prompt reaching the model;
a file that cannot be read is one line naming it, never breaking the rest; model aliases
resolve through the settings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codingcode.tools.claude_names import translate_rule
from tests.agent.fake_model import FakeModelServer, Step, system_text, tool_names
from tests.e2e.test_agent_run import env_for, run

pytestmark = pytest.mark.e2e

CORPUS = Path("/work/shared/corpus/claude-compat")
corpus = pytest.mark.skipif(
    not (CORPUS / "manifest.jsonl").exists(), reason=f"the corpus {CORPUS} is not on this machine"
)


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def agents() -> list[dict[str, Any]]:
    lines = (CORPUS / "manifest.jsonl").read_text().splitlines()
    return [i for i in map(json.loads, lines) if i["kind"] == "agent"]


def place(project: Path, items: list[dict[str, Any]]) -> None:
    for item in items:
        target = project / item["place"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((CORPUS / item["file"]).read_bytes())


@corpus
def test_every_corpus_agent_is_dispatched_with_its_tools(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    items = agents()
    place(project, items)
    # The files Claude Code itself does not load are placed too; a counted agent of the
    # same name is the one dispatched.
    counted = {i["expect"]["name"]: i for i in items if i["counts"]}
    script: list[Step] = []
    for name in counted:
        script.append(Step(tool_calls=[("dispatch_agent", {"agent": name, "prompt": "go"})]))
        script.append(Step(text=f"report of {name}"))
    script.append(Step(text="All done."))
    fake.script = script
    env = env_for(fake, "openai", tmp_path) | {"CODINGCODE_TRUST_ALL": "1"}
    result = run(["run", "--mode", "bypass", "dispatch them all"], project, env, timeout=180)
    assert result.returncode == 0, result.stderr
    bodies = fake.bodies()
    dispatched = 0
    for n, (name, item) in enumerate(counted.items()):
        child = bodies[2 * n + 1]
        assert item["expect"]["snippet"] in system_text(child), name
        offered = set(tool_names(child)) - {"tool_search"}
        listed = item["expect"]["tools"]
        if listed is not None:
            ours = {r.partition("(")[0] for t in listed for r in translate_rule(t)}
            assert offered, name
            assert offered <= ours, (name, offered - ours)
        else:
            assert "execute_command" in offered or "read_file" in offered, name
        parent_next = bodies[2 * n + 2]
        assert f"report of {name}" in json.dumps(parent_next)
        dispatched += 1
    assert dispatched == len(counted) == 14
    # The file no one can read is one line naming it; the rest still works.
    skipped = [line for line in result.stderr.splitlines() if "skipped" in line]
    assert len(skipped) == 1 and "agent-creator.md" in skipped[0], result.stderr
    tools = run(["tools"], project, env)
    assert tools.returncode == 0, tools.stderr


def test_model_aliases_resolve_through_the_settings(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    agent = project / ".claude" / "agents" / "quick.md"
    agent.parent.mkdir(parents=True)
    agent.write_text(
        "---\nname: quick\ndescription: Quick.\ntools: Read, Grep\nmodel: haiku\n---\nBe quick.\n"
    )
    settings = project / ".codingcode" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"modelAliases": {"haiku": "openai:small-model"}}))
    fake.script = [
        Step(tool_calls=[("dispatch_agent", {"agent": "quick", "prompt": "go"})]),
        Step(text="quick report"),
        Step(text="ok"),
    ]
    env = env_for(fake, "openai", tmp_path) | {"CODINGCODE_TRUST_ALL": "1"}
    result = run(["run", "go"], project, env)
    assert result.returncode == 0, result.stderr
    child = fake.bodies()[1]
    assert child["model"] == "small-model"
    assert set(tool_names(child)) - {"tool_search"} == {"read_file", "search_code"}
    assert fake.bodies()[0]["model"] == "fake-model"
