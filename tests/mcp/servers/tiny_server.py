"""A small MCP server on the official SDK, for the client tests (stdio, or `http PORT`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ImageContent, ToolAnnotations
from pydantic import BaseModel

mcp = MCPServer("tiny", version="0.1")
MARKERS = Path(os.environ.get("TINY_MARKERS", "."))


class Sum(BaseModel):
    total: int


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
def add(a: int, b: int) -> Sum:
    """Add two integers."""
    return Sum(total=a + b)


@mcp.tool(annotations=ToolAnnotations(destructive_hint=False))
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@mcp.tool()
async def slow(seconds: float) -> str:
    """Sleep, recording a marker file if cancelled."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        (MARKERS / "cancelled").write_text("yes")
        raise
    return "slept"


@mcp.tool()
async def grow(ctx: Context) -> str:
    """Add the tool 'extra' and tell the client its tool list changed."""
    mcp.add_tool(lambda: "extra!", name="extra", description="added at runtime")
    await ctx.session.send_tool_list_changed()
    return "grown"


@mcp.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("boom")


@mcp.tool()
def die() -> str:
    """Exit the whole server process."""
    print("tiny: dying on request", file=sys.stderr, flush=True)
    os._exit(3)


@mcp.tool()
def picture() -> list[object]:
    """Return a text and an image."""
    return [
        "a red dot",
        ImageContent(
            type="image",
            data="iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
            mime_type="image/png",
        ),
    ]


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run()
