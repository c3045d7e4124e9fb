"""One configured MCP server: its connection, its state, its tools, and calls to them.

One *owner task* per connection enters the SDK ``Client`` and leaves it (entering and
leaving a session from different tasks is what breaks anyio's cancel scopes); calls are
made from the callers' own tasks, which the SDK supports, so a caller's cancellation or
timeout cancels exactly its request and the SDK sends ``notifications/cancelled``.

* We speak the handshake protocol (``initialize``, 2025-11-25 and older), which every server
  we tested accepts, and walk ``tools/list`` pagination (at most :data:`MAX_PAGES` pages).
* ``notifications/tools/list_changed`` re-lists every page and re-registers the tools.
* A server that exits, or never starts, makes its tools fail with a message saying so (with
  its last stderr lines); the next use starts it again. The session survives either way.
* What a stdio server writes on stdout that is not JSON-RPC is reported once per server, in
  one line (the ``codingcode.mcp`` logger, a warning), and otherwise ignored.

Split by job: one run of the server and how its failure is told (:mod:`.attempt`), what
the server asks of us (:mod:`.server_requests`), and here the connection's life and the
calls made through it, each with the entry's timeout and the caller's interrupt
(:meth:`ServerConnection._interruptible`).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar

import anyio
import mcp_types as types

from codingcode import __version__
from codingcode.cancel import CancelSignal
from codingcode.errors import (
    AgentError,
    CancelledError,
    ToolFailureError,
    ToolTimeoutError,
)
from codingcode.mcp.attempt import Attempt, ServerState, describe_failure, innermost, stderr_tail
from codingcode.mcp.config import DEFER_THRESHOLD, McpServerConfig
from codingcode.mcp.results import render_result
from codingcode.mcp.server_requests import ServerRequests
from codingcode.mcp.tool_import import tool_definition
from codingcode.mcp.transports import WatchedTransport, open_transport
from codingcode.process import Launcher
from codingcode.tools.definition import ToolDefinition, ToolExecCtx

#: Pages of a list (tools, prompts, resources) we follow before deciding a server's cursor
#: never ends.
MAX_PAGES = 100
logger = logging.getLogger("codingcode.mcp")

__all__ = ["MAX_PAGES", "ServerConnection", "ServerSet", "ServerState", "pages"]


async def pages(list_page: Callable[[str | None], Awaitable[Any]]) -> AsyncIterator[Any]:
    """Each page of a paginated list, ``list_page(cursor)`` following each page's
    ``next_cursor``, at most :data:`MAX_PAGES` of them."""
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await list_page(cursor)
        yield page
        cursor = page.next_cursor
        if not cursor:
            return


ToolsChanged = Callable[["ServerConnection"], None]


class ServerSet(Protocol):
    """The servers of one session by name (what :class:`~codingcode.mcp.client.McpManager`
    offers the resources and prompts modules, which it imports)."""

    servers: dict[str, ServerConnection]


_T = TypeVar("_T")


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
        auth: Any = None,
    ) -> None:
        self.config = config
        #: The httpx Auth of an HTTP server (default: OAuth with stored tokens, see
        #: :mod:`codingcode.mcp.oauth`); ``codingcode mcp login`` passes an interactive one.
        self.auth = auth
        self._login_refused = False
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
        self._attempt: Attempt | None = None
        self._start_lock = anyio.Lock()
        self._capabilities: Any = None
        #: Resource URIs the server said changed since they were last read (subscriptions).
        self.updated: set[str] = set()
        #: The first thing on its stdout that was not JSON-RPC (reported once), if any.
        self.noise: str | None = None
        self._requests = ServerRequests(config, project, self.updated)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def timeout(self) -> float:
        return self.config.entry.timeout_ms / 1000

    def _noticed(self, what: str) -> None:
        """A stdio server wrote something on stdout that is not JSON-RPC: one line, once."""
        if self.noise is None:
            self.noise = what
            logger.warning("MCP server %r wrote %s", self.name, what)

    def skip(self, reason: str) -> None:
        self.state = ServerState.SKIPPED
        self.error = reason

    # -- lifecycle ------------------------------------------------------------------
    async def ensure_started(self) -> Attempt:
        """The running attempt, starting (or restarting) the server if needed."""
        if self.state is ServerState.SKIPPED:
            raise ToolFailureError(f"MCP server {self.name!r} is {self.error}.")
        async with self._start_lock:
            attempt = self._attempt
            if attempt is None or attempt.ended.is_set():
                if attempt is not None:
                    self.restarts += 1
                attempt = Attempt()
                self._attempt = attempt
                self.state = ServerState.STARTING
                self._tg.start_soon(self._own, attempt)
            await attempt.ready.wait()
        if self.state is ServerState.NEEDS_LOGIN:
            from codingcode.mcp.oauth import LoginRequiredError

            raise LoginRequiredError(f"MCP server {self.name!r} needs a login: {self.error}.")
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

    async def _own(self, attempt: Attempt) -> None:
        """The owner task: enters and leaves the SDK session, nothing else touches it."""
        from mcp.client.client import Client

        # The server's stderr: kept private (never mixed into our output) and quoted on failure.
        with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errlog:
            await self._own_with_log(attempt, Client, errlog)

    async def _own_with_log(self, attempt: Attempt, Client: Any, errlog: IO[str]) -> None:
        eof = anyio.Event()
        startup = self.config.entry.startup_timeout_ms / 1000
        auth = self.auth
        self._login_refused = False
        if auth is None:
            from codingcode.mcp.oauth import headless_provider, uses_oauth

            if uses_oauth(self.config):
                auth = headless_provider(self.config, on_refused=self._refused)
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
                    transport = WatchedTransport(
                        open_transport(
                            self.config, self.project, errlog, self.launcher, self._noticed, auth
                        ),
                        eof,
                    )
                    client = Client(
                        transport,
                        mode="legacy",
                        cache=None,
                        # Timeouts are ours: start-up by the watchdog, calls per call.
                        read_timeout_seconds=None,
                        message_handler=self._requests.message_handler(attempt),
                        elicitation_callback=self._requests.elicit,
                        logging_callback=self._requests.log,
                        list_roots_callback=self._requests.roots,
                        client_info=types.Implementation(name="codingcode", version=__version__),
                    )
                    async with client:
                        tools = await self._list_tools(client)
                        info = client.server_info
                        self._capabilities = client.server_capabilities
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
                            attempt.error = "the server exited" + stderr_tail(errlog)
                        tg.cancel_scope.cancel()
        except Exception as exc:  # start-up failures, and a transport that broke later
            if attempt.ready.is_set():
                inner = innermost(exc)
                attempt.error = f"the connection failed: {type(inner).__name__}: {inner}"
            else:
                attempt.error = describe_failure(exc, self.config.describe())
            attempt.error += stderr_tail(errlog)
        finally:
            attempt.client = None
            if self._login_refused:
                from codingcode.mcp.oauth import login_hint

                attempt.error = login_hint(self.name)
                self.state = ServerState.NEEDS_LOGIN
                self.error = attempt.error
            elif attempt.error is not None:
                self.state = ServerState.FAILED
                self.error = attempt.error
            elif self.state is not ServerState.SKIPPED:
                self.state = ServerState.STOPPED
            attempt.ready.set()
            attempt.ended.set()

    def _refused(self) -> None:
        self._login_refused = True

    async def _refresher(self, attempt: Attempt, client: Any) -> None:
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
        async for page in pages(lambda cursor: client.list_tools(cursor=cursor)):
            tools.extend(page.tools)
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
        return await self._interruptible(
            lambda: self._call_once(full, tool, arguments),
            ctx,
            cancelled=f"{full} was cancelled; the server was told to stop.",
            timed_out=(
                f"{full} did not answer within {self.timeout:g} s; the request was cancelled "
                f"(raise timeout_ms in the {self.name!r} server entry to wait longer)."
            ),
        )

    async def _call_once(self, full: str, tool: str, arguments: dict[str, Any]) -> str:
        from pydantic import ValidationError

        from mcp import MCPError

        attempt = await self.ensure_started()
        try:
            result = await attempt.client.call_tool(
                tool, arguments, progress_callback=self._progress(full)
            )
        except MCPError as exc:
            if self._login_refused:  # tokens that cannot be refreshed, or more scope wanted
                from codingcode.mcp.oauth import LoginRequiredError, login_hint

                raise LoginRequiredError(
                    f"{full} failed: MCP server {self.name!r} needs a login (again, or with "
                    f"more permissions): {login_hint(self.name)}."
                ) from None
            if exc.code == types.CONNECTION_CLOSED:
                with anyio.move_on_after(2):  # let the owner record why (stderr tail)
                    await attempt.ended.wait()
                why = attempt.error or "the connection closed"
                raise ToolFailureError(
                    f"{full} failed: MCP server {self.name!r} stopped during the call "
                    f"({why}). It will be started again on the next call."
                ) from None
            said = " ".join(str(exc).split())  # one line, whatever the SDK's message holds
            raise ToolFailureError(f"{full} failed: the server answered: {said[:1000]}") from None
        except ValidationError as exc:
            raise ToolFailureError(
                f"{full} failed: the server's result does not match the tool's output schema: "
                f"{exc.errors(include_url=False)[:3]}"
            ) from None
        return render_result(full, result)

    async def request(
        self, what: str, op: Callable[[Any], Awaitable[_T]], ctx: ToolExecCtx | None = None
    ) -> _T:
        """Run ``op(client)`` (a resources/prompts request) on the running server, with the
        entry's timeout and the caller's interrupt; every failure one AgentError naming
        ``what``."""
        from mcp import MCPError

        async def run() -> _T:
            attempt = await self.ensure_started()
            try:
                return await op(attempt.client)
            except MCPError as exc:
                said = " ".join(str(exc).split())
                raise ToolFailureError(
                    f"{what} failed: the server answered: {said[:1000]}"
                ) from None

        return await self._interruptible(
            run,
            ctx,
            cancelled=f"{what} was cancelled; the server was told to stop.",
            timed_out=f"{what} did not answer within {self.timeout:g} s.",
        )

    async def _interruptible(
        self,
        op: Callable[[], Awaitable[_T]],
        ctx: ToolExecCtx | None,
        *,
        cancelled: str,
        timed_out: str,
    ) -> _T:
        """``op()`` with the entry's timeout and the caller's interrupt (``ctx.signal``).
        Either cancels the request (the SDK tells the server) and raises CancelledError
        (``cancelled``) or ToolTimeoutError (``timed_out``); the AgentError ``op`` raises
        is raised as it is (kept out of the task group's exception group)."""
        signal: CancelSignal | None = ctx.signal if ctx is not None else None
        outcome: list[_T] = []
        failure: AgentError | None = None
        interrupted = False
        with anyio.move_on_after(self.timeout):
            async with anyio.create_task_group() as tg:
                if signal is not None:

                    async def watch() -> None:
                        nonlocal interrupted
                        await signal.wait()
                        interrupted = True
                        tg.cancel_scope.cancel()

                    tg.start_soon(watch)
                try:
                    outcome.append(await op())
                except AgentError as exc:
                    failure = exc
                finally:
                    tg.cancel_scope.cancel()
        if interrupted:
            raise CancelledError(cancelled)
        if failure is not None:
            raise failure
        if not outcome:
            raise ToolTimeoutError(timed_out)
        return outcome[0]

    @property
    def capabilities(self) -> Any:
        """The server's capabilities (None until it has started)."""
        return self._capabilities

    def _progress(self, full: str) -> Any:
        async def report(progress: float, total: float | None, message: str | None) -> None:
            from codingcode.mcp.interaction import current

            current().progress(self.name, full, progress, total, message)

        return report

    def tool_definitions(self) -> list[ToolDefinition]:
        entry = self.config.entry
        deferred = (
            entry.deferred if entry.deferred is not None else len(self.tools) > DEFER_THRESHOLD
        )
        return [self._definition(t, deferred) for t in self.tools]

    def _definition(self, tool: types.Tool, deferred: bool) -> ToolDefinition:
        return tool_definition(
            self.name,
            tool,
            deferred=deferred,
            trusted=self.config.entry.trusted,
            call=self.call_tool,
        )
