"""Custom commands in the app's line handling (issue 17): /name becomes its prompt, with its
model for that prompt only, and other parts can register commands in the same registry."""

from __future__ import annotations

from pathlib import Path

import anyio
from rich.console import Console

from codingcode.agent.session import AgentSession
from codingcode.config import user_config_dir
from codingcode.custom_commands import CommandPrompt, commands_of
from codingcode.tui import slash
from tests.tui.test_slash import session

__all__ = ["session"]


class McpPrompt:
    name = "docs:explain"
    description = "Explain a topic"
    argument_hint = "TOPIC"
    source = "MCP server docs"

    async def prompt(self, arguments: str) -> CommandPrompt:
        return CommandPrompt(f"Explain {arguments} (from the docs server)")


def test_custom_commands_become_prompts(session: AgentSession, project: Path) -> None:
    commands = user_config_dir() / "commands"
    commands.mkdir(parents=True)
    (commands / "fix.md").write_text(
        "---\ndescription: Fix an issue\nargument-hint: NUMBER\nmodel: openai:other-model\n"
        "---\nFix issue #$1. !`echo from-bang`\n"
    )
    (commands / "clear.md").write_text("Shadowed.\n")
    console = Console(record=True, width=200)
    h = slash.SlashHandler(console, session)
    commands_of(session).register(McpPrompt())  # what an MCP client does
    result = anyio.run(h.handle, "/fix 42")
    assert result.prompt == "Fix issue #42. from-bang"
    # The command's model is used for that prompt only.
    assert str(session.model) == "openai:other-model"
    assert result.after is not None
    result.after()
    assert str(session.model) == "openai:fake-model"
    mcp = anyio.run(h.handle, "/docs:explain caching")
    assert mcp.prompt == "Explain caching (from the docs server)" and mcp.after is None
    anyio.run(h.handle, "/help")
    out = console.export_text()
    assert "/fix NUMBER — Fix an issue" in out and "/docs:explain TOPIC" in out
    assert "clear.md is shadowed by the built-in /clear" in out
    unknown = anyio.run(h.handle, "/fxi 1")
    assert unknown.prompt is None and "Did you mean /fix?" in console.export_text()
    assert session.fake.requests == []  # type: ignore[attr-defined]
