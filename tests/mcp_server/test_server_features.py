"""`codingcode mcp` beyond tools: resources (project files through read_file's approval,
plugins'), prompts, completion, logging, progress, sampling/elicitation through ctx.mcp,
and tools that return MCP content blocks — driven by the official SDK client."""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path
from typing import Any, ClassVar

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from codingcode.mcp_server import resources as resources_module
from codingcode.mcp_server import server as server_module
from codingcode.mcp_server.prompts import PluginPrompts
from codingcode.mcp_server.resources import PluginResources
from codingcode.mcp_server.server import build_tool_server
from codingcode.tools import ToolService, tool
from codingcode.tools.definition import ToolAnnotations, ToolExecCtx
from mcp import Client

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))


def _user_rules(tmp_path: Path, allow: list[str] = (), deny: list[str] = ()) -> None:  # type: ignore[assignment]
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    rules = {"permissions": {"allow": list(allow), "deny": list(deny)}}
    (config / "settings.json").write_text(json.dumps(rules))


# -- resources -------------------------------------------------------------------------------
async def test_project_files_are_listed_in_pages_without_git(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resources_module, "PAGE_SIZE", 50)
    for i in range(120):
        (project / f"f{i:03d}.txt").write_text(str(i))
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("x")
    (project / "sub").mkdir()
    (project / "sub" / "deep.py").write_text("print()")
    server = build_tool_server(project)
    names: list[str] = []
    pages = 0
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        cursor = None
        while True:
            page = await client.list_resources(cursor=cursor)
            pages += 1
            names += [r.name for r in page.resources]
            cursor = page.next_cursor
            if not cursor:
                break
        with pytest.raises(MCPError, match="Invalid cursor"):
            await client.list_resources(cursor="nonsense")
    assert pages == 3 and len(names) == len(set(names)) == 121
    assert "sub/deep.py" in names and not any(n.startswith(".git") for n in names)


def test_listing_20000_files_is_linear_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "big"
    root.mkdir()
    for i in range(20_050):
        (root / f"{i:05d}").touch()
    listing = resources_module.ProjectListing(root)
    start = time.monotonic()
    seen, cursor = 0, None
    while True:
        page, cursor = listing.page(cursor)
        seen += len(page)
        if cursor is None:
            break
    elapsed = time.monotonic() - start
    assert seen == resources_module.MAX_LISTED  # bounded
    assert elapsed < 20, elapsed  # one walk, not one per page (generous for a loaded CI box)


async def test_reading_a_project_file_as_text_and_an_image_as_a_blob(project: Path) -> None:
    (project / "notes.md").write_text("# héllo\n")
    (project / "pic.png").write_bytes(PNG)
    server = build_tool_server(project)
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        text = await client.read_resource(f"file://{project}/notes.md")
        image = await client.read_resource(f"file://{project}/pic.png")
    t = text.contents[0]
    assert isinstance(t, types.TextResourceContents) and t.text == "# héllo\n"
    assert t.mime_type == "text/markdown"
    b = image.contents[0]
    assert isinstance(b, types.BlobResourceContents) and b.mime_type == "image/png"
    assert base64.b64decode(b.blob) == PNG


async def test_reading_goes_through_read_files_approval(project: Path, tmp_path: Path) -> None:
    (project / "secrets").mkdir()
    (project / "secrets" / "key.txt").write_text("s3cret")
    _user_rules(tmp_path, deny=["read_file(**/secrets/**)"])
    outside = tmp_path / ".ssh" / "id_rsa"
    outside.parent.mkdir()
    outside.write_text("a key")
    server = build_tool_server(project)
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        with pytest.raises(MCPError, match="denied") as denied:
            await client.read_resource(f"file://{project}/secrets/key.txt")
        # read_file asks for a key (preset rule); with no one to ask that is a no
        with pytest.raises(MCPError, match="denied"):
            await client.read_resource(f"file://{outside}")
        with pytest.raises(MCPError, match="No resource"):
            await client.read_resource("https://example.com/x")
        with pytest.raises(MCPError, match="No such file"):
            await client.read_resource(f"file://{project}/missing.txt")
    assert "s3cret" not in str(denied.value)


async def test_a_denied_read_can_be_allowed_by_the_clients_user(
    project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / ".ssh" / "config"
    outside.parent.mkdir()
    outside.write_text("asked and allowed")
    seen: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "allow"})

    server = build_tool_server(project)
    async with Client(server.lowlevel_server(), mode="legacy", elicitation_callback=elicit) as c:
        result = await c.read_resource(f"file://{outside}")
    first = result.contents[0]
    assert isinstance(first, types.TextResourceContents) and first.text == "asked and allowed"
    assert len(seen) == 1 and "read_file" in seen[0]


async def test_fifo_and_oversized_files_are_refused_quickly(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mkfifo(project / "pipe")
    monkeypatch.setattr(resources_module, "MAX_READ_BYTES", 1000)
    (project / "big.txt").write_text("x" * 1001)
    server = build_tool_server(project)
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        with anyio.fail_after(5):
            with pytest.raises(MCPError, match="not a regular file"):
                await client.read_resource(f"file://{project}/pipe")
        with pytest.raises(MCPError, match="larger than"):
            await client.read_resource(f"file://{project}/big.txt")


class _Provider:
    resources: ClassVar[list[dict[str, Any]]] = [
        {"uri": "demo://a", "name": "a", "mimeType": "text/plain"}
    ]
    resource_templates: ClassVar[list[dict[str, Any]]] = [
        {"uriTemplate": "demo://item/{id}", "name": "item"}
    ]

    async def read(self, uri: str, **params: str) -> list[dict[str, Any]]:
        return [{"uri": uri, "mimeType": "text/plain", "text": f"{uri} {params}"}]

    async def complete(self, argument: str, value: str) -> list[str]:
        return [v for v in ("10", "11", "20") if v.startswith(value)]


async def test_plugin_resources_and_templates(project: Path) -> None:
    server = build_tool_server(project)
    server.plugin_resources = PluginResources()
    server.plugin_resources.add(_Provider())
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        listed = await client.list_resources()
        templates = await client.list_resource_templates()
        fixed = await client.read_resource("demo://a")
        item = await client.read_resource("demo://item/42")
        ref = types.ResourceTemplateReference(type="ref/resource", uri="demo://item/{id}")
        done = await client.complete(ref, {"name": "id", "value": "1"})
    assert listed.resources[0].uri == "demo://a"
    assert {t.uri_template for t in templates.resource_templates} == {
        "file:///{path}",
        "demo://item/{id}",
    }
    assert isinstance(fixed.contents[0], types.TextResourceContents)
    assert fixed.contents[0].text == "demo://a {}"
    assert isinstance(item.contents[0], types.TextResourceContents)
    assert item.contents[0].text == "demo://item/42 {'id': '42'}"
    assert done.completion.values == ["10", "11"]


def test_a_broken_plugin_is_one_note() -> None:
    found = PluginResources()
    with pytest.raises(TypeError, match="read"):
        found.add(object())


async def test_path_completion_of_the_file_template(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "main.py").write_text("")
    (project / "setup.cfg").write_text("")
    server = build_tool_server(project)
    ref = types.ResourceTemplateReference(type="ref/resource", uri="file:///{path}")
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        top = await client.complete(ref, {"name": "path", "value": "s"})
        inner = await client.complete(ref, {"name": "path", "value": "src/m"})
        escape = await client.complete(ref, {"name": "path", "value": "../"})
    root = str(project).lstrip("/")
    assert top.completion.values == [f"{root}/setup.cfg", f"{root}/src/"]
    assert inner.completion.values == [f"{root}/src/main.py"]
    assert escape.completion.values == []


# -- prompts ---------------------------------------------------------------------------------
class _Prompts:
    prompts: ClassVar[list[dict[str, Any]]] = [
        {
            "name": "review",
            "description": "Review a file",
            "arguments": [{"name": "path", "required": True}],
        }
    ]

    async def get(self, name: str, **arguments: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": {"type": "text", "text": f"Review {arguments}"}}]

    async def complete(self, name: str, argument: str, value: str) -> list[str]:
        return ["a.py", "b.py"]


async def test_plugin_prompts_get_and_complete(project: Path) -> None:
    server = build_tool_server(project)
    prompts = PluginPrompts()
    prompts.add(_Prompts())
    server.prompt_sources.append(prompts)
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        listed = await client.list_prompts()
        got = await client.get_prompt("review", {"path": "x.py"})
        with pytest.raises(MCPError, match="needs the argument"):
            await client.get_prompt("review", {})
        with pytest.raises(MCPError, match="No prompt"):
            await client.get_prompt("nope", {})
        ref = types.PromptReference(type="ref/prompt", name="review")
        done = await client.complete(ref, {"name": "path", "value": ""})
    assert [p.name for p in listed.prompts] == ["review"]
    content = got.messages[0].content
    assert isinstance(content, types.TextContent) and content.text == "Review {'path': 'x.py'}"
    assert done.completion.values == ["a.py", "b.py"]


class _ContractPrompt:
    """A plugin written exactly as the contract names it: get(**arguments) and
    complete(argument_name, value)."""

    prompts: ClassVar[list[dict[str, Any]]] = [
        {"name": "explain", "arguments": [{"name": "topic", "required": True}]}
    ]

    async def get(self, **arguments: str) -> list[dict[str, Any]]:
        text = f"Explain {arguments['topic']}"
        return [{"role": "user", "content": {"type": "text", "text": text}}]

    async def complete(self, argument_name: str, value: str) -> list[str]:
        return [f"{argument_name}:{value}x"]


async def test_plugin_prompts_in_the_contracts_own_form(project: Path) -> None:
    server = build_tool_server(project)
    prompts = PluginPrompts()
    prompts.add(_ContractPrompt())
    server.prompt_sources.append(prompts)
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        got = await client.get_prompt("explain", {"topic": "closures"})
        ref = types.PromptReference(type="ref/prompt", name="explain")
        done = await client.complete(ref, {"name": "topic", "value": "clo"})
    content = got.messages[0].content
    assert isinstance(content, types.TextContent) and content.text == "Explain closures"
    assert done.completion.values == ["topic:clox"]


# -- tools: content blocks, ctx.mcp ------------------------------------------------------------
SAFE = ToolAnnotations(read_only=True)


@tool(annotations=SAFE, effects=frozenset())
async def picture() -> Any:
    """An image."""
    return [
        {"type": "text", "text": "here:"},
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
    ]


@tool(annotations=SAFE, effects=frozenset())
async def not_blocks() -> Any:
    """A list that is not content blocks."""
    return [{"kind": "image"}]


@tool(annotations=SAFE, effects=frozenset())
async def chatty(ctx: ToolExecCtx) -> str:
    """Logs at three levels."""
    assert ctx.mcp is not None
    for level in ("debug", "warning", "error"):
        await ctx.mcp.log(level, {"level": level})
    return "logged"


@tool(annotations=SAFE, effects=frozenset())
async def slow() -> str:
    """Takes a while and says nothing."""
    await anyio.sleep(1.0)
    return "done"


@tool(annotations=SAFE, effects=frozenset())
async def asks(ctx: ToolExecCtx) -> str:
    """Samples the client's model, then asks its user."""
    assert ctx.mcp is not None
    said = await ctx.mcp.sample([{"role": "user", "content": {"type": "text", "text": "hi"}}], 10)
    answer = await ctx.mcp.elicit(
        "Name?", {"type": "object", "properties": {"n": {"type": "string"}}}
    )
    return f"{said['content']['text']} / {answer['content']['n']}"


def _service() -> ToolService:
    service = ToolService.default()
    for t in (picture, not_blocks, chatty, slow, asks):
        service.register(t)
    return service


async def test_content_blocks_are_served_as_they_are(project: Path, tmp_path: Path) -> None:
    _user_rules(tmp_path, allow=["picture", "not_blocks"])
    server = build_tool_server(project, service=_service())
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        good = await client.call_tool("picture", {})
        bad = await client.call_tool("not_blocks", {})
    assert not good.is_error
    assert [b.type for b in good.content] == ["text", "image"]
    image = good.content[1]
    assert isinstance(image, types.ImageContent) and base64.b64decode(image.data) == PNG
    assert bad.is_error and "not an MCP content block" in bad.content[0].text  # type: ignore[union-attr]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_logging_follows_the_level_the_client_set(project: Path, tmp_path: Path) -> None:
    _user_rules(tmp_path, allow=["chatty"])
    got: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        got.append(params)

    server = build_tool_server(project, service=_service())
    async with Client(server.lowlevel_server(), mode="legacy", logging_callback=on_log) as c:
        await c.call_tool("chatty", {})
        assert got == []  # nothing until the client asks
        await c.set_logging_level("warning")
        await c.call_tool("chatty", {})
    assert [p.level for p in got] == ["warning", "error"]
    assert got[0].data == {"level": "warning"}


async def test_a_long_call_gets_a_progress_heartbeat(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "HEARTBEAT_AFTER_S", 0.1)
    monkeypatch.setattr(server_module, "HEARTBEAT_S", 0.1)
    _user_rules(tmp_path, allow=["slow"])
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    server = build_tool_server(project, service=_service())
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        result = await client.call_tool("slow", {}, progress_callback=on_progress)
        quiet = await client.call_tool("slow", {})  # no token: no progress, no error
    assert not result.is_error and not quiet.is_error
    assert len(seen) >= 2 and seen == sorted(seen)


async def test_sampling_and_elicitation_through_ctx_mcp(project: Path, tmp_path: Path) -> None:
    _user_rules(tmp_path, allow=["asks"])

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="hello"), model="m"
        )

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"n": "Ada"})

    server = build_tool_server(project, service=_service())
    async with Client(
        server.lowlevel_server(),
        mode="legacy",
        sampling_callback=sample,
        elicitation_callback=elicit,
    ) as client:
        result = await client.call_tool("asks", {})
    assert not result.is_error and result.content[0].text == "hello / Ada"  # type: ignore[union-attr]
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        refused = await client.call_tool("asks", {})
    assert refused.is_error and "did not declare sampling" in refused.content[0].text  # type: ignore[union-attr]


# -- subscriptions ---------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_subscribers_hear_of_changes_until_they_unsubscribe(
    project: Path, tmp_path: Path
) -> None:
    (project / "watched.txt").write_text("one")
    secret = project / "secrets" / "k.txt"
    secret.parent.mkdir()
    secret.write_text("k")
    _user_rules(tmp_path, deny=["read_file(**/secrets/**)"])
    updated: list[str] = []

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ResourceUpdatedNotification):
            updated.append(root.params.uri)

    server = build_tool_server(project)
    server.plugin_resources = PluginResources()
    server.plugin_resources.add(_Provider())
    uri = f"file://{project}/watched.txt"
    async with Client(server.lowlevel_server(), mode="legacy", message_handler=on_message) as c:
        await c.subscribe_resource(uri)
        await c.subscribe_resource("demo://a")
        with pytest.raises(MCPError, match="denied"):  # what it may not read, it cannot watch
            await c.subscribe_resource(f"file://{secret}")
        assert await server.subscriptions.check() == 0  # nothing changed yet
        (project / "watched.txt").write_text("two, longer")
        assert await server.subscriptions.check() == 1
        await anyio.sleep(0.1)
        assert updated == [uri]
        await c.unsubscribe_resource(uri)
        (project / "watched.txt").write_text("three")
        assert await server.subscriptions.check() == 0
    assert list(server.subscriptions.by_session["stdio"]) == ["demo://a"]
    server.end_session("stdio")
    assert server.subscriptions.by_session == {}


async def test_read_file_gives_an_mcp_client_images_as_image_content(project: Path) -> None:
    (project / "pic.png").write_bytes(PNG)
    (project / "fake.png").write_text("not an image\n")
    server = build_tool_server(project)
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        image = await client.call_tool("read_file", {"path": "pic.png"})
        text = await client.call_tool("read_file", {"path": "fake.png"})
    assert not image.is_error and [b.type for b in image.content] == ["text", "image"]
    block = image.content[1]
    assert isinstance(block, types.ImageContent) and block.mime_type == "image/png"
    assert base64.b64decode(block.data) == PNG
    assert not text.is_error and "not an image" in text.content[0].text  # type: ignore[union-attr]
    # the agent (no MCP client to show it to) still gets text only
    from codingcode.errors import AgentError

    with pytest.raises(AgentError, match="binary file"):
        await server.headless.run("read_file", {"path": "pic.png"})


class _Command:
    """Shaped like codingcode.custom_commands' SlashCommand (the custom-command registry's items)."""

    def __init__(self, name: str, description: str, body: str) -> None:
        self.name, self.description, self.body = name, description, body
        self.argument_hint = "FILE"
        self.source = f"project command {name}.md"

    async def prompt(self, arguments: str) -> Any:
        class Prepared:
            text = self.body.replace("$ARGUMENTS", arguments)

        return Prepared()


class _Registry:
    def list(self) -> list[_Command]:
        return [_Command("review", "Review a file", "Review $ARGUMENTS carefully.")]


async def test_custom_commands_are_prompts(project: Path) -> None:
    from codingcode.mcp_server.prompts import CommandPrompts

    server = build_tool_server(project)
    server.prompt_sources.append(CommandPrompts(_Registry()))
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        listed = await client.list_prompts()
        got = await client.get_prompt("review", {"arguments": "src/app.py"})
        with pytest.raises(MCPError, match="takes one argument"):
            await client.get_prompt("review", {"file": "x"})
    prompt = listed.prompts[0]
    assert prompt.name == "review" and prompt.description == "Review a file"
    assert prompt.arguments and prompt.arguments[0].name == "arguments"
    assert not prompt.arguments[0].required
    content = got.messages[0].content
    assert isinstance(content, types.TextContent)
    assert content.text == "Review src/app.py carefully."


async def test_a_file_name_that_is_not_utf8_is_listed_and_read(project: Path) -> None:
    name = os.fsdecode(b"caf\xe9.txt")  # Latin-1 bytes: a lone surrogate in Python
    (project / name).write_text("bonjour")
    server = build_tool_server(project)
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        listed = await client.list_resources()
        (item,) = [r for r in listed.resources if r.name.startswith("caf")]
        assert item.name == "caf\ufffd.txt" and "%E9" in str(item.uri)
        read = await client.read_resource(str(item.uri))
    content = read.contents[0]
    assert isinstance(content, types.TextResourceContents) and content.text == "bonjour"


async def test_sandbox_deny_read_holds_for_resources(project: Path, tmp_path: Path) -> None:
    """Masked files (sandbox.denyRead) are neither listed nor read, a symlink to one included."""
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"sandbox": {"denyRead": ["creds/**"]}}))
    (project / "creds").mkdir()
    (project / "creds" / "token.txt").write_text("S3CRET")
    (project / "notes.md").write_text("visible")
    os.symlink(project / "creds" / "token.txt", project / "link.txt")
    server = build_tool_server(project)
    ref = types.ResourceTemplateReference(type="ref/resource", uri="file:///{path}")
    async with Client(server.lowlevel_server(), mode="legacy") as client:
        names = [r.name for r in (await client.list_resources()).resources]
        completed = await client.complete(ref, {"name": "path", "value": "creds/t"})
        assert completed.completion.values == []
        for leaf in ("creds/token.txt", "link.txt"):
            with pytest.raises(MCPError, match="sandbox.denyRead") as refused:
                await client.read_resource(f"file://{project}/{leaf}")
            assert "S3CRET" not in str(refused.value)
        seen = await client.read_resource(f"file://{project}/notes.md")
    assert "notes.md" in names and "creds/token.txt" not in names and "link.txt" not in names
    assert isinstance(seen.contents[0], types.TextResourceContents)
