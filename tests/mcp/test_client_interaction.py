"""What MCP servers ask of and tell the user: elicitation (app asks with the schema,
headless declines or accepts defaults), progress, logging, and the roots we announce."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.console import Console

from codingcode.cancel import CancelSignal
from codingcode.config import Scope
from codingcode.errors import CancelledError
from codingcode.mcp.client import McpManager
from codingcode.mcp.config import McpServerConfig, parse_server
from codingcode.mcp.interaction import Headless, TerminalInteraction, defaults_of, install
from codingcode.tools import ToolExecCtx, ToolService

SERVERS = Path(__file__).parent / "servers"
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def _rich(tmp: Path, **extra: object) -> McpServerConfig:
    raw = {"command": sys.executable, "args": [str(SERVERS / "rich_server.py")], **extra}
    return parse_server("rich", raw, scope=Scope.USER, source=tmp / "s.json", env={})


class Scripted:
    """Answers the terminal's questions from a list, recording what was asked."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    async def __call__(self, text: str, default: str | None) -> str:
        self.asked.append(text)
        if not self.answers:
            raise EOFError
        answer = self.answers.pop(0)
        return (default or "") if answer == "<enter>" else answer


async def _call(service: ToolService, name: str, args: dict[str, Any], tmp: Path) -> str:
    return await service.call(name, args, ToolExecCtx(project_path=tmp))


async def test_headless_declines(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager([_rich(tmp_path)], project=tmp_path, service=service):
        out = json.loads(await _call(service, "rich:ask", {}, tmp_path))
        assert out == {"action": "decline", "data": None}


async def test_headless_accept_defaults_only_when_every_required_field_has_one(
    tmp_path: Path,
) -> None:
    service = ToolService()
    config = _rich(tmp_path, elicitation="accept-defaults")
    async with McpManager([config], project=tmp_path, service=service):
        # 'name' is required with no default: declined.
        assert json.loads(await _call(service, "rich:ask", {}, tmp_path))["action"] == "decline"
    schema = {
        "type": "object",
        "properties": {"age": {"type": "integer", "default": 30}, "x": {"type": "string"}},
        "required": ["age"],
    }
    assert defaults_of(schema) == {"age": 30}
    result = await Headless().elicit("s", "m", schema, "accept-defaults")
    assert (result.action, result.content) == ("accept", {"age": 30})
    assert (await Headless().elicit("s", "m", schema, "ask")).action == "decline"


async def test_the_app_asks_with_the_schema_and_checks_the_answer(tmp_path: Path) -> None:
    console = Console(record=True, width=200)
    # yes; name; age "old" (refused, asked again) then 41; ok: Enter keeps the default (true)
    ask = Scripted(["y", "Ada", "old", "41", "<enter>"])
    service = ToolService()
    with install(TerminalInteraction(console, anyio.Lock(), ask=ask)):
        async with McpManager([_rich(tmp_path)], project=tmp_path, service=service):
            out = json.loads(await _call(service, "rich:ask", {}, tmp_path))
    assert out == {"action": "accept", "data": {"name": "Ada", "age": 41, "ok": True}}
    shown = console.export_text()
    assert "MCP server 'rich' asks: Please fill the form" in shown
    assert "a whole number, please" in shown
    assert any("Who you are" in q for q in ask.asked)


async def test_the_app_can_decline_or_cancel(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager([_rich(tmp_path)], project=tmp_path, service=service):
        for answer, action in (("d", "decline"), ("c", "cancel")):
            with install(TerminalInteraction(Console(), anyio.Lock(), ask=Scripted([answer]))):
                out = json.loads(await _call(service, "rich:ask", {}, tmp_path))
            assert out["action"] == action
        # Ctrl-D / Ctrl-C at the question: cancel.
        with install(TerminalInteraction(Console(), anyio.Lock(), ask=Scripted([]))):
            assert await _call(service, "rich:ask_name", {}, tmp_path) == "cancel"


async def test_decline_in_the_entry_never_asks(tmp_path: Path) -> None:
    ask = Scripted(["y", "Ada"])
    service = ToolService()
    with install(TerminalInteraction(Console(), anyio.Lock(), ask=ask)):
        async with McpManager(
            [_rich(tmp_path, elicitation="decline")], project=tmp_path, service=service
        ):
            assert await _call(service, "rich:ask_name", {}, tmp_path) == "decline"
    assert ask.asked == []


async def test_progress_and_warnings_are_shown(tmp_path: Path) -> None:
    console = Console(record=True, width=200)
    service = ToolService()
    with install(TerminalInteraction(console, anyio.Lock())):
        async with McpManager([_rich(tmp_path)], project=tmp_path, service=service):
            assert await _call(service, "rich:work", {"steps": 3}, tmp_path) == "worked 3"
    shown = console.export_text()
    assert "[rich warning] disk almost full" in shown
    assert "just so you know" not in shown  # info stays in the debug log
    assert "⋯ rich:work" in shown and "3/3 step 3" in shown


async def test_roots_are_the_project(tmp_path: Path) -> None:
    project = tmp_path / "my project"
    project.mkdir()
    service = ToolService()
    async with McpManager([_rich(tmp_path)], project=project, service=service):
        roots = json.loads(await _call(service, "rich:roots", {}, project))
    assert roots == [{"uri": project.resolve().as_uri(), "name": "my project"}]


async def test_an_interrupted_question_cancels_the_call(tmp_path: Path) -> None:
    asked = anyio.Event()

    async def never(text: str, default: str | None) -> str:
        asked.set()
        await anyio.sleep(60)
        return ""

    service = ToolService()
    signal = CancelSignal()
    with install(TerminalInteraction(Console(), anyio.Lock(), ask=never)):
        async with McpManager([_rich(tmp_path)], project=tmp_path, service=service):

            async def interrupt() -> None:
                await asked.wait()
                signal.set("interrupted")

            async with anyio.create_task_group() as tg:
                tg.start_soon(interrupt)
                with anyio.fail_after(20), pytest.raises(CancelledError):
                    await service.call(
                        "rich:ask", {}, ToolExecCtx(project_path=tmp_path, signal=signal)
                    )
