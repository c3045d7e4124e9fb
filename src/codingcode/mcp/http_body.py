"""HTTP answers of MCP servers, repaired before the SDK parses them: a lone surrogate escape
(``"\\udcff"`` with no partner) becomes ``"\\ufffd"``.

The SDK parses JSON with pydantic's strict parser, which refuses a lone surrogate; the answer
would be lost and the call would fail ("lone leading surrogate"). Other clients' parsers take
it, and stdio answers are repaired the same way (:mod:`codingcode.mcp.launched_stdio`).

The repair is streaming and linear: a body is cut only after a ``"`` or a newline (neither
can be inside an escape, nor between the two halves of a surrogate pair), so chunk
boundaries never split what is matched, and each byte is scanned once.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx2

# An escaped backslash (kept, so that "\\udcff" — a backslash then text — is not touched),
# a valid surrogate pair (kept), or a lone surrogate escape (replaced).
_ESCAPES = re.compile(
    rb"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)
_REPAIRED_TYPES = ("application/json", "text/event-stream")


def _fix(match: re.Match[bytes]) -> bytes:
    text = match.group(0)
    return text if len(text) != 6 else b"\\ufffd"


def repair(data: bytes) -> bytes:
    """``data`` (JSON text, whole) with its lone surrogate escapes replaced."""
    if b"\\u" not in data:
        return data
    return _ESCAPES.sub(_fix, data)


async def repair_stream(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The chunks repaired; cut only after a quote or a newline (see the module's doc)."""
    held: list[bytes] = []
    async for chunk in chunks:
        cut = max(chunk.rfind(b'"'), chunk.rfind(b"\n"))
        if cut < 0:
            held.append(chunk)
            continue
        held.append(chunk[: cut + 1])
        yield repair(b"".join(held))
        held = [chunk[cut + 1 :]] if cut + 1 < len(chunk) else []
    if held:
        yield repair(b"".join(held))


class _RepairedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in repair_stream(self._inner.__aiter__()):
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class SurrogateRepairTransport(httpx2.AsyncBaseTransport):
    """An httpx transport whose JSON and SSE response bodies are repaired."""

    def __init__(self, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self._inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        kind = response.headers.get("content-type", "").lower()
        if not kind.startswith(_REPAIRED_TYPES):
            return response
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_RepairedStream(response.stream),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def make_http_client(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """The SDK's MCP HTTP client (same timeouts), over :class:`SurrogateRepairTransport`."""
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    if timeout is None:
        timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    kwargs: dict[str, Any] = {"timeout": timeout, "transport": SurrogateRepairTransport()}
    if headers is not None:
        kwargs["headers"] = headers
    if auth is not None:
        kwargs["auth"] = auth
    return httpx2.AsyncClient(**kwargs)
