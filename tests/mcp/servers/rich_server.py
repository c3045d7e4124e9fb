"""An MCP server (official SDK, stdio) with resources, templates, subscriptions and prompts,
for the client tests of those parts of the protocol.

* resources ``memo://greeting`` (text), ``memo://logo`` (binary), a template
  ``memo://notes/{name}``; ``resources/subscribe`` is served, and the tool ``touch(uri)``
  sends ``notifications/resources/updated`` for it.
* prompts ``review(topic, strict?)`` and ``hello`` (no arguments).
"""

from __future__ import annotations

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage

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


@mcp.prompt(description="Ask for a review of a topic.")
def review(topic: str, strict: str = "no") -> str:
    return f"Please review {topic} (strict: {strict})."


@mcp.prompt()
def hello() -> list[Message]:
    return [UserMessage("Hi!"), AssistantMessage("Hello, how can I help?")]


if __name__ == "__main__":
    mcp.run("stdio")
