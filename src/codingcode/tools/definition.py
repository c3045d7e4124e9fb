"""What a tool is: :class:`ToolDefinition`, the context it runs in, and the ``@tool`` decorator."""

from __future__ import annotations

import inspect
import os.path
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_type_hints

from pydantic import BaseModel, ConfigDict, create_model

from codingcode.cancel import CancelSignal

if TYPE_CHECKING:
    from codingcode.capabilities import CapabilitySet
    from codingcode.process import Launcher
    from codingcode.workspace import Workspace


@dataclass
class SessionState:
    """Per-session state the state tools keep (the todo list), shared by a session's calls."""

    todos: list[dict[str, str]] = field(default_factory=list)
    #: The session's background processes (``tools.builtin.background``), made on first use.
    background: Any = None
    #: Deferred tools the session offers now (loaded by tool_search, or made relevant, such
    #: as command_output once a background process exists); the resolver shares this set.
    offered: set[str] = field(default_factory=set)
    #: Active ``allowed-tools`` limits of skills and commands (``codingcode.skills.limits``):
    #: each must admit a call; cleared when the prompt ends.
    limits: list[Any] = field(default_factory=list)


class McpRequestChannel(Protocol):
    """What a tool called through ``codingcode mcp`` may send back to the client that asked
    (``ToolExecCtx.mcp``). Each request method returns the client's result as a dict."""

    async def log(self, level: str, data: Any) -> None: ...
    async def progress(self, progress: float, total: float | None = None) -> None: ...
    async def sample(self, messages: list[dict[str, Any]], max_tokens: int) -> dict[str, Any]: ...
    async def elicit(self, message: str, requested_schema: dict[str, Any]) -> dict[str, Any]: ...
    def close_sse_stream(self) -> None: ...


@dataclass
class ToolExecCtx:
    """The context one tool call runs in (SPEC C: signal, session id, turn id, project root)."""

    project_path: Path = field(default_factory=Path.cwd)
    session_id: str = "default"
    turn_id: int = 0
    signal: CancelSignal | None = None
    state: SessionState = field(default_factory=SessionState)
    #: How commands are started. ``None`` means the default launcher (see
    #: ``codingcode.process``); the sandbox installs its own here.
    launcher: Launcher | None = None
    #: What the approval granted this call beyond the sandbox's defaults (set by the runner
    #: from the decision; the launcher builds the call's sandbox from it). ``None``: defaults.
    capabilities: CapabilitySet | None = None
    #: The session's project, settings and trust, built once by the front end (None: a
    #: caller without one; see :meth:`session_workspace`).
    workspace: Workspace | None = None
    #: The MCP request's channel back to its client when the call came in through
    #: ``codingcode mcp`` (log, progress, sample, elicit, close_sse_stream); else None.
    mcp: McpRequestChannel | None = None
    #: Where a tool saves the whole of an output too long to show (the session's outputs
    #: directory; None: nowhere, the output is only cut), and the call's id to name it by.
    output_dir: Path | None = None
    call_id: str = ""
    #: The characters of a result the model sees (the session's ``toolOutputLimit``): a
    #: tool that cuts its own output to this budget is not cut again.
    output_budget: int | None = None
    #: Sees a running command's output as it arrives (``b""`` once when it starts): the
    #: front end shows the call's progress. None: no one watches.
    on_output: Callable[[bytes], None] | None = None

    def __post_init__(self) -> None:
        self.project_path = Path(self.project_path).resolve()

    def session_workspace(self) -> Workspace:
        """The workspace the call runs in. A context made without one (a test, a library
        caller invoking a tool directly: its own front end) reads the files as they are now."""
        if self.workspace is None:
            from codingcode.workspace import Workspace

            return Workspace.load(self.project_path)
        return self.workspace

    def resolve_path(self, path: str | Path) -> Path:
        """Resolve ``path`` against the project root (absolute paths stay as they are)."""
        p = Path(path).expanduser()
        if not p.is_absolute():
            p = self.project_path / p
        return Path(os.path.normpath(p))


@dataclass(frozen=True)
class ToolAnnotations:
    """Honest hints about a tool's effects (exported as MCP tool annotations)."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False


#: What an argument *is*, declared by the tool so approval and the sandbox never need its name:
#: ``path`` a file the tool reads or writes (by its effects), ``directory`` a tree it walks,
#: ``glob`` a file-name pattern under the project (or under the ``directory`` argument),
#: ``command`` a shell command line it runs, ``cwd`` the directory that command runs in,
#: ``url`` an address it fetches, ``content`` text it writes into a file, ``old_text`` the text
#: in that file an edit replaces (with ``content``), ``text`` anything else worth scanning (a
#: query, a prompt, a regex). Arguments without a role are plain values.
ArgRole = Literal[
    "path", "directory", "glob", "command", "cwd", "url", "content", "old_text", "text"
]
ARG_ROLES: tuple[ArgRole, ...] = (
    "path",
    "directory",
    "glob",
    "command",
    "cwd",
    "url",
    "content",
    "old_text",
    "text",
)

#: What a call can do outside the session: read files, write files, run programs, use the
#: network; and ``mode``: change the session's permission mode (leave plan mode), which the
#: user decides call by call. An empty set: nothing outside the session (todo_write).
#: ``None``: undeclared, which approval treats as "anything".
Effect = Literal["reads", "writes", "runs", "network", "mode"]


@dataclass(frozen=True)
class ToolOrigin:
    """Where a tool comes from: a built-in, a custom tool registered in Python or by a
    package, or an MCP server's tool (``server`` names it). A field, not a character in the
    tool's name."""

    kind: Literal["builtin", "custom", "mcp"] = "custom"
    server: str | None = None


BUILTIN = ToolOrigin("builtin")

Execute = Callable[[Any, ToolExecCtx], Awaitable[str]]


@dataclass
class ToolDefinition:
    """A tool: its name, descriptions, argument model and how to run it (DESIGN: contract).

    ``parameters`` is a pydantic model class; arguments are validated against it before
    approval and execution, and ``execute`` receives the validated model instance.
    ``json_schema`` overrides the schema derived from ``parameters`` (used for MCP tools,
    whose schema comes from their server).
    """

    name: str
    description: str
    parameters: type[BaseModel]
    execute: Execute
    short_description: str = ""
    deferred: bool = False
    json_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)
    #: The role of each argument that has one (see :data:`ArgRole`).
    arg_roles: dict[str, ArgRole] = field(default_factory=dict)
    #: What the tool can do (see :data:`Effect`); ``None`` is undeclared (anything).
    effects: frozenset[Effect] | None = None
    origin: ToolOrigin = field(default_factory=ToolOrigin)

    def __post_init__(self) -> None:
        unknown = {k: v for k, v in self.arg_roles.items() if v not in ARG_ROLES}
        if unknown:
            raise ValueError(f"{self.name}: unknown argument roles {unknown}; allowed: {ARG_ROLES}")
        if not self.short_description:
            self.short_description = self.description.strip().split("\n", 1)[0][:120]

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments, as offered to a model."""
        if self.json_schema is not None:
            return self.json_schema
        return clean_schema(self.parameters.model_json_schema())


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's ``title`` noise, which models do not need and which costs tokens."""

    def walk(node: Any, in_properties: bool = False) -> Any:
        if isinstance(node, dict):
            return {
                k: walk(v, in_properties=(k == "properties" and not in_properties))
                for k, v in node.items()
                if in_properties or k != "title"
            }
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    result: dict[str, Any] = walk(schema)
    return result


def tool(
    fn: Callable[..., Awaitable[str]] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    short_description: str = "",
    deferred: bool = False,
    annotations: ToolAnnotations | None = None,
    arg_roles: dict[str, ArgRole] | None = None,
    effects: frozenset[Effect] | None = None,
) -> Any:
    """Turn a plain async function into a :class:`ToolDefinition`.

    The function takes either one pydantic model argument or ordinary keyword arguments
    (their annotations and defaults become the schema), plus optionally a parameter named
    ``ctx`` that receives the :class:`ToolExecCtx`. The docstring is the description::

        @tool
        async def word_count(path: str) -> str:
            "Count the words of a file."
            ...
    """

    def wrap(func: Callable[..., Awaitable[str]]) -> ToolDefinition:
        if not inspect.iscoroutinefunction(func):
            raise TypeError(f"@tool needs an async function, got {func!r}")
        hints = get_type_hints(func)
        sig = inspect.signature(func)
        params = [p for p in sig.parameters.values() if p.name != "ctx"]
        wants_ctx = "ctx" in sig.parameters
        model: type[BaseModel]
        single_model = (
            len(params) == 1
            and isinstance(hints.get(params[0].name), type)
            and issubclass(hints[params[0].name], BaseModel)
        )
        if single_model:
            model = hints[params[0].name]

            async def execute(args: Any, ctx: ToolExecCtx) -> str:
                return await (func(args, ctx=ctx) if wants_ctx else func(args))
        else:
            fields: dict[str, Any] = {}
            for p in params:
                annotation = hints.get(p.name, Any)
                default = ... if p.default is inspect.Parameter.empty else p.default
                fields[p.name] = (annotation, default)
            model = create_model(
                f"{func.__name__}_args",
                __config__=ConfigDict(extra="forbid"),
                **fields,
            )

            async def execute(args: Any, ctx: ToolExecCtx) -> str:
                kwargs = {p.name: getattr(args, p.name) for p in params}
                if wants_ctx:
                    kwargs["ctx"] = ctx
                return await func(**kwargs)

        doc = inspect.getdoc(func) or ""
        return ToolDefinition(
            name=name or func.__name__,
            description=description or doc or func.__name__,
            parameters=model,
            execute=execute,
            short_description=short_description,
            deferred=deferred,
            annotations=annotations or ToolAnnotations(),
            arg_roles=dict(arg_roles or {}),
            effects=effects,
        )

    if fn is not None:
        return wrap(fn)
    return wrap
