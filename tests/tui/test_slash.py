"""The app's line handling: /commands never reach the model, !cmd runs in the sandbox and
joins the conversation, @path attaches a file through approval."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from codingcode.agent import open_session, parse_model
from codingcode.agent.session import AgentSession
from codingcode.custom_commands import CommandRegistry
from codingcode.tui import slash
from codingcode.workspace import Workspace
from tests.agent.fake_model import FakeModelServer, Step


@pytest.fixture
def session(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AgentSession]:
    server = FakeModelServer()
    for key, value in server.env("openai").items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))
    s = open_session(
        Workspace.load(project), model=parse_model("openai:fake-model", source="t"), save=True
    )
    s.fake = server  # type: ignore[attr-defined]
    yield s
    anyio.run(s.aclose)
    server.close()


def handler(session: AgentSession) -> tuple[slash.SlashHandler, Console]:
    console = Console(record=True, width=200)
    return slash.SlashHandler(console, session), console


def test_commands_never_reach_the_model(session: AgentSession) -> None:
    h, console = handler(session)
    for line in ["/help", "/cost", "/tools", "/mcp", "/permissions", "/diff", "/mode", "/model"]:
        result = anyio.run(h.handle, line)
        assert result.prompt is None and not result.exit
    unknown = anyio.run(h.handle, "/compcat")
    assert unknown.prompt is None
    out = console.export_text()
    assert "Unknown command /compcat. Did you mean /compact?" in out
    assert "/resume" in out and "context" in out and "read_file" in out
    assert anyio.run(h.handle, "/exit").exit and anyio.run(h.handle, "/quit").exit
    assert session.fake.requests == []  # type: ignore[attr-defined]
    # A path is a prompt, not a command.
    assert anyio.run(h.handle, "/usr/bin/env is missing").prompt == "/usr/bin/env is missing"


def test_mode_switch_changes_approval_and_the_prompt(session: AgentSession) -> None:
    h, _ = handler(session)
    anyio.run(h.handle, "/mode plan")
    assert session.runner.mode == "plan" and "Permission mode: plan" in session.system_prompt
    decision = anyio.run(session.runner.decide, "write_file", {"path": "a", "content": "x"})
    assert decision.decision == "deny"


def test_shell_output_joins_the_conversation(session: AgentSession) -> None:
    h, console = handler(session)
    anyio.run(h.handle, "!echo hello-from-the-user")
    assert "hello-from-the-user" in console.export_text()
    last = session.history[-1]
    assert last.role == "user" and "hello-from-the-user" in last.text
    server: FakeModelServer = session.fake  # type: ignore[attr-defined]
    server.script = [Step(text="seen")]
    anyio.run(session.send, "what did I run?")
    sent = server.bodies()[-1]["messages"]
    assert any("hello-from-the-user" in (m.get("content") or "") for m in sent)


def test_mentions_attach_files_through_approval(session: AgentSession, project: Path) -> None:
    (project / "notes.md").write_text("the plan is ready\n")
    (project / ".env").write_text("TOKEN=secret-value\n")
    h, console = handler(session)
    prompt = anyio.run(h.handle, "look at @notes.md and @.env and me@example.com").prompt
    assert prompt is not None
    assert "the plan is ready" in prompt and "secret-value" not in prompt
    assert "@.env not attached" in console.export_text()


def test_clear_compact_and_resume(session: AgentSession) -> None:
    server: FakeModelServer = session.fake  # type: ignore[attr-defined]
    h, console = handler(session)
    server.script = [Step(text="one"), Step(text="two")]
    anyio.run(session.send, "first")
    anyio.run(session.send, "second")
    first_id = session.session_id
    server.script = [Step(text="The gist.")]
    anyio.run(h.handle, "/compact the numbers")
    assert "Compacted" in console.export_text()
    assert "The gist." in session.history[0].text
    assert "the numbers" in server.bodies()[-1]["messages"][-1]["content"]
    anyio.run(h.handle, "/clear")
    assert session.history == []
    anyio.run(h.handle, "/resume")
    assert first_id in console.export_text()
    anyio.run(h.handle, f"/resume {first_id}")
    assert session.history == []  # the clear was saved too


def test_completions(project: Path) -> None:
    from prompt_toolkit.document import Document

    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("")
    completer = slash.make_completer(project, CommandRegistry())

    def complete(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), None)]

    assert "/compact" in complete("/comp")
    assert complete("see @sr") == ["@src/"]
    assert complete("see @src/a") == ["@src/app.py"]


def test_tool_listing_marks_deferred_custom_and_agent_tools(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pydantic import BaseModel

    from codingcode.cli import tool_commands, tool_service
    from codingcode.tools import ToolDefinition, ToolService

    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))

    class NoArgs(BaseModel):
        pass

    async def run(args: NoArgs, ctx: object) -> str:
        return "ok"

    extra = ToolDefinition(
        name="rare_tool",
        description="Something rarely needed.",
        parameters=NoArgs,
        execute=run,
        deferred=True,
    )

    def service() -> ToolService:
        s = ToolService.default()
        s.register(extra)
        return s

    monkeypatch.setattr(tool_service, "cli_tool_service", service)
    rows, _ = anyio.run(tool_commands.session_tools, project)
    by_name = {r["name"]: r for r in rows}
    assert by_name["rare_tool"]["deferred"] and not by_name["rare_tool"]["offered"]
    assert by_name["rare_tool"]["kind"] == "custom"
    assert by_name["tool_search"]["kind"] == "agent" and by_name["tool_search"]["offered"]
    assert by_name["dispatch_agent"]["kind"] == "agent"


def test_rewind_restores_files_and_the_conversation(session: AgentSession, project: Path) -> None:
    from codingcode.agent.sessions.store import load

    (project / "a.txt").write_text("before\n")
    session.runner.mode = "bypass"
    session.runner.pipeline.mode = "bypass"  # type: ignore[union-attr]
    server: FakeModelServer = session.fake  # type: ignore[attr-defined]
    server.script = [Step(text="hi")]
    anyio.run(session.send, "first prompt")
    server.script = [
        Step(tool_calls=[("write_file", {"path": "a.txt", "content": "after\n"})]),
        Step(tool_calls=[("execute_command", {"command": "echo made > new.txt"})]),
        Step(text="changed"),
    ]
    anyio.run(session.send, "second prompt")
    assert (project / "a.txt").read_text() == "after\n" and (project / "new.txt").exists()
    h, console = handler(session)
    anyio.run(h.handle, "/rewind")
    listing = console.export_text()
    assert "1. " in listing and "write_file a.txt" in listing
    anyio.run(h.handle, "/rewind 1")
    out = console.export_text()
    assert "Files: restored 1, deleted 1" in out and "dropped" in out
    assert (project / "a.txt").read_text() == "before\n" and not (project / "new.txt").exists()
    assert [m.text for m in session.history if m.role == "user"] == ["first prompt"]
    # Saved: a resumed session has the rewound conversation.
    assert session.store is not None
    loaded = load(session.store.directory)
    assert [m.text for m in loaded.history if m.role == "user"] == ["first prompt"]
    anyio.run(h.handle, "/rewind zz")
    assert "No checkpoint 'zz'" in console.export_text()


def test_bashes_lists_and_kills_and_the_model_is_reminded(session: AgentSession) -> None:
    from codingcode.tools import ToolExecCtx

    ctx = ToolExecCtx(project_path=session.project, session_id=session.session_id)
    ctx.state = session.state
    anyio.run(
        session.service.call,
        "execute_command",
        {"command": "exec sleep 99.123", "run_in_background": True},
        ctx,
    )
    assert "bg1: exec sleep 99.123" in session.system()
    h, console = handler(session)
    anyio.run(h.handle, "/bashes")
    listed = console.export_text()
    assert "bg1" in listed and "running" in listed
    anyio.run(h.handle, "/bashes kill bg1")
    assert "killed by the user" in console.export_text()
    assert "Background commands running" not in session.system()
    anyio.run(h.handle, "/bashes kill bg7")
    assert "no background process 'bg7'" in console.export_text()


def test_config_and_agents_show_claude_codes_files(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews.\ntools: Read, Grep\n---\nReview it.\n"
    )
    (agents / "broken.md").write_text("---\nname: broken\ndescription: x: y: z\n---\nBody\n")
    (project / ".claude" / "settings.json").write_text('{"permissions": {"deny": ["Bash(rm:*)"]}}')
    server = FakeModelServer()
    for key, value in server.env("openai").items():
        monkeypatch.setenv(key, value)
    s = open_session(Workspace.load(project), model=parse_model("openai:fake-model", source="t"))
    try:
        h, console = handler(s)
        for line in ("/config", "/agents", "/fix-the-thing"):
            assert anyio.run(h.handle, line).prompt is None
        out = console.export_text()
        assert f"{project}/.claude/settings.json (Claude Code, NOT trusted" in out
        assert "uses: permissions (1 deny)" in out
        assert "reviewer — Reviews. [read_file, search_code]" in out
        assert "skipped" in out and "broken.md" in out
    finally:
        anyio.run(s.aclose)
        server.close()
