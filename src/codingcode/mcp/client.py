"""Import the tools of configured MCP servers, on the official ``mcp`` SDK (2.x).

Each server gets a :class:`ServerConnection`. One *owner task* per connection enters the
SDK ``Client`` and leaves it (entering and leaving a session from different tasks is what
breaks anyio's cancel scopes); calls are made from the callers' own tasks, which the SDK
supports, so a caller's cancellation or timeout cancels exactly its request and the SDK
sends ``notifications/cancelled`` to the server.

* Transports: stdio (the server's stderr goes to a private file whose tail is quoted when the
  server fails), streamable HTTP, and the old HTTP+SSE transport for ``"type": "sse"``.
* We speak the handshake protocol (``initialize``, 2025-11-25 and older), which every server
  we tested accepts, and walk ``tools/list`` pagination (at most :data:`MAX_PAGES` pages).
* ``notifications/tools/list_changed`` re-lists every page and re-registers the tools.
* A server that exits, or never starts, makes its tools fail with a message saying so (with
  its last stderr lines); the next use starts it again. The session survives either way.
* Results: text as text, ``structuredContent`` as JSON, images/audio/resources described
  (never base64), ``isError`` as an :class:`AgentError`.

Tools are registered in the session's ToolService as ``server:tool`` (SPEC L3), deferred when
the server has more than :data:`~codingcode.mcp.config.DEFER_THRESHOLD` tools unless its
entry sets ``deferred``.
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import anyio
import mcp_types as types
from pydantic import BaseModel, ConfigDict, model_validator

from codingcode import __version__
from codingcode.errors import (
    AgentError,
    CancelledError,
    ToolFailureError,
    ToolTimeoutError,
)
from codingcode.mcp.config import (
    DEFER_THRESHOLD,
    HttpEntry,
    McpServerConfig,
    StartFilter,
    StdioEntry,
)
from codingcode.process import Launcher
from codingcode.tools.definition import ToolAnnotations, ToolDefinition, ToolExecCtx, ToolOrigin
from codingcode.tools.service import ToolService

#: Pages of tools/list we follow before deciding a server's cursor never ends.
MAX_PAGES = 100
#: Cap on the text a single MCP result may put in front of the model.
MAX_RESULT_CHARS = 100_000
_STDERR_TAIL_LINES = 8


class ServerState(StrEnum):
    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"
    SKIPPED = "skipped"


# -- results --------------------------------------------------------------------------
def _describe_block(block: Any) -> str | None:
    """A non-text content block as one line: what it is, never its bytes."""
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, (types.ImageContent, types.AudioContent)):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        size = len(block.data) * 3 // 4  # base64 -> bytes, near enough
        return f"[{kind}: {block.mime_type}, about {size} bytes, not shown]"
    if isinstance(block, types.ResourceLink):
        mime = f", {block.mime_type}" if block.mime_type else ""
        about = f" — {block.description}" if block.description else ""
        return f"[resource link: {block.name} <{block.uri}>{mime}]{about}"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        mime = f", {res.mime_type}" if res.mime_type else ""
        if isinstance(res, types.TextResourceContents):
            return f"[resource <{res.uri}>{mime}]\n{res.text}"
        size = len(res.blob) * 3 // 4
        return f"[resource <{res.uri}>{mime}: about {size} bytes of binary data, not shown]"
    return f"[{getattr(block, 'type', type(block).__name__)} content, not shown]"


_BASE64 = re.compile(r"^[A-Za-z0-9+/_-]{64,}={0,2}$")


def _scrub(value: Any) -> Any:
    """Structured content with base64 payloads replaced by a note of their size."""
    if isinstance(value, str) and _BASE64.match(value):
        return f"[about {len(value) * 3 // 4} bytes of base64 data, not shown]"
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def _is_json_of(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except (ValueError, TypeError):
        return False


def render_result(tool_name: str, result: types.CallToolResult) -> str:
    """The text the model sees for an MCP result; raises ToolFailureError for isError."""
    parts: list[str] = []
    structured = result.structured_content
    texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
    if (
        isinstance(structured, dict)
        and list(structured) == ["result"]
        and structured["result"] in texts
    ):
        # SDK servers wrap a plain string return as {"result": text} beside the text itself.
        structured = None
    if structured is not None and not result.is_error:
        parts.append(json.dumps(_scrub(structured), ensure_ascii=False, indent=2))
    for block in result.content:
        # A text block that only repeats the structured content as JSON is left out.
        if (
            structured is not None
            and isinstance(block, types.TextContent)
            and _is_json_of(block.text, structured)
        ):
            continue
        line = _describe_block(block)
        if line:
            parts.append(line)
    text = "\n".join(parts)
    if len(text) > MAX_RESULT_CHARS:
        text = (
            text[:MAX_RESULT_CHARS] + f"\n[... cut: {len(text) - MAX_RESULT_CHARS} more characters]"
        )
    if result.is_error:
        raise ToolFailureError(f"{tool_name} failed: {text or '(the server gave no message)'}")
    return text or "(no output)"


def _innermost(exc: BaseException) -> BaseException:
    """The one real error inside nested single-member exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


# -- tool definitions -----------------------------------------------------------------
def _args_model(name: str, schema: Mapping[str, Any]) -> type[BaseModel]:
    """A pydantic model that validates arguments against the server's JSON Schema."""
    from jsonschema import validators

    try:
        cls = validators.validator_for(dict(schema))
        cls.check_schema(dict(schema))
        validator: Any = cls(dict(schema))
    except Exception:  # an invalid schema: let the server judge the arguments
        validator = None

    def check(cls_: type[BaseModel], data: Any) -> Any:
        if validator is not None and isinstance(data, dict):
            errors = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
            if errors:
                shown = []
                for err in errors[:5]:
                    where = ".".join(str(p) for p in err.path) or "(arguments)"
                    shown.append(f"{where}: {err.message}")
                raise ValueError("; ".join(shown))
        return data

    namespace: dict[str, Any] = {
        "model_config": ConfigDict(extra="allow"),
        "_check": model_validator(mode="before")(classmethod(check)),  # type: ignore[arg-type]
        "__module__": __name__,
    }
    return type(f"{name}_mcp_args", (BaseModel,), namespace)


def _annotations(tool: types.Tool, trusted: bool) -> ToolAnnotations:
    """Our annotations for a server's tool: its hints if trusted, the worst case if not."""
    hints = tool.annotations
    if not trusted or hints is None:
        # Untrusted hints are ignored: a server could call anything read-only.
        return ToolAnnotations(read_only=False, destructive=True, idempotent=False, open_world=True)
    read_only = bool(hints.read_only_hint)
    return ToolAnnotations(
        read_only=read_only,
        # The MCP defaults: destructive unless said otherwise (meaningless when read-only).
        destructive=not read_only and hints.destructive_hint is not False,
        idempotent=bool(hints.idempotent_hint),
        open_world=hints.open_world_hint is not False,
    )


def _input_schema(tool: types.Tool) -> dict[str, Any]:
    schema = dict(tool.input_schema or {"type": "object"})
    schema.pop("$schema", None)  # some model APIs reject the draft marker
    schema.setdefault("type", "object")
    return schema


# -- transports -----------------------------------------------------------------------
class _EofWatchingStream:
    """The read stream of a transport, setting an event when the server's side ends."""

    def __init__(self, inner: Any, ended: anyio.Event) -> None:
        self._inner = inner
        self._ended = ended

    def __getattr__(self, name: str) -> Any:  # last_context and the like
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _EofWatchingStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _EofWatchingStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _WatchedTransport:
    """Wraps an SDK transport so the owner task learns when the connection ends."""

    def __init__(self, inner: contextlib.AbstractAsyncContextManager[Any], ended: anyio.Event):
        self._inner = inner
        self._ended = ended

    async def __aenter__(self) -> Any:
        read, write = await self._inner.__aenter__()
        return _EofWatchingStream(read, self._ended), write

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)


def _transport(
    config: McpServerConfig,
    project: Path,
    errlog: IO[str],
    launcher: Callable[[], Launcher] | None = None,
) -> contextlib.AbstractAsyncContextManager[Any]:
    entry = config.entry
    if isinstance(entry, StdioEntry):
        from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

        cwd = Path(entry.cwd).expanduser() if entry.cwd else project
        if not cwd.is_absolute():
            cwd = project / cwd
        if entry.sandbox:
            from codingcode.mcp.launched_stdio import launched_stdio

            return launched_stdio(
                [entry.command, *entry.args],
                cwd=cwd,
                env=get_default_environment() | entry.env,
                launcher=(launcher or _project_sandbox(project))(),
                errlog=errlog,
            )
        params = StdioServerParameters(
            command=entry.command, args=entry.args, env=entry.env or None, cwd=cwd
        )
        return stdio_client(params, errlog=errlog)  # type: ignore[arg-type]
    assert isinstance(entry, HttpEntry)
    if entry.type == "sse":
        from mcp.client.sse import sse_client

        return sse_client(entry.url, headers=entry.headers or None)
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    return _http_transport(entry.url, entry.headers, create_mcp_http_client, streamable_http_client)


def _project_sandbox(project: Path) -> Callable[[], Launcher]:
    def make() -> Launcher:
        from codingcode.sandbox.service import SandboxService

        return SandboxService.for_project(project)

    return make


@contextlib.asynccontextmanager
async def _http_transport(
    url: str, headers: dict[str, str], make_client: Any, transport: Any
) -> AsyncIterator[Any]:
    async with make_client(headers=headers or None) as http, transport(url, http_client=http) as s:
        yield s


# -- one server -----------------------------------------------------------------------
@dataclass
class _Attempt:
    """One run of a server: from start to exit."""

    ready: anyio.Event = field(default_factory=anyio.Event)
    ended: anyio.Event = field(default_factory=anyio.Event)
    stop: anyio.Event = field(default_factory=anyio.Event)
    refresh: anyio.Event = field(default_factory=anyio.Event)
    client: Any = None
    error: str | None = None
    scope: anyio.CancelScope | None = None


ToolsChanged = Callable[["ServerConnection"], None]


class ServerConnection:
    """One configured MCP server: its state, its tools, and calls to them."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        project: Path,
        task_group: anyio.abc.TaskGroup,
        on_tools_changed: ToolsChanged | None = None,
        launcher: Callable[[], Launcher] | None = None,
    ) -> None:
        self.config = config
        self.launcher = launcher
        self.project = project
        self.state = ServerState.STOPPED
        self.error: str | None = None
        self.tools: list[types.Tool] = []
        self.server_info: str = ""
        self.restarts = 0
        #: How many list_changed notifications led to a re-list.
        self.refreshes = 0
        self._tg = task_group
        self._on_tools_changed = on_tools_changed
        self._attempt: _Attempt | None = None
        self._start_lock = anyio.Lock()

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def timeout(self) -> float:
        return self.config.entry.timeout_ms / 1000

    def skip(self, reason: str) -> None:
        self.state = ServerState.SKIPPED
        self.error = reason

    # -- lifecycle ------------------------------------------------------------------
    async def ensure_started(self) -> _Attempt:
        """The running attempt, starting (or restarting) the server if needed."""
        if self.state is ServerState.SKIPPED:
            raise ToolFailureError(f"MCP server {self.name!r} is {self.error}.")
        async with self._start_lock:
            attempt = self._attempt
            if attempt is None or attempt.ended.is_set():
                if attempt is not None:
                    self.restarts += 1
                attempt = _Attempt()
                self._attempt = attempt
                self.state = ServerState.STARTING
                self._tg.start_soon(self._own, attempt)
            await attempt.ready.wait()
        if attempt.error is not None or attempt.client is None:
            raise ToolFailureError(
                f"MCP server {self.name!r} is not available: {attempt.error or 'it stopped'}. "
                "It will be started again on the next call."
            )
        return attempt

    async def stop(self) -> None:
        attempt = self._attempt
        if attempt is not None and not attempt.ended.is_set():
            attempt.stop.set()
            if not attempt.ready.is_set() and attempt.scope is not None:
                attempt.scope.cancel()  # still starting: do not wait for its start-up timeout
            await attempt.ended.wait()

    async def _own(self, attempt: _Attempt) -> None:
        """The owner task: enters and leaves the SDK session, nothing else touches it."""
        from mcp.client.client import Client

        # The server's stderr: kept private (never mixed into our output) and quoted on failure.
        with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errlog:
            await self._own_with_log(attempt, Client, errlog)

    async def _own_with_log(self, attempt: _Attempt, Client: Any, errlog: IO[str]) -> None:
        eof = anyio.Event()
        startup = self.config.entry.startup_timeout_ms / 1000
        try:
            with anyio.CancelScope() as scope:
                attempt.scope = scope
                async with anyio.create_task_group() as tg:

                    async def watchdog() -> None:
                        with anyio.move_on_after(startup):
                            await attempt.ready.wait()
                            return
                        attempt.error = f"it did not answer within {startup:g} s of starting"
                        scope.cancel()

                    tg.start_soon(watchdog)
                    transport = _WatchedTransport(
                        _transport(self.config, self.project, errlog, self.launcher), eof
                    )
                    client = Client(
                        transport,
                        mode="legacy",
                        cache=None,
                        # Timeouts are ours: start-up by the watchdog, calls per call.
                        read_timeout_seconds=None,
                        message_handler=self._message_handler(attempt),
                        client_info=types.Implementation(name="codingcode", version=__version__),
                    )
                    async with client:
                        tools = await self._list_tools(client)
                        info = client.server_info
                        self.server_info = f"{info.name} {info.version}" if info else ""
                        self._set_tools(tools)
                        attempt.client = client
                        self.state = ServerState.READY
                        self.error = None
                        attempt.ready.set()
                        tg.start_soon(self._refresher, attempt, client)
                        async with anyio.create_task_group() as wait:

                            async def until(event: anyio.Event) -> None:
                                await event.wait()
                                wait.cancel_scope.cancel()

                            wait.start_soon(until, eof)
                            wait.start_soon(until, attempt.stop)
                        if eof.is_set() and not attempt.stop.is_set():
                            attempt.error = "the server exited" + self._stderr_tail(errlog)
                        tg.cancel_scope.cancel()
        except Exception as exc:  # start-up failures, and a transport that broke later
            if attempt.ready.is_set():
                inner = _innermost(exc)
                attempt.error = f"the connection failed: {type(inner).__name__}: {inner}"
            else:
                attempt.error = self._describe_failure(exc)
            attempt.error += self._stderr_tail(errlog)
        finally:
            attempt.client = None
            if attempt.error is not None:
                self.state = ServerState.FAILED
                self.error = attempt.error
            elif self.state is not ServerState.SKIPPED:
                self.state = ServerState.STOPPED
            attempt.ready.set()
            attempt.ended.set()

    def _describe_failure(self, exc: BaseException) -> str:
        exc = _innermost(exc)
        if isinstance(exc, FileNotFoundError):
            return f"could not start {exc.filename or self.config.describe()!r}: command not found"
        if isinstance(exc, OSError):
            return f"could not start: {exc.strerror or exc}"
        from mcp import MCPError

        if isinstance(exc, MCPError):
            return f"the server answered the handshake with an error: {exc}"
        return f"it failed to start: {type(exc).__name__}: {exc}"

    @staticmethod
    def _stderr_tail(errlog: IO[str]) -> str:
        try:
            errlog.flush()
            errlog.seek(0)
            lines = [ln for ln in errlog.read()[-4000:].splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        if not lines:
            return ""
        return " (its stderr ends: " + " | ".join(lines[-_STDERR_TAIL_LINES:]) + ")"

    def _message_handler(self, attempt: _Attempt) -> Any:
        async def handle(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                attempt.refresh.set()
            await anyio.lowlevel.checkpoint()

        return handle

    async def _refresher(self, attempt: _Attempt, client: Any) -> None:
        """Re-list the tools after each list_changed (requests never run in the handler)."""
        while True:
            await attempt.refresh.wait()
            attempt.refresh = anyio.Event()
            try:
                with anyio.fail_after(self.timeout):
                    tools = await self._list_tools(client)
            except Exception:  # keep the old list; the next notification tries again
                continue
            self.refreshes += 1
            self._set_tools(tools)

    async def _list_tools(self, client: Any) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    def _set_tools(self, tools: list[types.Tool]) -> None:
        self.tools = tools
        if self._on_tools_changed is not None:
            self._on_tools_changed(self)

    # -- calls ----------------------------------------------------------------------------
    async def call_tool(
        self, tool: str, arguments: dict[str, Any], ctx: ToolExecCtx | None = None
    ) -> str:
        """Call one tool; text for the model, or an AgentError for every expected failure."""
        full = f"{self.name}:{tool}"
        signal = ctx.signal if ctx is not None else None
        outcome: str | AgentError | None = None
        cancelled = False
        with anyio.move_on_after(self.timeout):
            async with anyio.create_task_group() as tg:
                if signal is not None:

                    async def watch() -> None:
                        nonlocal cancelled
                        await signal.wait()
                        cancelled = True
                        tg.cancel_scope.cancel()

                    tg.start_soon(watch)
                try:
                    outcome = await self._call_once(full, tool, arguments)
                except AgentError as exc:  # kept out of the task group's exception group
                    outcome = exc
                finally:
                    tg.cancel_scope.cancel()
        if cancelled:
            raise CancelledError(f"{full} was cancelled; the server was told to stop.")
        if outcome is None:
            raise ToolTimeoutError(
                f"{full} did not answer within {self.timeout:g} s; the request was cancelled "
                f"(raise timeout_ms in the {self.name!r} server entry to wait longer)."
            )
        if isinstance(outcome, AgentError):
            raise outcome
        return outcome

    async def _call_once(self, full: str, tool: str, arguments: dict[str, Any]) -> str:
        from pydantic import ValidationError

        from mcp import MCPError

        attempt = await self.ensure_started()
        try:
            result = await attempt.client.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                with anyio.move_on_after(2):  # let the owner record why (stderr tail)
                    await attempt.ended.wait()
                why = attempt.error or "the connection closed"
                raise ToolFailureError(
                    f"{full} failed: MCP server {self.name!r} stopped during the call "
                    f"({why}). It will be started again on the next call."
                ) from None
            raise ToolFailureError(f"{full} failed: the server answered: {exc}") from None
        except ValidationError as exc:
            raise ToolFailureError(
                f"{full} failed: the server's result does not match the tool's output schema: "
                f"{exc.errors(include_url=False)[:3]}"
            ) from None
        return render_result(full, result)

    def tool_definitions(self) -> list[ToolDefinition]:
        entry = self.config.entry
        deferred = (
            entry.deferred if entry.deferred is not None else len(self.tools) > DEFER_THRESHOLD
        )
        return [self._definition(t, deferred) for t in self.tools]

    def _definition(self, tool: types.Tool, deferred: bool) -> ToolDefinition:
        server_tool = tool.name
        schema = _input_schema(tool)

        async def execute(args: BaseModel, ctx: ToolExecCtx) -> str:
            return await self.call_tool(server_tool, args.model_dump(), ctx)

        description = (tool.description or tool.title or tool.name).strip()
        first = description.split("\n", 1)[0][:120]
        return ToolDefinition(
            name=f"{self.name}:{tool.name}",
            description=f"{description}\n(MCP tool {tool.name!r} of server {self.name!r})",
            short_description=first,
            parameters=_args_model(f"{self.name}_{tool.name}", schema),
            execute=execute,
            deferred=deferred,
            json_schema=schema,
            annotations=_annotations(tool, self.config.entry.trusted),
            origin=ToolOrigin("mcp", self.name),
        )


# -- all servers of a session -----------------------------------------------------------
class McpManager:
    """The configured servers of one session, their tools kept registered in a ToolService.

    Use as ``async with McpManager(configs, service=..., project=...) as mcp:`` around the
    session; entering starts every server (concurrently) and imports its tools.
    """

    def __init__(
        self,
        configs: Mapping[str, McpServerConfig] | Iterable[McpServerConfig],
        *,
        project: Path,
        service: ToolService | None = None,
        start_filter: StartFilter | None = None,
        launcher: Callable[[], Launcher] | None = None,
    ) -> None:
        items = configs.values() if isinstance(configs, Mapping) else configs
        #: Makes the launcher of ``"sandbox": true`` servers (default: the project's sandbox).
        self.launcher = launcher
        self.configs = list(items)
        self.project = project
        self.service = service
        self.start_filter = start_filter
        self.servers: dict[str, ServerConnection] = {}
        self._registered: dict[str, set[str]] = {}
        self._stack: contextlib.AsyncExitStack | None = None

    async def __aenter__(self) -> McpManager:
        async with contextlib.AsyncExitStack() as stack:
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)
            for config in self.configs:
                conn = ServerConnection(
                    config,
                    project=self.project,
                    task_group=tg,
                    on_tools_changed=self._register,
                    launcher=self.launcher,
                )
                self.servers[config.name] = conn
                reason = self.start_filter(config) if self.start_filter else None
                if config.entry.disabled:
                    conn.skip("disabled in its configuration")
                elif reason is not None:
                    conn.skip(reason)
            await self.start_all()
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc: object) -> None:
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for conn in self.servers.values():
                    tg.start_soon(conn.stop)
        if self._stack is not None:
            await self._stack.aclose()

    async def start_all(self) -> None:
        """Start every server that is not running yet; failures are recorded, not raised."""

        async def start(conn: ServerConnection) -> None:
            with contextlib.suppress(AgentError):
                await conn.ensure_started()

        async with anyio.create_task_group() as tg:
            for conn in self.servers.values():
                if conn.state in (ServerState.STOPPED, ServerState.FAILED):
                    tg.start_soon(start, conn)

    def _register(self, conn: ServerConnection) -> None:
        if self.service is None:
            return
        definitions = conn.tool_definitions()
        names = {d.name for d in definitions}
        for stale in self._registered.get(conn.name, set()) - names:
            self.service.unregister(stale)
        for d in definitions:
            self.service.register(d, replace=True)
        self._registered[conn.name] = names

    def tool_definitions(self) -> list[ToolDefinition]:
        return [d for conn in self.servers.values() for d in conn.tool_definitions()]

    def notes(self) -> list[str]:
        """One line per server that is not running (skipped or failed), for the user."""
        return [
            f"MCP server {conn.name!r} {conn.state.value}: {conn.error}"
            for conn in self.servers.values()
            if conn.state in (ServerState.SKIPPED, ServerState.FAILED)
        ]


@contextlib.asynccontextmanager
async def open_project_mcp(
    project: Path,
    service: ToolService,
    *,
    trusted: bool | None = None,
) -> AsyncIterator[McpManager]:
    """The project's MCP servers for one session, their tools registered in ``service``.

    ``trusted=None`` follows the user's trust records (workspace trust): a project's own
    servers start only once the file that configures them is trusted; True/False decide for
    the whole project. Use around the session::

        async with open_project_mcp(project, service) as mcp:
            for line in mcp.notes(): print(line, file=sys.stderr)
            ...  # create_session_tool_resolver(service, ...) sees the server:tool tools
    """
    from codingcode.mcp.config import load_mcp_servers, project_trust_filter, trust_store_filter

    configs = load_mcp_servers(project)
    start_filter = trust_store_filter(project) if trusted is None else project_trust_filter(trusted)
    async with McpManager(
        configs, project=project, service=service, start_filter=start_filter
    ) as m:
        yield m
