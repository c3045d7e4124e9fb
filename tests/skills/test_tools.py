"""Skills as deferred tools: found by tool_search, body only on use, allowed-tools a limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode.config import Scope
from codingcode.errors import DeniedError
from codingcode.runner import build_runner
from codingcode.skills.install import install_skills
from codingcode.skills.loader import Skill
from codingcode.skills.tools import MAX_PROMPT_SKILLS, skill_tool, skills_prompt
from codingcode.tools.claude_names import translate_entry
from codingcode.tools.definition import SessionState
from codingcode.tools.resolver import create_session_tool_resolver
from codingcode.tools.service import ToolService
from codingcode.trust import TrustStore
from codingcode.workspace import Workspace

pytestmark = pytest.mark.anyio

BODY = "# Release\nRun the release checklist SECRET-STEP-7."


def make_project(project: Path, allowed: str = "") -> None:
    folder = project / ".codingcode" / "skills" / "release"
    (folder / "scripts").mkdir(parents=True)
    (folder / "scripts" / "check.sh").write_text("echo ok\n")
    extra = f"allowed-tools: {allowed}\n" if allowed else ""
    (folder / "SKILL.md").write_text(
        "---\nname: release\ndescription: Prepare a release: changelog, version bump, tag.\n"
        f"{extra}---\n{BODY}\n"
    )
    TrustStore().trust(project)


async def test_tool_search_finds_the_skill_and_only_the_call_loads_its_body(
    project: Path,
) -> None:
    make_project(project)
    service = ToolService.default()
    workspace = Workspace.load(project)
    installed = install_skills(workspace, service)
    listing, notes = installed.prompt, installed.notes
    assert notes == []
    assert "- release: Prepare a release" in listing and "SECRET-STEP-7" not in listing
    resolver = create_session_tool_resolver(service)
    assert "skill_release" not in resolver.names()  # deferred: not offered yet
    runner = build_runner(workspace, service=service)  # headless: an ask would be a deny
    ctx = runner.context(state=SessionState())
    found = await runner.run("tool_search", {"query": "prepare a release tag"}, ctx)
    assert "skill_release" in found and "SECRET-STEP-7" not in found
    assert "skill_release" in resolver.names()
    text = await runner.run("skill_release", {}, ctx)  # no approval needed: it only reads
    assert "SECRET-STEP-7" in text
    assert str(project / ".codingcode" / "skills" / "release") in text
    assert "scripts/check.sh" in text
    assert ctx.state.limits == []  # no allowed-tools: no limit


async def test_allowed_tools_limit_the_calls_while_the_skill_is_active(project: Path) -> None:
    make_project(project, "Read, Bash(echo:*)")
    (project / "a.txt").write_text("hello\n")
    service = ToolService.default()
    workspace = Workspace.load(project)
    install_skills(workspace, service)
    runner = build_runner(workspace, service=service, mode="bypass")
    ctx = runner.context(state=SessionState())
    await runner.run("skill_release", {}, ctx)
    assert [limit.entries for limit in ctx.state.limits] == [
        ("read_file", "execute_command(echo *)")
    ]
    assert "hello" in await runner.run("read_file", {"path": "a.txt"}, ctx)
    assert "hi" in await runner.run("execute_command", {"command": "echo hi"}, ctx)
    for command in ("touch b.txt", "echo hi; touch b.txt", "echo $(touch b.txt)"):
        with pytest.raises(DeniedError, match="outside the tools the skill release allows"):
            await runner.run("execute_command", {"command": command}, ctx)
    with pytest.raises(DeniedError, match="allowed-tools: read_file"):
        await runner.run("write_file", {"path": "b.txt", "content": "x"}, ctx)
    assert not (project / "b.txt").exists()  # ground truth: nothing ran
    ctx.state.limits.clear()  # the prompt ended
    await runner.run("write_file", {"path": "b.txt", "content": "x"}, ctx)
    assert (project / "b.txt").read_text() == "x"


async def test_allowed_tools_never_grant_beyond_the_users_rules(project: Path) -> None:
    make_project(project, "Bash, Write")
    service = ToolService.default()
    workspace = Workspace.load(project)
    install_skills(workspace, service)
    runner = build_runner(workspace, service=service)  # default mode, headless
    ctx = runner.context(state=SessionState())
    await runner.run("skill_release", {}, ctx)
    # Inside the skill's list, but nothing of the user's allows it: still denied.
    with pytest.raises(DeniedError, match="needs the user's confirmation"):
        await runner.run("execute_command", {"command": "touch c.txt"}, ctx)
    with pytest.raises(DeniedError, match="needs the user's confirmation"):
        await runner.run("write_file", {"path": "c.txt", "content": "x"}, ctx)
    assert not (project / "c.txt").exists()


async def test_a_real_tool_of_the_same_name_wins(project: Path) -> None:
    make_project(project)
    service = ToolService.default()
    impostor = skill_tool(Skill("other", "Other.", "x", project / "SKILL.md", Scope.USER))
    impostor.name = "skill_release"
    impostor.parameters = type("P", (impostor.parameters,), {})
    service.register(impostor)
    workspace = Workspace.load(project)
    notes = install_skills(workspace, service).notes
    assert notes and "a tool named skill_release exists" in notes[0]


def test_the_prompt_lists_at_most_a_bounded_number_of_skills(project: Path) -> None:
    skills = [
        Skill(f"s{i}", "d" * 500, "body", project / "SKILL.md", Scope.USER) for i in range(20_000)
    ]
    text = skills_prompt(skills)
    assert text.count("\n- s") == MAX_PROMPT_SKILLS
    assert f"and {20_000 - MAX_PROMPT_SKILLS} more skills" in text
    assert len(text) < 30_000
    assert skills_prompt([]) == ""


@pytest.mark.parametrize(
    ("claude", "ours"),
    [
        ("Read", "read_file"),
        ("Bash(git add:*)", "execute_command(git add *)"),
        ("Bash(*)", "execute_command"),
        ("Bash(npm run test *)", "execute_command(npm run test *)"),
        ("WebFetch(domain:example.com)", "fetch_url(domain:example.com)"),
        ("mcp__github__create_issue", "github:create_issue"),
        ("mcp__github", "github:*"),
        ("mcp__github__*", "github:*"),
        ("read_file(src/**)", "read_file(src/**)"),
        ("Grep", "search_code"),
    ],
)
def test_claude_code_tool_names_translate(claude: str, ours: str) -> None:
    assert translate_entry(claude) == ours
