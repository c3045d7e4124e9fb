"""The transports to an MCP server, wrapped so its connection's end is noticed.

stdio through :func:`~codingcode.mcp.launched_stdio.launched_stdio` (the sandbox's launcher
for ``"sandbox": true``, a direct one otherwise), streamable HTTP, and the old HTTP+SSE
transport for ``"type": "sse"`` (both from the SDK).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import anyio

from codingcode.mcp.config import HttpEntry, McpConfigError, McpServerConfig, StdioEntry
from codingcode.process import DirectLauncher, Launcher


def recover_message(exc: Exception) -> Any:
    """The message an SDK transport failed to parse (it hands us the parse error), parsed
    our way — lone surrogates and invalid UTF-8 replaced — or None.

    The SDK's HTTP transports parse with pydantic's strict JSON parser, which refuses a
    lone surrogate escape such as ``"\\udcff"``; the answer would be lost and its call
    would wait for its timeout.
    """
    from pydantic import ValidationError

    from codingcode.mcp.launched_stdio import parse_message

    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors(include_url=False)
    if not errors or errors[0].get("type") != "json_invalid":
        return None
    raw = errors[0].get("input")
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if not isinstance(raw, bytes | bytearray):
        return None
    return parse_message(bytes(raw))


class EofWatchingStream:
    """The read stream of a transport, setting an event when the server's side ends."""

    def __init__(self, inner: Any, ended: anyio.Event) -> None:
        self._inner = inner
        self._ended = ended

    def __getattr__(self, name: str) -> Any:  # last_context and the like
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise
        if isinstance(item, Exception):
            return recover_message(item) or item
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> EofWatchingStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> EofWatchingStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class WatchedTransport:
    """Wraps an SDK transport so the owner task learns when the connection ends."""

    def __init__(self, inner: contextlib.AbstractAsyncContextManager[Any], ended: anyio.Event):
        self._inner = inner
        self._ended = ended

    async def __aenter__(self) -> Any:
        read, write = await self._inner.__aenter__()
        return EofWatchingStream(read, self._ended), write

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)


HEADERS_HELPER_TIMEOUT_S = 10.0


def helper_headers(config: McpServerConfig, project: Path) -> dict[str, str]:
    """Run a server's ``headersHelper`` (``sh -c`` in the project): its stdout must be a JSON
    object of string values, the headers to send. A failure is one McpConfigError line."""
    import json
    import subprocess

    assert isinstance(config.entry, HttpEntry) and config.entry.headersHelper
    where = f"MCP server {config.name!r}: headersHelper"
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", config.entry.headersHelper],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=HEADERS_HELPER_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise McpConfigError(
            f"{where} took longer than {HEADERS_HELPER_TIMEOUT_S:g}s; not connected."
        ) from None
    except OSError as exc:
        raise McpConfigError(f"{where} could not start ({exc}); not connected.") from None
    if done.returncode != 0:
        detail = f": {done.stderr.strip()[:200]}" if done.stderr.strip() else ""
        raise McpConfigError(f"{where} exited with {done.returncode}{detail}; not connected.")
    try:
        data = json.loads(done.stdout)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise McpConfigError(
            f'{where} must print a JSON object of headers ({{"Authorization": "Bearer …"}}); '
            "not connected."
        )
    return data


def open_transport(
    config: McpServerConfig,
    project: Path,
    errlog: IO[str],
    launcher: Callable[[], Launcher] | None = None,
    on_noise: Callable[[str], None] | None = None,
    auth: Any = None,
) -> contextlib.AbstractAsyncContextManager[Any]:
    """The transport for ``config``; a stdio server's stderr goes to ``errlog``; ``auth``
    (an httpx Auth, such as the OAuth provider) signs an HTTP server's requests."""
    entry = config.entry
    if isinstance(entry, StdioEntry):
        from mcp.client.stdio import get_default_environment

        from codingcode.mcp.launched_stdio import launched_stdio

        cwd = Path(entry.cwd).expanduser() if entry.cwd else project
        if not cwd.is_absolute():
            cwd = project / cwd
        if entry.sandbox and launcher is None:
            raise McpConfigError(
                f"MCP server {config.name!r} asks for the sandbox, and this caller has no "
                "sandbox settings to give it (start it through a session)."
            )
        make = launcher if entry.sandbox and launcher is not None else DirectLauncher
        chosen: Launcher = make()
        return launched_stdio(
            [entry.command, *entry.args],
            cwd=cwd,
            env=get_default_environment() | entry.env,
            launcher=chosen,
            errlog=errlog,
            on_noise=on_noise,
        )
    assert isinstance(entry, HttpEntry)
    if entry.headersHelper:
        entry = entry.model_copy(
            update={"headers": {**entry.headers, **helper_headers(config, project)}}
        )
    if entry.type == "sse":
        from mcp.client.sse import sse_client

        from codingcode.mcp.http_body import make_http_client

        return sse_client(
            entry.url,
            headers=entry.headers or None,
            auth=auth,
            httpx_client_factory=make_http_client,
        )
    from mcp.client.streamable_http import streamable_http_client

    from codingcode.mcp.http_body import make_http_client

    return _http_transport(entry.url, entry.headers, make_http_client, streamable_http_client, auth)


@contextlib.asynccontextmanager
async def _http_transport(
    url: str, headers: dict[str, str], make_client: Any, transport: Any, auth: Any = None
) -> AsyncIterator[Any]:
    async with (
        make_client(headers=headers or None, auth=auth) as http,
        transport(url, http_client=http) as s,
    ):
        yield s
