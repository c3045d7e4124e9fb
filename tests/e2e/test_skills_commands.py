"""Skills and custom slash commands end to end (issue 17): the real ``codingcode run``
against the scripted model, with files in the shapes Claude Code users already write."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step, system_text, tool_names, tool_results
from tests.e2e.test_agent_run import env_for, run

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


SKILL = """---
name: changelog-writer
description: Writes CHANGELOG entries in the Keep a Changelog format. Use when: the user asks for release notes.
allowed-tools: Read, Grep
---
# Changelog writer

1. Read CHANGELOG.md first. BODY-MARKER-31337
2. Add the entry under "Unreleased".
"""


def all_text(body: dict[str, object]) -> str:
    return json.dumps(body)


def test_a_skill_is_found_by_tool_search_and_its_body_loaded_only_then(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    folder = project / ".claude" / "skills" / "changelog"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL)
    (project / "CHANGELOG.md").write_text("# Changelog\n")
    env = env_for(fake, "openai", tmp_path)
    assert run(["trust"], project, env).returncode == 0
    fake.script = [
        Step(tool_calls=[("tool_search", {"query": "release notes changelog"})]),
        Step(tool_calls=[("skill_changelog-writer", {})]),
        Step(tool_calls=[("write_file", {"path": "x.txt", "content": "no"})]),
        Step(text="Done."),
    ]
    result = run(["run", "write release notes", "--mode", "bypass"], project, env)
    assert result.returncode == 3, result.stderr  # it answered right after a denial
    bodies = fake.bodies()
    first = bodies[0]
    # Only the name and the description are in context at first.
    assert "changelog-writer: Writes CHANGELOG entries" in system_text(first)
    assert "BODY-MARKER-31337" not in all_text(first)
    assert "skill_changelog-writer" not in tool_names(first)
    assert "tool_search" in tool_names(first)
    found, is_error = tool_results(bodies[1])[-1]
    assert not is_error and "skill_changelog-writer" in found
    assert "BODY-MARKER-31337" not in all_text(bodies[1])
    assert "skill_changelog-writer" in tool_names(bodies[1])
    loaded, is_error = tool_results(bodies[2])[-1]
    assert not is_error and "BODY-MARKER-31337" in loaded and str(folder) in loaded
    # allowed-tools: Read, Grep — even in bypass mode, write_file is refused while active.
    refused, _ = tool_results(bodies[3])[-1]  # (Chat Completions has no error flag)
    assert "outside the tools the skill changelog-writer allows" in refused
    assert not (project / "x.txt").exists()


def test_untrusted_project_skills_stay_out_with_one_line(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    folder = project / ".codingcode" / "skills" / "evil"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL.replace("changelog-writer", "evil"))
    broken = project / ".codingcode" / "skills" / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("no front matter at all\n")
    fake.script = [Step(text="Hi.")]
    env = env_for(fake, "anthropic", tmp_path)
    result = run(["run", "hello"], project, env)
    assert result.returncode == 0, result.stderr
    assert "2 project skills (broken, evil) not loaded until you trust" in result.stderr
    assert "evil" not in system_text(fake.bodies()[0])
    assert "Traceback" not in result.stderr
    assert run(["trust"], project, env).returncode == 0
    fake.script = [Step(text="Hi.")]
    result = run(["run", "hello"], project, env)
    assert "broken/SKILL.md has no front matter" in result.stderr
    assert "- evil: Writes CHANGELOG" in system_text(fake.bodies()[-1])
