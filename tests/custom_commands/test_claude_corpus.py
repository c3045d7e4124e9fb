"""Claude Code's skills and slash commands as published (``/work/shared/corpus/
claude-compat``, read at run time), placed where Claude Code reads them: every counted
skill listed and runnable as ``/name``, every counted command run with its text reaching
the model (the prompt ``/name`` makes) — and, end to end, ``codingcode run "/name"`` for
the files Claude Code is lenient about (a display name, front matter that is not YAML)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codingcode.custom_commands import prepare_command
from codingcode.custom_commands.invoke import find_invocation
from codingcode.runner import build_runner
from codingcode.skills.loader import load_skills
from codingcode.tools.definition import SessionState
from codingcode.workspace import Workspace

CORPUS = Path("/work/shared/corpus/claude-compat")
pytestmark = pytest.mark.skipif(
    not (CORPUS / "manifest.jsonl").exists(), reason=f"the corpus {CORPUS} is not on this machine"
)


def items(kind: str) -> list[dict[str, Any]]:
    if not (CORPUS / "manifest.jsonl").exists():
        return []
    lines = (CORPUS / "manifest.jsonl").read_text().splitlines()
    return [i for i in map(json.loads, lines) if i["kind"] == kind and i["counts"]]


def slug(name: str) -> str:
    """What ``/name`` a Claude Code skill name gives (its display name kept)."""
    return re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-_")


@pytest.fixture
def placed(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODINGCODE_TRUST_ALL", "1")
    for item in items("skill") + items("command"):
        target = project / item["place"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((CORPUS / item["file"]).read_bytes())
    return project


def test_every_counted_skill_is_listed(placed: Path) -> None:
    found = load_skills(placed, is_trusted=lambda p, d: True)
    expected = items("skill")
    listed = {s.display_name or s.name: s for s in found.skills.values()}
    missing = [i["expect"]["name"] for i in expected if i["expect"]["name"] not in listed]
    assert not missing, (missing, found.notes)
    for item in expected:
        skill = listed[item["expect"]["name"]]
        assert skill.model_invocable == item["expect"]["model_invocable"]
        assert skill.user_invocable == item["expect"]["user_invocable"]
    assert len(expected) == 32


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["skill", "command"])
async def test_every_counted_file_runs_as_slash_name_with_its_text(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODINGCODE_TRUST_ALL", "1")
    reached = 0
    for n, item in enumerate(items(kind)):
        name = item["expect"]["name"]
        if kind == "skill" and not item["expect"]["user_invocable"]:
            continue
        # A project each: two published files may want the same place.
        root = (tmp_path / f"p{n}").resolve()
        (root / item["place"]).parent.mkdir(parents=True)
        (root / item["place"]).write_bytes((CORPUS / item["file"]).read_bytes())
        workspace = Workspace.load(root)
        runner = build_runner(workspace)  # headless: a `!` line is refused
        invocation = find_invocation(workspace, f"/{slug(name)} some arguments")
        assert invocation is not None, name
        prompt = await prepare_command(
            invocation.command,
            invocation.arguments,
            runner=runner,
            state=SessionState(),
            notify=lambda line: None,
        )
        assert item["expect"]["snippet"] in prompt.text, name
        reached += 1
    assert reached == {"skill": 32, "command": 31}[kind]


# -- end to end ---------------------------------------------------------------------------
@pytest.fixture
def fake() -> Iterator[Any]:
    from tests.agent.fake_model import FakeModelServer

    server = FakeModelServer()
    yield server
    server.close()


@pytest.mark.e2e
@pytest.mark.parametrize(
    "item_id",
    [
        "skill-10",  # name: Hook Development → /hook-development
        "command-30",  # argument-hint: [a] [b] — front matter that is not YAML
        "command-11",  # argument-hint as a YAML list
    ],
)
def test_run_slash_name_sends_the_text_to_the_model(
    placed: Path, fake: Any, tmp_path: Path, item_id: str
) -> None:
    from tests.agent.fake_model import Step
    from tests.e2e.test_agent_run import env_for, run

    item = next(i for i in items("skill") + items("command") if i["id"] == item_id)
    fake.script = [Step(text="ok")]
    env = env_for(fake, "openai", tmp_path) | {"CODINGCODE_TRUST_ALL": "1"}
    result = run(["run", f"/{slug(item['expect']['name'])} x"], placed, env)
    assert result.returncode == 0, result.stderr
    assert item["expect"]["snippet"] in json.dumps(fake.bodies()[0]["messages"]), result.stderr
