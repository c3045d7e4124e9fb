"""Issue 19: nothing below the front ends reads trust on its own. Skills, commands and the
``/name`` lookup use the check they are handed (the session's Workspace) — never a
TrustStore of their own."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from codingcode import trust
from codingcode.custom_commands import CommandRegistry, commands_of
from codingcode.custom_commands.invoke import find_invocation
from codingcode.skills.install import install_skills
from codingcode.skills.loader import load_skills
from codingcode.tools.service import ToolService
from codingcode.workspace import Workspace


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def no_trust_store(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, *args: object, **kwargs: object) -> None:
        raise AssertionError("a TrustStore was made below the front end")

    monkeypatch.setattr(trust.TrustStore, "__init__", refuse)


def make_project(project: Path) -> None:
    write(project / ".codingcode" / "commands" / "deploy.md", "Deploy $1.\n")
    write(
        project / ".codingcode" / "skills" / "pdf" / "SKILL.md",
        "---\nname: pdf\ndescription: Read PDFs.\n---\nUse pdftotext.\n",
    )
    trust.TrustStore().trust(project)


def test_the_guard_itself_fails_a_trust_store_made_on_the_side(
    project: Path, no_trust_store: None
) -> None:
    with pytest.raises(AssertionError, match="below the front end"):
        Workspace.load(project)  # the front end's own read: what the guard catches


def test_loaders_use_the_check_they_are_given(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(project)
    workspace = Workspace.load(project)  # the front end: one store, before the guard
    asked: list[str] = []

    def check(path: Path, data: bytes) -> bool:
        asked.append(path.name)
        return workspace.is_trusted(path, data)

    def refuse(self: object, *args: object, **kwargs: object) -> None:
        raise AssertionError("a TrustStore was made below the front end")

    monkeypatch.setattr(trust.TrustStore, "__init__", refuse)
    assert list(load_skills(project, is_trusted=check).skills) == ["pdf"]
    assert CommandRegistry.load(project, is_trusted=check).get("deploy") is not None
    assert sorted(asked) == ["SKILL.md", "deploy.md"]
    installed = install_skills(workspace, ToolService())
    assert [s.name for s in installed.skills] == ["pdf"]
    found = find_invocation(workspace, "/deploy prod")
    assert found is not None and found.arguments == "prod"
    skill = find_invocation(workspace, "/pdf a.pdf")
    assert skill is not None and skill.command.name == "pdf"
    session = SimpleNamespace(
        project=project, runner=SimpleNamespace(workspace=workspace), skills=installed.skills
    )
    registry = commands_of(session)
    assert [c.name for c in registry.list()] == ["deploy", "pdf"]


def test_a_distrusted_workspace_loads_no_project_file(project: Path, no_trust_store: None) -> None:
    # Built by hand (no store made): a session that trusts no project file.
    workspace = SimpleNamespace(root=project, is_trusted=lambda path, data=None: False)
    write(project / ".codingcode" / "commands" / "deploy.md", "Deploy.\n")
    assert CommandRegistry.load(project, is_trusted=workspace.is_trusted).list() == []
    with pytest.raises(Exception, match="until you trust"):
        find_invocation(workspace, "/deploy")  # type: ignore[arg-type]
    # A session without a workspace trusts no project command and reads no records.
    bare = SimpleNamespace(project=project, runner=SimpleNamespace(workspace=None), skills=[])
    assert commands_of(bare).list() == []
