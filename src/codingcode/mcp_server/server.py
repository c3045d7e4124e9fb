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
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types

from codingcode import __version__
from codingcode.errors import AgentError, ErrorKind, InvalidArgumentsError
from codingcode.mcp_server.channel import RequestChannel, level_rank
from codingcode.mcp_server.http_safety import READ_TIMEOUT_S, is_loopback, rebinding_guard
from codingcode.mcp_server.prompts import PluginPrompts, PromptSource, project_commands
from codingcode.mcp_server.resources import (
    FILE_TEMPLATE,
    PluginResources,
    ProjectListing,
    complete_path,
    path_of_uri,
    read_contents,
)
from codingcode.mcp_server.subscriptions import Subscriptions, contents_state, file_state
from codingcode.runner import ToolRunner
from codingcode.tools.content import ContentResult
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
#: A call running this long without reporting progress itself gets a progress heartbeat
#: (elapsed seconds) every :data:`HEARTBEAT_S`, when its client asked for progress.
HEARTBEAT_AFTER_S = 2.0
HEARTBEAT_S = 2.0

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


def _mcp_error(exc: AgentError) -> Exception:
    """An AgentError as the JSON-RPC error a resources/prompts/completion request answers."""
    from mcp.shared.exceptions import MCPError

    code = {
        ErrorKind.NOT_FOUND: -32002,  # the spec's "resource not found"
        ErrorKind.INVALID_ARGUMENTS: -32602,
    }.get(exc.kind, -32603)
    return MCPError(code, f"{exc.kind.value}: {exc}")


def _tool_result(result: str) -> types.CallToolResult:
    if isinstance(result, ContentResult):
        try:
            return types.CallToolResult.model_validate({"content": list(result.blocks)})
        except ValueError as exc:
            text = f"tool_failure: the tool returned content blocks MCP does not accept: {exc}"
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text[:2000])], is_error=True
            )
    return types.CallToolResult(content=[types.TextContent(type="text", text=result)])


@dataclass
class McpToolServer:
    """The tools of one project served over MCP, every call through the runner; with the
    project's files as resources, plugins' resources and prompts, logging and completion."""

    resolver: SessionToolResolver
    #: Runs calls when the client can answer an elicitation (ask -> elicitation).
    interactive: ToolRunner
    #: Runs calls when it cannot (ask -> deny with how to allow it).
    headless: ToolRunner
    #: Per-client session state (the todo list), by MCP session id ("stdio" for stdio);
    #: freed when the session ends (DELETE) or idles out (:data:`SESSION_IDLE_S`).
    states: MutableMapping[str, SessionState] = field(default_factory=dict)
    _last_used: OrderedDict[str, float] = field(default_factory=OrderedDict)
    #: Installed packages' resources (``codingcode.resources``).
    plugin_resources: PluginResources = field(default_factory=PluginResources)
    #: Where prompts come from (``codingcode.prompts`` plugins; custom commands plug in here).
    prompt_sources: list[PromptSource] = field(default_factory=list)
    #: The log level each session asked for with logging/setLevel (freed with the session).
    log_levels: dict[str, str] = field(default_factory=dict)
    #: One line per plugin that could not be loaded (shown once by the CLI).
    notes: list[str] = field(default_factory=list)
    _listing: ProjectListing | None = None
    #: resources/subscribe: who watches what (polled by :meth:`Subscriptions.watch`).
    subscriptions: Subscriptions = field(init=False)

    def __post_init__(self) -> None:
        self.subscriptions = Subscriptions(self._resource_state)

    @property
    def project(self) -> Path:
        return self.headless.project_path

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
        self.log_levels.pop(key, None)
        self.subscriptions.end_session(key)

    def list_tools(self) -> list[types.Tool]:
        return [mcp_tool(d) for d in self.resolver.tools()]

    def _runner(self, request_ctx: Any) -> ToolRunner:
        return self.interactive if client_can_elicit(request_ctx) else self.headless

    async def call(self, request_ctx: Any, name: str, arguments: dict[str, Any] | None) -> str:
        """Run one call; AgentError for every expected failure (the caller maps it)."""
        import anyio

        if not self.resolver.is_callable(name):
            self.resolver.ensure_callable(name)  # raises NotFoundError with what exists
        if arguments is not None and not isinstance(arguments, dict):
            raise InvalidArgumentsError(f"Arguments for {name} must be a JSON object.")
        runner = self._runner(request_ctx)
        key = _session_key(request_ctx)
        state = self.session_state(key)
        channel = RequestChannel(request_ctx, self.log_levels.get(key))
        ctx = runner.context(session_id=f"mcp-{key}", state=state, mcp=channel)
        token = _current_request.set(request_ctx)
        failure: Exception | None = None
        result = ""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_heartbeat, channel)
                try:
                    result = await runner.run(name, arguments or {}, ctx)
                except Exception as exc:  # raised below, not wrapped in an ExceptionGroup
                    failure = exc
                finally:
                    tg.cancel_scope.cancel()
        finally:
            _current_request.reset(token)
        if failure is not None:
            raise failure
        return result

    # -- resources -------------------------------------------------------------------------
    def list_resources(self, cursor: str | None) -> types.ListResourcesResult:
        if self._listing is None:
            from codingcode.sandbox.masks import guard_for

            guard = guard_for(self.headless.launcher)  # masked files are not listed
            hidden = None if guard is None else (lambda p: guard.denied(p) is not None)
            self._listing = ProjectListing(self.project, hidden)
        page, next_cursor = self._listing.page(cursor)
        items = (self.plugin_resources.resources() if not cursor else []) + page
        return types.ListResourcesResult.model_validate(
            {"resources": items, "nextCursor": next_cursor}
        )

    def list_resource_templates(self) -> types.ListResourceTemplatesResult:
        project_files = {
            "uriTemplate": FILE_TEMPLATE,
            "name": "project-file",
            "description": "A file by its absolute path (read with read_file's approval).",
        }
        templates = [project_files, *self.plugin_resources.resource_templates()]
        return types.ListResourceTemplatesResult.model_validate({"resourceTemplates": templates})

    async def read_resource(self, request_ctx: Any, uri: str) -> list[dict[str, Any]]:
        """The contents of ``uri``: a plugin's, or a project file approved as read_file."""
        import anyio

        contents = await self.plugin_resources.read(uri)
        if contents is not None:
            return contents
        path = await self._approved_path(request_ctx, uri)
        return [await anyio.to_thread.run_sync(read_contents, path, uri)]

    async def subscribe(self, request_ctx: Any, uri: str) -> None:
        """Watch ``uri`` for this session: a plugin's resource, or a project file that
        read_file's approval lets this client read."""
        if self.plugin_resources.owner(uri) is None:
            await self._approved_path(request_ctx, uri)
        key = _session_key(request_ctx)
        await self.subscriptions.subscribe(key, request_ctx.session, uri)

    async def _resource_state(self, uri: str) -> Any:
        if self.plugin_resources.owner(uri) is not None:
            return contents_state(await self.plugin_resources.read(uri))
        path = path_of_uri(uri)
        return None if path is None else file_state(str(path))

    async def _approved_path(self, request_ctx: Any, uri: str) -> Path:
        """The path of a file URI, once the pipeline allowed reading it as read_file would."""
        from codingcode.errors import DeniedError, NotFoundError

        path = path_of_uri(uri)
        if path is None:
            raise NotFoundError(f"No resource {uri}; resources/list shows what exists.")
        runner = self._runner(request_ctx)
        key = _session_key(request_ctx)
        ctx = runner.context(session_id=f"mcp-{key}", state=self.session_state(key))
        token = _current_request.set(request_ctx)
        try:
            decision = await runner.decide("read_file", {"path": str(path)}, ctx)
        finally:
            _current_request.reset(token)
        if not decision.allowed:
            raise DeniedError(f"Reading {path} (as read_file) was denied: {decision.reason}")
        from codingcode.sandbox.masks import check_readable

        check_readable(path, str(path), runner.launcher)  # sandbox.denyRead, as read_file
        return path

    # -- prompts ---------------------------------------------------------------------------
    def list_prompts(self) -> list[dict[str, Any]]:
        return [p for source in self.prompt_sources for p in source.list_prompts()]

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> list[dict[str, Any]]:
        from codingcode.errors import NotFoundError

        for source in self.prompt_sources:
            if any(p.get("name") == name for p in source.list_prompts()):
                return await source.get_prompt(name, arguments)
        raise NotFoundError(f"No prompt named {name!r}; prompts/list shows what exists.")

    async def complete(self, ref: Any, argument: str, value: str) -> list[str]:
        if getattr(ref, "type", None) == "ref/prompt":
            for source in self.prompt_sources:
                if any(p.get("name") == ref.name for p in source.list_prompts()):
                    return await source.complete(ref.name, argument, value)
            return []
        template = str(getattr(ref, "uri", ""))
        if template == FILE_TEMPLATE and argument == "path":
            import anyio

            root = self.project
            from codingcode.sandbox.masks import guard_for

            guard = guard_for(self.headless.launcher)
            hidden = None if guard is None else (lambda p: guard.denied(p) is not None)
            relative = await anyio.to_thread.run_sync(complete_path, root, value, hidden)
            return [f"{root}/{r}".lstrip("/") for r in relative]
        return await self.plugin_resources.complete(template, argument, value) or []

    def lowlevel_server(self) -> Any:
        from mcp.server.lowlevel.server import Server

        async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(tools=self.list_tools())

        async def on_call_tool(
            ctx: Any, params: types.CallToolRequestParams
        ) -> types.CallToolResult | types.InputRequiredResult:
            try:
                result = await self.call(ctx, params.name, params.arguments)
            except InputNeeded as need:
                return types.InputRequiredResult(input_requests={APPROVAL_INPUT_KEY: need.request})
            except AgentError as exc:
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=f"{exc.kind.value}: {exc}")],
                    is_error=True,
                )
            return _tool_result(result)

        async def on_list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
            import anyio

            try:  # the first page walks the project: off the event loop
                return await anyio.to_thread.run_sync(
                    self.list_resources, getattr(params, "cursor", None)
                )
            except AgentError as exc:
                raise _mcp_error(exc) from None

        async def on_list_resource_templates(
            ctx: Any, params: Any
        ) -> types.ListResourceTemplatesResult:
            return self.list_resource_templates()

        async def on_read_resource(
            ctx: Any, params: types.ReadResourceRequestParams
        ) -> types.ReadResourceResult | types.InputRequiredResult:
            try:
                contents = await self.read_resource(ctx, str(params.uri))
            except InputNeeded as need:
                return types.InputRequiredResult(input_requests={APPROVAL_INPUT_KEY: need.request})
            except AgentError as exc:
                raise _mcp_error(exc) from None
            try:
                return types.ReadResourceResult.model_validate({"contents": contents})
            except ValueError as exc:
                raise _mcp_error(
                    AgentError(f"{params.uri}: contents MCP does not accept: {exc}")
                ) from None

        async def on_subscribe_resource(
            ctx: Any, params: types.SubscribeRequestParams
        ) -> types.EmptyResult:
            try:
                await self.subscribe(ctx, str(params.uri))
            except InputNeeded:
                raise _mcp_error(
                    AgentError("Subscribing needs an approval; read the resource first.")
                ) from None
            except AgentError as exc:
                raise _mcp_error(exc) from None
            return types.EmptyResult()

        async def on_unsubscribe_resource(
            ctx: Any, params: types.UnsubscribeRequestParams
        ) -> types.EmptyResult:
            self.subscriptions.unsubscribe(_session_key(ctx), str(params.uri))
            return types.EmptyResult()

        async def on_list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
            return types.ListPromptsResult.model_validate({"prompts": self.list_prompts()})

        async def on_get_prompt(
            ctx: Any, params: types.GetPromptRequestParams
        ) -> types.GetPromptResult:
            try:
                messages = await self.get_prompt(params.name, dict(params.arguments or {}))
                return types.GetPromptResult.model_validate({"messages": messages})
            except AgentError as exc:
                raise _mcp_error(exc) from None
            except ValueError as exc:
                raise _mcp_error(
                    AgentError(f"{params.name}: messages MCP does not accept: {exc}")
                ) from None

        async def on_completion(
            ctx: Any, params: types.CompleteRequestParams
        ) -> types.CompleteResult:
            try:
                values = await self.complete(
                    params.ref, params.argument.name, params.argument.value
                )
            except AgentError as exc:
                raise _mcp_error(exc) from None
            return types.CompleteResult(
                completion=types.Completion(values=values[:100], has_more=len(values) > 100)
            )

        async def on_set_logging_level(
            ctx: Any, params: types.SetLevelRequestParams
        ) -> types.EmptyResult:
            try:
                level_rank(params.level)
            except AgentError as exc:
                raise _mcp_error(exc) from None
            self.log_levels[_session_key(ctx)] = params.level
            return types.EmptyResult()

        from mcp.shared.exceptions import MCPDeprecationWarning

        with warnings.catch_warnings():
            # logging/setLevel is deprecated by the 2026-07-28 revision, not by 2025-11-25,
            # which our clients speak; we serve it for them.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            return Server(
                SERVER_NAME,
                version=__version__,
                instructions=(
                    "codingcode's tools for this project. Every call passes its approval "
                    "pipeline (rules, permission mode, hooks, confirmation) and runs sandboxed. "
                    "The project's files are resources (read with read_file's approval)."
                ),
                on_list_tools=on_list_tools,
                on_call_tool=on_call_tool,
                on_list_resources=on_list_resources,
                on_list_resource_templates=on_list_resource_templates,
                on_read_resource=on_read_resource,
                on_subscribe_resource=on_subscribe_resource,
                on_unsubscribe_resource=on_unsubscribe_resource,
                on_list_prompts=on_list_prompts,
                on_get_prompt=on_get_prompt,
                on_completion=on_completion,
                on_set_logging_level=on_set_logging_level,
            )


async def _heartbeat(channel: RequestChannel) -> None:
    """Progress for a long call whose tool reports none itself: elapsed seconds."""
    import anyio

    start = time.monotonic()
    await anyio.sleep(HEARTBEAT_AFTER_S)
    while not channel.reported:
        try:
            await channel.send_progress(round(time.monotonic() - start, 1), None)
        except Exception:  # the client went away: the call itself will find out
            return
        await anyio.sleep(HEARTBEAT_S)


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
    plugins: bool = False,
) -> McpToolServer:
    """The server for ``project``: two runners (with and without someone to ask);
    ``plugins``: with installed packages' resources and prompts (entry points)."""
    from codingcode.runner import build_runner
    from codingcode.workspace import Workspace

    service = service or ToolService.default()
    resolver = create_session_tool_resolver(
        service, policy=ToolVisibilityPolicy(allow_tool_search=False)
    )
    factory = runner_factory or build_runner
    workspace = Workspace.load(project)  # settings and trust, read once for both runners
    interactive = factory(
        workspace,
        mode=mode,
        session_id="mcp",
        service=service,
        confirmer=ElicitationConfirmer(),
    )
    headless = factory(workspace, mode=mode, session_id="mcp", service=service, confirmer=None)
    server = McpToolServer(resolver, interactive, headless)
    if plugins:
        server.plugin_resources = PluginResources.installed()
        prompts = PluginPrompts.installed()
        commands, command_notes = project_commands(project, workspace.is_trusted)
        server.prompt_sources.append(commands)
        server.prompt_sources.append(prompts)
        server.notes = [*server.plugin_resources.notes, *prompts.notes, *command_notes]
    return server


# -- transports ----------------------------------------------------------------------------
async def serve_stdio(server: McpToolServer) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    from codingcode.logs import quiet_logging

    restore_logging = quiet_logging()  # a bad line from the client: one line, no traceback
    low = server.lowlevel_server()
    try:
        async with stdio_server() as (read, write), anyio.create_task_group() as tg:
            tg.start_soon(server.subscriptions.watch)
            await low.run(read, write, low.create_initialization_options())
            tg.cancel_scope.cancel()
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
        ip_literal,
    )

    # Every form of an address binds as the address it means (2130706433, 127.1,
    # "127.0.0.1.", [::1]); a name with its trailing dot as the name.
    literal = ip_literal(host)
    address = str(literal) if literal is not None else host.removesuffix(".")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
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
        import anyio

        async with anyio.create_task_group() as tg:
            tg.start_soon(server.subscriptions.watch)
            await uvicorn.Server(config).serve(sockets=[sock])
            tg.cancel_scope.cancel()
    finally:
        sock.close()
        restore_logging()
