"""Sub-agents: profiles, dispatch_agent, their own tools, session linking, depth."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode.agent import open_session, parse_model
from codingcode.agent.profiles import READ_ONLY_TOOLS, load_agents, parse_profile
from codingcode.agent.session import MAX_DEPTH
from codingcode.agent.transcript import (
    AgentEvent,
    SubAgentFinished,
    SubAgentStarted,
    ToolCallStarted,
)
from codingcode.config import Scope, SettingsError
from codingcode.workspace import Workspace
from tests.agent.fake_model import FakeModelServer, Step, system_text, tool_names, tool_results

pytestmark = pytest.mark.anyio


def write_profile(project: Path, name: str, text: str) -> Path:
    d = project / ".codingcode" / "agents"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}.md"
    path.write_text(text)
    return path


async def test_dispatch_runs_a_sub_agent(
    project: Path, fake: FakeModelServer, model_env: str
) -> None:
    (project / "main.py").write_text("def answer():\n    return 42\n")
    fake.script = [
        # main session
        Step(
            text="Delegating.",
            tool_calls=[
                ("dispatch_agent", {"agent": "explore", "prompt": "What does answer return?"})
            ],
        ),
        # the explorer's own loop
        Step(tool_calls=[("read_file", {"path": "main.py"})]),
        Step(text="answer() returns 42 (main.py:2)."),
        # main session again, with the sub-agent's answer as the tool result
        Step(text="It returns 42."),
    ]
    events: list[AgentEvent] = []
    session = open_session(
        Workspace.load(project),
        model=parse_model(model_env, source="test"),
        sink=events.append,
        session_id="main",
    )
    outcome = await session.send("find out")
    assert outcome.ok and outcome.text == "It returns 42."
    bodies = fake.bodies()
    # The explorer had its own context: its first request holds only the delegated prompt.
    sub_first = bodies[1]
    assert "read-only exploration sub-agent" in system_text(sub_first)
    user_texts = [m for m in sub_first["messages"] if m["role"] == "user"]
    assert len(user_texts) == 1 and "What does answer return?" in str(user_texts[0]["content"])
    # ... and only read-only tools, no way to change files or dispatch further.
    sub_tools = set(tool_names(sub_first))
    assert {"read_file", "search_code", "search_files"} <= sub_tools
    assert not sub_tools & {"write_file", "edit_file", "execute_command", "dispatch_agent"}
    # The main session got the final answer as the result of its call.
    assert tool_results(bodies[3])[-1][0] == "answer() returns 42 (main.py:2)."
    # The sub-agent's calls are linked to the parent session.
    sub_calls = [e for e in events if isinstance(e, ToolCallStarted) and e.call.name == "read_file"]
    assert sub_calls[0].session_id == "main/explore-1"
    started = [e for e in events if isinstance(e, SubAgentStarted)]
    finished = [e for e in events if isinstance(e, SubAgentFinished)]
    assert started[0].agent == "explore" and finished[0].ok


async def test_unknown_agent_lists_known_ones(
    project: Path, fake: FakeModelServer, model_env: str
) -> None:
    write_profile(project, "reviewer", "---\ndescription: Reviews.\n---\nReview it.\n")
    fake.script = [
        Step(tool_calls=[("dispatch_agent", {"agent": "wizard", "prompt": "magic"})]),
        Step(text="ok"),
    ]
    session = open_session(Workspace.load(project), model=parse_model(model_env, source="t"))
    await session.send("go")
    content = tool_results(fake.bodies()[1])[-1][0]
    assert "Unknown agent 'wizard'" in content
    assert "explore" in content and "general" in content and "reviewer" in content
    # The listing is in the tool's description too.
    tools = fake.bodies()[0]["tools"]
    descriptions = {
        t.get("name") or t["function"]["name"]: t.get("description") or t["function"]["description"]
        for t in tools
    }
    desc = descriptions["dispatch_agent"]
    assert "reviewer: Reviews." in desc


async def test_project_profile_filters_tools(
    project: Path, fake: FakeModelServer, model_env: str
) -> None:
    write_profile(
        project,
        "lister",
        "---\nname: lister\ndescription: Lists files.\ntools: [search_files]\nmodel: inherit\n---\n"
        "You list files and nothing else.\n",
    )
    fake.script = [
        Step(tool_calls=[("dispatch_agent", {"agent": "lister", "prompt": "list"})]),
        Step(tool_calls=[("read_file", {"path": "x"})]),  # not one of its tools
        Step(text="no luck"),
        Step(text="done"),
    ]
    session = open_session(Workspace.load(project), model=parse_model(model_env, source="t"))
    assert (await session.send("go")).ok
    sub = fake.bodies()[1]
    assert tool_names(sub) == ["search_files"]
    assert system_text(sub).startswith("You list files and nothing else.")
    refused = tool_results(fake.bodies()[2])[-1][0]
    assert "not available in this session" in refused


async def test_depth_is_bounded(project: Path, fake: FakeModelServer, model_env: str) -> None:
    fake.script = [Step(text="hi")]
    deepest = open_session(
        Workspace.load(project), model=parse_model(model_env, source="t"), depth=MAX_DEPTH
    )
    await deepest.send("hi")
    assert "dispatch_agent" not in tool_names(fake.bodies()[0])
    fake.script = [Step(text="hi")]
    shallower = open_session(
        Workspace.load(project), model=parse_model(model_env, source="t"), depth=MAX_DEPTH - 1
    )
    await shallower.send("hi")
    assert "dispatch_agent" in tool_names(fake.bodies()[1])


def test_profiles_keep_their_scope(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "cfg"
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(user))
    (user / "agents").mkdir(parents=True)
    (user / "agents" / "mine.md").write_text("---\ndescription: Mine.\n---\nUser prompt.\n")
    write_profile(project, "explore", "---\ntools: Read, Grep\n---\nA project override.\n")
    monkeypatch.setenv("CODINGCODE_TRUST_ALL", "1")
    agents = load_agents(Workspace.load(project))
    assert agents["general"].scope is None and agents["general"].path is None
    assert agents["mine"].scope is Scope.USER
    assert agents["explore"].scope is Scope.PROJECT
    # comma form accepted, Claude Code's names in ours
    assert agents["explore"].tools == ("read_file", "search_code")


def test_bad_profiles_name_file_and_field(project: Path) -> None:
    bad = write_profile(project, "bad", "---\ntools: 3\n---\nx\n")
    with pytest.raises(SettingsError, match=r"bad.md: `tools`"):
        parse_profile(bad, Scope.PROJECT)
    unclosed = write_profile(project, "open", "---\nname: open\n")
    with pytest.raises(SettingsError, match="not closed"):
        parse_profile(unclosed, Scope.PROJECT)
    empty = write_profile(project, "empty", "---\nname: empty\n---\n\n")
    with pytest.raises(SettingsError, match="system prompt"):
        parse_profile(empty, Scope.PROJECT)
    badname = write_profile(project, "x", "---\nname: '!!!'\n---\nhi\n")
    assert parse_profile(badname, Scope.PROJECT).name == "x"  # no slug: the file's name
    nothing = write_profile(project, "-", "---\nname: '???'\n---\nhi\n")
    with pytest.raises(SettingsError, match="`name`"):
        parse_profile(nothing, Scope.PROJECT)


def test_claude_code_agents_in_sub_folders_and_with_display_names_load(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code reads ``.claude/agents/`` with its sub-folders and takes any name: a
    display name is dispatched by its slug; ``name: 2024`` is text; trust covers the
    sub-folder's files as the others."""
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("CODINGCODE_TRUST_ALL", raising=False)
    base = project / ".claude" / "agents"
    (base / "review").mkdir(parents=True)
    (base / "review" / "api-checker.md").write_text(
        "---\nname: team-api-checker\ndescription: Checks APIs.\ntools: Read, Bash\n---\n"
        "Check the API.\n"
    )
    (base / "persona.md").write_text(
        "---\nname: Code Reviewer\ndescription: Reviews.\n---\nReview it.\n"
    )
    (base / "spaced.md").write_text(
        "---\nname: spaced\ntools: Read Grep Bash(git status:*)\n---\nLook.\n"
    )
    (base / "year.md").write_text("---\nname: 2024\ndescription: 1.5\n---\nA year.\n")
    (base / ".hidden").mkdir()
    (base / ".hidden" / "x.md").write_text("---\nname: hidden\n---\nNo.\n")
    agents = load_agents(Workspace.load(project))
    assert agents["team-api-checker"].system_prompt == "Check the API."
    assert agents["code-reviewer"].description == "Reviews."
    assert agents["2024"].description == "1.5"
    assert "hidden" not in agents
    assert agents["spaced"].tools == ("read_file", "search_code")  # untrusted: read-only
    assert agents["team-api-checker"].tools == ("read_file",)  # untrusted: read-only
    from codingcode.trust import TrustStore

    TrustStore().trust(project)
    agents = load_agents(Workspace.load(project))
    assert agents["team-api-checker"].tools == ("read_file", "execute_command")
    assert agents["spaced"].tools == ("read_file", "search_code", "execute_command")


def test_untrusted_project_profile_keeps_only_read_only_tools(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("CODINGCODE_TRUST_ALL", raising=False)
    write_profile(project, "builder", "---\ntools: [execute_command, read_file]\n---\nBuild it.\n")
    write_profile(project, "wide", "---\ndescription: all tools\n---\nDo anything.\n")
    write_profile(project, "reader", "---\ntools: [read_file]\n---\nRead.\n")
    agents = load_agents(Workspace.load(project))
    assert agents["builder"].tools == ("read_file",)
    assert "until you trust this project" in agents["builder"].ignored
    assert agents["wide"].tools == READ_ONLY_TOOLS and agents["wide"].ignored
    assert agents["reader"].tools == ("read_file",) and not agents["reader"].ignored
    from codingcode.trust import TrustStore

    TrustStore().trust(project)
    agents = load_agents(Workspace.load(project))
    assert agents["builder"].tools == ("execute_command", "read_file")
    assert agents["wide"].tools is None and not agents["wide"].ignored
    # A change to the file is untrusted again.
    write_profile(project, "builder", "---\ntools: [execute_command]\n---\nBuild more.\n")
    assert load_agents(Workspace.load(project))["builder"].tools == ()


async def test_profile_model_and_cancellation(
    project: Path, fake: FakeModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A profile's own model is used for the sub-agent; cancelling the parent stops the child."""
    import anyio

    for key, value in {**fake.env("anthropic"), **fake.env("openai")}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))
    write_profile(
        project, "thinker", "---\ntools: [read_file]\nmodel: openai:sub-model\n---\nThink.\n"
    )
    fake.script = [
        Step(tool_calls=[("dispatch_agent", {"agent": "thinker", "prompt": "ponder"})]),
        Step(text="pondering forever", hang=True),  # the sub-agent's response never ends
        Step(text="the parent goes on"),
    ]
    session = open_session(
        Workspace.load(project), model=parse_model("anthropic:main-model", source="t")
    )

    async def cancel_when_child_streams() -> None:
        await anyio.to_thread.run_sync(fake.hanging.wait, 10)
        session.cancel()

    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_when_child_streams)
            outcome = await session.send("delegate")
    assert outcome.status == "cancelled"
    assert fake.requests[0].path == "/v1/messages" and fake.bodies()[0]["model"] == "main-model"
    assert fake.requests[1].path == "/v1/chat/completions"
    assert fake.bodies()[1]["model"] == "sub-model"
    assert (await session.send("next")).text == "the parent goes on"
    cancelled = tool_results(fake.bodies()[2])
    assert "cancelled" in cancelled[-1][0]
    await session.aclose()


async def test_a_session_grant_holds_for_its_sub_agents(
    project: Path, fake: FakeModelServer, model_env: str
) -> None:
    from codingcode.approval.confirm import Answer, ScriptedConfirmer

    touch = ("execute_command", {"command": "touch made.txt"})
    fake.script = [
        Step(tool_calls=[touch]),  # main session: asked once, "for this session"
        Step(tool_calls=[("dispatch_agent", {"agent": "general", "prompt": "do it again"})]),
        Step(tool_calls=[touch]),  # the general sub-agent: the grant holds, nobody is asked
        Step(text="done"),
        Step(text="all done"),
    ]
    confirmer = ScriptedConfirmer([Answer.SESSION])
    session = open_session(
        Workspace.load(project), model=parse_model(model_env, source="t"), confirmer=confirmer
    )
    outcome = await session.send("go")
    assert outcome.ok, outcome.text
    assert len(confirmer.requests) == 1
    assert (project / "made.txt").exists()
    results = [r for body in fake.bodies() for r in tool_results(body)]
    assert not any("denied" in str(r).lower() for r in results)
