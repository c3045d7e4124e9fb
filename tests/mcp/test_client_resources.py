"""MCP resources from the client side: list, read, templates, subscriptions, the deferred
tools the model uses, and ``@server:uri`` mentions in the app."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rich.console import Console

from codingcode.config import Scope
from codingcode.errors import InvalidArgumentsError, ToolFailureError
from codingcode.mcp import LIST_TOOL, READ_TOOL
from codingcode.mcp.client import McpManager
from codingcode.mcp.config import McpServerConfig, parse_server
from codingcode.mcp.resources import resource_mentions
from codingcode.tools import ToolExecCtx, ToolService
from codingcode.workspace import Workspace
from tests.agent.fake_model import FakeModelServer
from tests.mcp.conftest import eventually

SERVERS = Path(__file__).parent / "servers"
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def _rich(tmp: Path) -> McpServerConfig:
    raw = {"command": sys.executable, "args": [str(SERVERS / "rich_server.py")]}
    return parse_server("rich", raw, scope=Scope.USER, source=tmp / "s.json", env={})


def _tiny(tmp: Path) -> McpServerConfig:
    """A server whose capabilities hold tools only."""
    raw = {"command": sys.executable, "args": [str(SERVERS / "raw_server.py"), "plain"]}
    return parse_server("tiny", raw, scope=Scope.USER, source=tmp / "s.json", env={})


async def test_list_read_templates_and_subscribe(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager([_rich(tmp_path)], project=tmp_path, service=service):
        listing, reader = service.get(LIST_TOOL), service.get(READ_TOOL)
        assert listing.deferred and reader.deferred
        assert listing.origin.kind == "mcp" and reader.effects == frozenset({"reads"})
        assert reader.annotations.read_only
        ctx = ToolExecCtx(project_path=tmp_path)
        listed = await service.call(LIST_TOOL, {}, ctx)
        assert "rich: 2 resources, 1 templates" in listed
        assert "memo://greeting [text/plain] greeting — A friendly line." in listed
        assert "template memo://notes/{name} note" in listed

        text = await service.call(READ_TOOL, {"server": "rich", "uri": "memo://greeting"}, ctx)
        assert text == "<memo://greeting> (text/plain)\nhello from a resource"
        binary = await service.call(READ_TOOL, {"server": "rich", "uri": "memo://logo"}, ctx)
        assert "binary data, not shown" in binary and "PNG" not in binary
        note = await service.call(READ_TOOL, {"server": "rich", "uri": "memo://notes/x1"}, ctx)
        assert note.endswith("note x1")

        sub = {"server": "rich", "uri": "memo://greeting", "subscribe": True}
        assert "[subscribed" in await service.call(READ_TOOL, sub, ctx)
        assert await service.call("rich:touch", {"uri": "memo://greeting"}, ctx) == "notified"
        await eventually(lambda: "memo://greeting" in (service and _updated(service)))
        assert "greeting (updated)" in await service.call(LIST_TOOL, {"server": "rich"}, ctx)
        await service.call(READ_TOOL, {"server": "rich", "uri": "memo://greeting"}, ctx)
        assert "(updated)" not in await service.call(LIST_TOOL, {}, ctx)  # read since


def _updated(service: ToolService) -> set[str]:
    manager = service.get(READ_TOOL).execute.manager  # type: ignore[attr-defined]
    return set(manager.servers["rich"].updated)


async def test_errors_name_the_server_and_what_exists(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager([_rich(tmp_path), _tiny(tmp_path)], project=tmp_path, service=service):
        with pytest.raises(ToolFailureError, match="Unknown resource: memo://nope"):
            await service.call(READ_TOOL, {"server": "rich", "uri": "memo://nope"})
        with pytest.raises(InvalidArgumentsError, match="'tiny' offers no resources.*rich"):
            await service.call(READ_TOOL, {"server": "tiny", "uri": "x://y"})
        with pytest.raises(InvalidArgumentsError, match="'ghost' is not configured"):
            await service.call(LIST_TOOL, {"server": "ghost"})


async def test_no_resource_tools_without_a_server_that_has_resources(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager([_tiny(tmp_path)], project=tmp_path, service=service):
        assert READ_TOOL not in service and LIST_TOOL not in service


def test_mentions_are_parsed_for_known_servers_only() -> None:
    text = "see @rich:memo://greeting, @rich:memo://greeting and @x:y mail@rich:z @rich:"
    assert resource_mentions(text, {"rich"}) == [("rich", "memo://greeting")]


async def test_a_mention_attaches_the_resource_through_approval(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codingcode.agent import open_session, parse_model
    from codingcode.tui import slash

    fake = FakeModelServer()
    for key, value in fake.env("openai").items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))
    service = ToolService()
    try:
        async with McpManager([_rich(tmp_path)], project=project, service=service):
            for mode, attached in (("bypass", True), ("plan", False)):
                session = open_session(
                    Workspace.load(project),
                    model=parse_model("openai:fake-model", source="t"),
                    service=service,
                    mode=mode,
                )
                console = Console(record=True, width=200)
                h = slash.SlashHandler(console, session)
                prompt = (await h.handle("summarise @rich:memo://greeting please")).prompt
                await session.aclose()
                assert prompt is not None and prompt.startswith("summarise")
                if attached:
                    assert '<resource server="rich" uri="memo://greeting">' in prompt
                    assert "hello from a resource" in prompt
                else:  # plan mode asks; nobody can answer here: denied, and said so
                    assert "hello from a resource" not in prompt
                    assert "@rich:memo://greeting not attached" in console.export_text()
    finally:
        fake.close()
