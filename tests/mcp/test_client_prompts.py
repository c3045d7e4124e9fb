"""MCP prompts as the app's slash commands: /server:prompt ARGS."""

from __future__ import annotations

import sys
from pathlib import Path

import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from codingcode.config import Scope
from codingcode.errors import InvalidArgumentsError
from codingcode.mcp.client import McpManager
from codingcode.mcp.config import parse_server
from codingcode.mcp.prompts import parse_arguments
from codingcode.tools import ToolService
from codingcode.workspace import Workspace
from tests.agent.fake_model import FakeModelServer

SERVERS = Path(__file__).parent / "servers"
pytestmark = [pytest.mark.timeout(60)]


def _prompt(*args: tuple[str, bool]) -> types.Prompt:
    return types.Prompt(
        name="p", arguments=[types.PromptArgument(name=n, required=r) for n, r in args]
    )


def test_arguments_by_name_by_position_and_whole_line() -> None:
    two = _prompt(("topic", True), ("strict", False))
    assert parse_arguments(two, "auth") == {"topic": "auth"}
    assert parse_arguments(two, "'the login flow' yes") == {
        "topic": "the login flow",
        "strict": "yes",
    }
    assert parse_arguments(two, "strict=no topic=x") == {"strict": "no", "topic": "x"}
    assert parse_arguments(two, "strict=no x") == {"strict": "no", "topic": "x"}
    one = _prompt(("question", True))
    assert parse_arguments(one, "why is it slow? and 'where'") == {
        "question": "why is it slow? and 'where'"
    }
    assert parse_arguments(_prompt(), "") == {}
    with pytest.raises(InvalidArgumentsError, match=r"needs topic; it takes: topic=… \[strict=…\]"):
        parse_arguments(two, "strict=yes")
    with pytest.raises(InvalidArgumentsError, match="Too many arguments"):
        parse_arguments(two, "a b c")
    with pytest.raises(InvalidArgumentsError, match="Cannot read the arguments"):
        parse_arguments(two, "'unclosed")


@given(st.text(max_size=200))
def test_any_line_parses_or_is_one_clear_error(line: str) -> None:
    two = _prompt(("topic", True), ("strict", False))
    try:
        values = parse_arguments(two, line)
    except InvalidArgumentsError as exc:
        assert "\n" not in exc.message
    else:
        assert set(values) <= {"topic", "strict"} and "topic" in values


@pytest.mark.anyio
async def test_slash_prompt_sends_the_prompts_messages(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codingcode.agent import open_session, parse_model
    from codingcode.tui import slash

    fake = FakeModelServer()
    for key, value in fake.env("openai").items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))
    raw = {"command": sys.executable, "args": [str(SERVERS / "rich_server.py")]}
    config = parse_server("rich", raw, scope=Scope.USER, source=tmp_path / "s.json", env={})
    service = ToolService()
    try:
        async with McpManager([config], project=project, service=service):
            session = open_session(
                Workspace.load(project),
                model=parse_model("openai:fake-model", source="t"),
                service=service,
            )
            console = Console(record=True, width=200)
            h = slash.SlashHandler(console, session)
            r = await h.handle("/rich:review 'the parser' strict=yes")
            assert r.prompt == "Please review the parser (strict: yes)."
            r = await h.handle("/rich:hello")
            assert r.prompt == "[user]\nHi!\n\n[assistant]\nHello, how can I help?"
            for line, said in (
                ("/rich:review", "needs topic"),
                ("/rich:nope", "has no prompt 'nope': /rich:review, /rich:hello"),
                ("/ghost:x", "No MCP server named 'ghost'"),
            ):
                assert (await h.handle(line)).prompt is None
                assert said in console.export_text()
            await session.aclose()
            assert fake.requests == []  # nothing reached the model
    finally:
        fake.close()
