"""Import the tools of configured MCP servers, on the official ``mcp`` SDK (2.x).

:class:`McpManager` holds the servers of one session and keeps their tools registered in the
session's ToolService as ``server:tool`` (SPEC L3), deferred when a server has more than
:data:`~codingcode.mcp.config.DEFER_THRESHOLD` tools unless its entry sets ``deferred``.
The work is split by job:

* :mod:`codingcode.mcp.connection` — one server: start, restart, calls, timeouts;
* :mod:`codingcode.mcp.transports` and :mod:`codingcode.mcp.launched_stdio` — the wires;
* :mod:`codingcode.mcp.tool_import` — a server's tool as our ToolDefinition;
* :mod:`codingcode.mcp.results` — a result as text, capped, the whole kept in a file.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from codingcode.errors import AgentError, ToolFailureError
from codingcode.lazy import lazy_names
from codingcode.mcp.attempt import ServerState
from codingcode.mcp.config import McpServerConfig, StartFilter
from codingcode.process import Launcher
from codingcode.tools.definition import ToolDefinition
from codingcode.tools.service import ToolService

if TYPE_CHECKING:
    from codingcode.mcp.connection import MAX_PAGES, ServerConnection
    from codingcode.mcp.results import MAX_RESULT_CHARS, render_result
    from codingcode.workspace import Workspace

# The MCP SDK (a tenth of an agent session's start-up) loads with the first server started:
# a project without servers never pays for it.
__getattr__ = lazy_names(
    __name__,
    {
        "MAX_PAGES": "codingcode.mcp.connection",
        "ServerConnection": "codingcode.mcp.connection",
        "MAX_RESULT_CHARS": "codingcode.mcp.results",
        "render_result": "codingcode.mcp.results",
    },
)

__all__ = [
    "MAX_PAGES",
    "MAX_RESULT_CHARS",
    "McpManager",
    "ServerConnection",
    "ServerState",
    "open_project_mcp",
    "render_result",
    "sandbox_launcher",
]


_NOT_RUNNING = (ServerState.SKIPPED, ServerState.FAILED, ServerState.NEEDS_LOGIN)


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
        #: Makes the launcher of ``"sandbox": true`` servers (see :func:`sandbox_launcher`;
        #: without one such a server does not start).
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
            if not logging.getLogger().handlers and not logging.getLogger("mcp").handlers:
                # Nobody configured logging: the SDK's error logs would print tracebacks
                # (Python's last-resort handler); one line each, rate-limited, instead.
                from codingcode.logs import quiet_logging

                stack.callback(quiet_logging(names=("mcp",)))
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)
            if self.configs:
                from codingcode.mcp.connection import ServerConnection
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
            if self.service is not None:  # "server X failed (why)", not "Unknown tool"
                from codingcode.mcp import prompts

                self.service.missing = self.unavailable
                stack.callback(setattr, self.service, "missing", None)
                prompts.bind(self.service, self)  # /server:prompt finds its server
                stack.callback(prompts.bind, self.service, None)
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
        caps = conn.capabilities
        if caps is not None and caps.resources is not None:
            from codingcode.mcp import READ_TOOL
            from codingcode.mcp.resources import resource_tools

            if READ_TOOL not in self.service:  # the resource tools, once any server has some
                for d in resource_tools(self):
                    self.service.register(d, replace=True)
        definitions = conn.tool_definitions()
        names = {d.name for d in definitions}
        for stale in self._registered.get(conn.name, set()) - names:
            self.service.unregister(stale)
        for d in definitions:
            self.service.register(d, replace=True)
        self._registered[conn.name] = names

    def tool_definitions(self) -> list[ToolDefinition]:
        return [d for conn in self.servers.values() for d in conn.tool_definitions()]

    def unavailable(self, tool_name: str) -> AgentError | None:
        """Why ``server:tool`` cannot be called when its server is not running, else None.

        For a tool of a server that never started (so its tools were never imported): one
        line naming the server and why, instead of "Unknown tool".
        """
        server, sep, _ = tool_name.partition(":")
        conn = self.servers.get(server) if sep else None
        if conn is None or conn.state not in _NOT_RUNNING:
            return None
        if self.service is not None and tool_name in self.service:
            return None  # imported before it failed: calling it restarts the server
        return ToolFailureError(
            f"{tool_name} cannot be called: MCP server {server!r} {conn.state.value} "
            f"({conn.error or 'no reason given'})."
        )

    def failed(self) -> list[ServerConnection]:
        """The servers that failed to start, stopped with an error or need a login (not
        the skipped)."""
        return [
            c
            for c in self.servers.values()
            if c.state in (ServerState.FAILED, ServerState.NEEDS_LOGIN)
        ]

    def notes(self) -> list[str]:
        """One line per server that is not running (skipped or failed), for the user."""
        return [
            f"MCP server {conn.name!r} {conn.state.value}: {conn.error}"
            for conn in self.servers.values()
            if conn.state in _NOT_RUNNING
        ]


@contextlib.asynccontextmanager
async def open_project_mcp(
    project: Path,
    service: ToolService,
    *,
    workspace: Workspace,
    trusted: bool | None = None,
) -> AsyncIterator[McpManager]:
    """The project's MCP servers for one session, their tools registered in ``service``.

    ``workspace``: the session's settings and trust records, read once by the front end.
    ``trusted=None`` follows its trust decision (workspace trust): a project's own servers
    start only once the file that configures them is trusted; True/False decide for the
    whole project. Use around the session::

        async with open_project_mcp(project, service, workspace=workspace) as mcp:
            for line in mcp.notes(): print(line, file=sys.stderr)
            ...  # create_session_tool_resolver(service, ...) sees the server:tool tools
    """
    from codingcode.mcp.config import load_mcp_servers, project_trust_filter

    configs = load_mcp_servers(project, settings=workspace.settings)
    start_filter = project_trust_filter(workspace.is_trusted if trusted is None else trusted)
    async with McpManager(
        configs,
        project=project,
        service=service,
        start_filter=start_filter,
        launcher=sandbox_launcher(workspace),
    ) as m:
        yield m


def sandbox_launcher(workspace: Workspace) -> Callable[[], Launcher]:
    """Makes the launcher of a ``"sandbox": true`` server: the session's sandbox settings."""

    def make() -> Launcher:
        from codingcode.config import audit_required
        from codingcode.record.audit import AuditLog
        from codingcode.sandbox.service import SandboxService

        sandbox = SandboxService.for_workspace(workspace)
        # Its connections through the proxy join the audit log, as a command's do (filed
        # under the server's command line: it runs for the whole session, in no one call).
        log = AuditLog(required=audit_required(workspace.settings))
        sandbox.network_sink = lambda events: log.record_network([e.to_json() for e in events])
        return sandbox

    return make
