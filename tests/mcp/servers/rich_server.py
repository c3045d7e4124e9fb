"""An MCP server (official SDK, stdio) with resources, templates, subscriptions and prompts,
for the client tests of those parts of the protocol.

* resources ``memo://greeting`` (text), ``memo://logo`` (binary), a template
  ``memo://notes/{name}``; ``resources/subscribe`` is served, and the tool ``touch(uri)``
  sends ``notifications/resources/updated`` for it.
* prompts ``review(topic, strict?)`` and ``hello`` (no arguments).
* tools ``ask`` (an elicitation: name required, age default 30, ok default true; answers
  with what came back), ``ask_name`` (name required, no default), ``work(steps)``
  (progress per step, a warning and an info log line) and ``roots`` (the client's roots).
"""

from __future__ import annotations

import json

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage
from pydantic import BaseModel, Field

mcp = MCPServer("rich", version="0.1")
SUBSCRIBED: set[str] = set()


@mcp.resource("memo://greeting", name="greeting", description="A friendly line.")
def greeting() -> str:
    return "hello from a resource"


@mcp.resource("memo://logo", name="logo", mime_type="image/png")
def logo() -> bytes:
    return b"\x89PNG\r\n\x1a\n" + bytes(100)


@mcp.resource("memo://notes/{name}", name="note", description="A note by name.")
def note(name: str) -> str:
    return f"note {name}"


async def subscribe(ctx: object, params: types.SubscribeRequestParams) -> types.EmptyResult:
    SUBSCRIBED.add(str(params.uri))
    return types.EmptyResult()


mcp._lowlevel_server.add_request_handler(  # the high-level server does not offer it
    "resources/subscribe", types.SubscribeRequestParams, subscribe
)


@mcp.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Say that a resource changed (to its subscribers)."""
    if uri in SUBSCRIBED:
        await ctx.session.send_resource_updated(uri)
        return "notified"
    return "not subscribed"


class Form(BaseModel):
    name: str = Field(description="Who you are")
    age: int = 30
    ok: bool = True


class NameOnly(BaseModel):
    name: str


@mcp.tool()
async def ask(ctx: Context) -> str:
    """Ask the user to fill a form."""
    result = await ctx.elicit("Please fill the form", Form)
    data = result.data.model_dump() if result.action == "accept" else None
    return json.dumps({"action": result.action, "data": data})


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    """Ask for a name (no default)."""
    result = await ctx.elicit("Your name?", NameOnly)
    return result.action


@mcp.tool()
async def work(steps: int, ctx: Context) -> str:
    """Report progress, log a warning and an info line."""
    await ctx.warning("disk almost full")
    await ctx.info("just so you know")
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        await anyio.sleep(0.05)
    return f"worked {steps}"


@mcp.tool()
async def roots(ctx: Context) -> str:
    """The client's roots."""
    listed = await ctx.session.list_roots()
    return json.dumps([{"uri": str(r.uri), "name": r.name} for r in listed.roots])


@mcp.prompt(description="Ask for a review of a topic.")
def review(topic: str, strict: str = "no") -> str:
    return f"Please review {topic} (strict: {strict})."


@mcp.prompt()
def hello() -> list[Message]:
    return [UserMessage("Hi!"), AssistantMessage("Hello, how can I help?")]


if __name__ == "__main__":
    mcp.run("stdio")
