"""``codingcode mcp``: our tools, with approval and sandbox, to any MCP client.

Every ``tools/call`` runs through :meth:`codingcode.runner.ToolRunner.run` — validation, the
approval pipeline, the sandboxed execution, the audit — exactly as a call from our own agent.
An ``ask`` becomes an MCP elicitation (allow / deny / always / never) when the client declared
the elicitation capability — a server-to-client request on the handshake protocol, an
``InputRequiredResult`` on 2026-07-28 — otherwise the call is denied with a message saying
how to allow it (an allow rule, or an interactive run).

The served tools are the session resolver's (``ToolVisibilityPolicy(allow_tool_search=
False)``): the built-ins and any tool registered in the service, offered at once. The
project's own MCP servers are not proxied. Annotations are the tools' own, truthfully:
``readOnlyHint`` only for tools that change nothing, ``destructiveHint`` for tools that can
overwrite or delete, ``openWorldHint`` for tools that reach outside the project.

Transports: stdio, and streamable HTTP (``--http HOST:PORT``, endpoint ``/mcp``). HTTP binds
to loopback by default (with DNS-rebinding protection); bound anywhere else it requires a
bearer token (``Authorization: Bearer TOKEN``).
"""

from __future__ import annotations

import contextvars
import hmac
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types

from codingcode import __version__
from codingcode.errors import AgentError, InvalidArgumentsError
from codingcode.mcp_server.http_safety import READ_TIMEOUT_S, is_loopback, rebinding_guard
from codingcode.runner import ToolRunner
from codingcode.tools.definition import SessionState, ToolDefinition
from codingcode.tools.resolver import (
    SessionToolResolver,
    ToolVisibilityPolicy,
    create_session_tool_resolver,
)
from codingcode.tools.service import ToolService

TOKEN_ENV = "CODINGCODE_MCP_TOKEN"
#: An HTTP session idle this long is closed (by the SDK) and its state freed (by us).
SESSION_IDLE_S = 30 * 60.0
#: At most this many HTTP sessions at once (the SDK refuses more; we keep no more state).
MAX_SESSIONS = 1000
SERVER_NAME = "codingcode"

#: The MCP request being handled, for the elicitation confirmer (which runs deep inside
#: the approval pipeline and has no other way to reach the client that asked).
_current_request: contextvars.ContextVar[Any] = contextvars.ContextVar("mcp_request")


def mcp_annotations(definition: ToolDefinition) -> types.ToolAnnotations:
    a = definition.annotations
    return types.ToolAnnotations(
        read_only_hint=a.read_only,
        # destructiveHint means something only for tools that write (MCP spec).
        destructive_hint=False if a.read_only else a.destructive,
        idempotent_hint=a.idempotent,
        open_world_hint=a.open_world,
    )


def mcp_tool(definition: ToolDefinition) -> types.Tool:
    return types.Tool(
        name=definition.name,
        description=definition.description,
        input_schema=definition.input_schema(),
        annotations=mcp_annotations(definition),
    )


#: The key of our approval question in a 2026-07-28 ``InputRequiredResult``.
APPROVAL_INPUT_KEY = "codingcode.approval"


def elicitation_channel(request_ctx: Any) -> str | None:
    """How this client can be asked: ``"request"`` (a server-to-client elicitation/create,
    the handshake era), ``"input"`` (an ``InputRequiredResult``, 2026-07-28), or None."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    session = getattr(request_ctx, "session", None)
    if session is None:
        return None
    caps = session.client_capabilities
    if caps is None or caps.elicitation is None:
        return None
    if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return "input"
    return "request" if session.can_send_request else None


def client_can_elicit(request_ctx: Any) -> bool:
    return elicitation_channel(request_ctx) is not None


class InputNeeded(Exception):
    """Raised by the confirmer on 2026-07-28: answer with an InputRequiredResult instead."""

    def __init__(self, request: types.ElicitRequest) -> None:
        super().__init__("input required")
        self.request = request


def _approval_form(request: Any) -> tuple[str, dict[str, Any], list[str]]:
    from codingcode.approval.confirm import describe_call

    choices = ["allow", "deny"]
    if request.suggested_rule:
        choices += ["always", "never"]
    note = (
        f' "always"/"never" save the rule "{request.suggested_rule}".'
        if request.suggested_rule
        else ""
    )
    message = (
        f"{request.call.tool} wants to run — {request.reason}\n"
        f"{describe_call(request.call)}\n"
        f"Allow it?{note}"
    )
    schema = {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": choices,
                "description": "allow or deny this call"
                + (", or always/never to save a rule" if request.suggested_rule else ""),
            }
        },
        "required": ["decision"],
    }
    return message, schema, choices


class ElicitationConfirmer:
    """Answers the approval pipeline's ``ask`` by asking the MCP client's user (elicitation).

    Handshake era: a server-to-client ``elicitation/create`` request during the call.
    2026-07-28: the call returns an ``InputRequiredResult`` holding the question; the client
    asks its user and sends the call again with the answer, which the pipeline — deciding
    the same call the same way — receives here.
    """

    async def confirm(self, request: Any) -> Any:
        from codingcode.approval.confirm import Answer

        request_ctx = _current_request.get(None)
        channel = elicitation_channel(request_ctx) if request_ctx is not None else None
        if channel is None:
            return Answer.DENY
        message, schema, choices = _approval_form(request)
        result: Any
        if channel == "input":
            result = _input_response(request_ctx)
            if result is None:
                form = types.ElicitRequestFormParams(message=message, requested_schema=schema)
                raise InputNeeded(types.ElicitRequest(params=form))
        else:
            try:
                result = await request_ctx.session.elicit_form(
                    message, schema, related_request_id=request_ctx.request_id
                )
            except Exception:  # the client failed to answer: nothing was allowed
                return Answer.DENY
        if getattr(result, "action", None) != "accept" or not isinstance(result.content, dict):
            return Answer.DENY
        decision = str(result.content.get("decision", "deny"))
        return Answer(decision) if decision in choices else Answer.DENY


def _input_response(request_ctx: Any) -> Any:
    """The client's answer to our approval question, carried by a retried tools/call."""
    params = getattr(request_ctx, "params", None) or {}
    responses = params.get("inputResponses") if isinstance(params, Mapping) else None
    if not isinstance(responses, Mapping) or APPROVAL_INPUT_KEY not in responses:
        return None
    try:
        return types.ElicitResult.model_validate(responses[APPROVAL_INPUT_KEY])
    except ValueError:
        return None


@dataclass
class McpToolServer:
    """The tools of one project served over MCP, every call through the runner."""

    resolver: SessionToolResolver
    #: Runs calls when the client can answer an elicitation (ask -> elicitation).
    interactive: ToolRunner
    #: Runs calls when it cannot (ask -> deny with how to allow it).
    headless: ToolRunner
    #: Per-client session state (the todo list), by MCP session id ("stdio" for stdio);
    #: freed when the session ends (DELETE) or idles out (:data:`SESSION_IDLE_S`).
    states: MutableMapping[str, SessionState] = field(default_factory=dict)
    _last_used: OrderedDict[str, float] = field(default_factory=OrderedDict)

    def session_state(self, key: str) -> SessionState:
        """The state of session ``key``, after forgetting sessions idle too long."""
        now = time.monotonic()
        while self._last_used:
            oldest, used = next(iter(self._last_used.items()))
            if now - used < SESSION_IDLE_S and len(self._last_used) < MAX_SESSIONS:
                break
            self.end_session(oldest)
        self._last_used[key] = now
        self._last_used.move_to_end(key)
        return self.states.setdefault(key, SessionState())

    def end_session(self, key: str) -> None:
        self.states.pop(key, None)
        self._last_used.pop(key, None)

    def list_tools(self) -> list[types.Tool]:
        return [mcp_tool(d) for d in self.resolver.tools()]

    async def call(self, request_ctx: Any, name: str, arguments: dict[str, Any] | None) -> str:
        """Run one call; AgentError for every expected failure (the caller maps it)."""
        if not self.resolver.is_callable(name):
            self.resolver.ensure_callable(name)  # raises NotFoundError with what exists
        if arguments is not None and not isinstance(arguments, dict):
            raise InvalidArgumentsError(f"Arguments for {name} must be a JSON object.")
        runner = self.interactive if client_can_elicit(request_ctx) else self.headless
        key = _session_key(request_ctx)
        state = self.session_state(key)
        ctx = runner.context(session_id=f"mcp-{key}", state=state)
        token = _current_request.set(request_ctx)
        try:
            return await runner.run(name, arguments or {}, ctx)
        finally:
            _current_request.reset(token)

    def lowlevel_server(self) -> Any:
        from mcp.server.lowlevel.server import Server

        async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(tools=self.list_tools())

        async def on_call_tool(
            ctx: Any, params: types.CallToolRequestParams
        ) -> types.CallToolResult | types.InputRequiredResult:
            try:
                text = await self.call(ctx, params.name, params.arguments)
            except InputNeeded as need:
                return types.InputRequiredResult(input_requests={APPROVAL_INPUT_KEY: need.request})
            except AgentError as exc:
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=f"{exc.kind.value}: {exc}")],
                    is_error=True,
                )
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

        return Server(
            SERVER_NAME,
            version=__version__,
            instructions=(
                "codingcode's tools for this project. Every call passes its approval "
                "pipeline (rules, permission mode, hooks, confirmation) and runs sandboxed."
            ),
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
        )


def _session_key(request_ctx: Any) -> str:
    request = getattr(request_ctx, "request", None)
    headers = getattr(request, "headers", None)
    if headers is not None:
        sid = headers.get("mcp-session-id")
        if sid:
            return str(sid)[:64]
    return "stdio"


def build_tool_server(
    project: Path,
    *,
    mode: str | None = None,
    service: ToolService | None = None,
    runner_factory: Callable[..., ToolRunner] | None = None,
) -> McpToolServer:
    """The server for ``project``: two runners (with and without someone to ask)."""
    from codingcode.runner import build_runner

    service = service or ToolService.default()
    resolver = create_session_tool_resolver(
        service, policy=ToolVisibilityPolicy(allow_tool_search=False)
    )
    factory = runner_factory or build_runner
    interactive = factory(
        project, mode=mode, session_id="mcp", service=service, confirmer=ElicitationConfirmer()
    )
    headless = factory(project, mode=mode, session_id="mcp", service=service, confirmer=None)
    return McpToolServer(resolver, interactive, headless)


# -- transports ----------------------------------------------------------------------------
async def serve_stdio(server: McpToolServer) -> None:
    from mcp.server.stdio import stdio_server

    from codingcode.logs import quiet_logging

    restore_logging = quiet_logging()  # a bad line from the client: one line, no traceback
    low = server.lowlevel_server()
    try:
        async with stdio_server() as (read, write):
            await low.run(read, write, low.create_initialization_options())
    finally:
        restore_logging()


def parse_host_port(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[::1]:PORT`` or ``:PORT`` (loopback); a clear error otherwise."""
    host, sep, port_text = value.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise InvalidArgumentsError(f"--http takes HOST:PORT (e.g. 127.0.0.1:8765), got {value!r}.")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port_text)


ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def bearer_guard(app: ASGIApp, token: str) -> ASGIApp:
    """An ASGI wrapper refusing HTTP requests without ``Authorization: Bearer <token>``."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                body = json.dumps(
                    {"error": "unauthorized", "message": "send Authorization: Bearer <token>"}
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="codingcode"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def session_end_watch(app: ASGIApp, server: McpToolServer) -> ASGIApp:
    """Frees a session's state when its client ends it (``DELETE`` with its session id)."""

    async def watched(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "DELETE":
            await app(scope, receive, send)
            return
        sid = dict(scope.get("headers") or []).get(b"mcp-session-id")
        status: list[int] = []

        async def record(message: dict[str, Any]) -> None:
            if message.get("type") == "http.response.start":
                status.append(int(message.get("status", 500)))
            await send(message)

        await app(scope, receive, record)
        if sid and status and status[0] < 400:
            server.end_session(sid.decode("latin-1")[:64])

    return watched


def http_app(server: McpToolServer, host: str, token: str | None, port: int = 0) -> ASGIApp:
    """The ASGI app: the SDK's, then the session-end watch, the bearer token if any, and,
    bound to loopback (any form, or a name resolving only to it), the Host/Origin check."""
    from mcp.server.transport_security import TransportSecuritySettings

    low = server.lowlevel_server()
    loopback = is_loopback(host)
    app: ASGIApp = low.streamable_http_app(
        host=host,
        session_idle_timeout=SESSION_IDLE_S,
        max_sessions=MAX_SESSIONS,
        # Our own guard below knows every loopback form; the SDK's knows three strings.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    app = session_end_watch(app, server)
    if token:
        app = bearer_guard(app, token)
    if loopback:
        name = None if _is_ip(host) else host
        app = rebinding_guard(app, port, name)
    return app


def _is_ip(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def resolve_token(host: str, token: str | None) -> tuple[str | None, bool]:
    """The token to require, and whether we made it up (so it must be shown to the user)."""
    if token:
        return token, False
    if is_loopback(host):
        return None, False
    return secrets.token_urlsafe(32), True


async def serve_http(
    server: McpToolServer,
    host: str,
    port: int,
    token: str | None,
    *,
    announce: Callable[[str], None] | None = None,
    read_timeout_s: float = READ_TIMEOUT_S,
    max_connections: int | None = None,
) -> None:
    """Serve until cancelled; ``announce`` hears the URL once the socket is bound.

    Connections are capped and must deliver each request within ``read_timeout_s`` (see
    :mod:`codingcode.mcp_server.http_safety`); logs are one line each, rate-limited.

    We bind the socket ourselves so the URL is known (port 0 picks a free one) before any
    client is told where to connect.
    """
    import socket

    import uvicorn

    from codingcode.logs import quiet_logging
    from codingcode.mcp_server.http_safety import (
        ACCEPT_BATCH,
        KEEP_ALIVE_S,
        MAX_HEAD_BYTES,
        guarded_protocol,
    )

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InvalidArgumentsError(f"Cannot listen on {host}:{port}: {exc.strerror}.") from None
    sock.listen(ACCEPT_BATCH)
    sock.setblocking(False)
    bound = sock.getsockname()[1]
    app = http_app(server, host, token, bound)
    restore_logging = quiet_logging()
    config = uvicorn.Config(
        app,
        host=host,
        port=bound,
        log_level="warning",
        log_config=None,  # our one-line, rate-limited handler (quiet_logging), no tracebacks
        lifespan="on",
        http=guarded_protocol(read_timeout_s, max_connections),
        timeout_keep_alive=int(KEEP_ALIVE_S),
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        # asyncio accepts up to this many connections per wake-up before any is looked
        # at: kept small so a flood cannot take every descriptor before the cap applies.
        backlog=ACCEPT_BATCH,
    )
    if announce is not None:
        shown = f"[{host}]" if ":" in host else host
        announce(f"codingcode MCP server on http://{shown}:{bound}/mcp")
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()
        restore_logging()
