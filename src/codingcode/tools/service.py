"""ToolService: the registry of tools, their schemas, and one validated call."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic import BaseModel, ValidationError

from codingcode.errors import (
    AgentError,
    CancelledError,
    InvalidArgumentsError,
    ToolFailureError,
    UnknownToolError,
)
from codingcode.tools.definition import ToolDefinition, ToolExecCtx


class ToolService:
    """The registry every part of codingcode asks for tools.

    Registering a tool is all it takes for the agent to offer it (SPEC C1). ``call``
    validates and executes one call *without* approval: it is the seam that the approval
    pipeline wraps, and that tests and benchmarks use directly.
    """

    def __init__(self, tools: Iterable[ToolDefinition] = ()) -> None:
        #: Each tool by name; a :class:`_Unloaded` stands for a built-in whose module is
        #: imported when the tool is first asked for (see :meth:`default`).
        self._tools: dict[str, ToolDefinition | _Unloaded] = {}
        #: Why a tool that is not registered cannot be called, when someone knows (the MCP
        #: client: its server failed or needs a login), instead of "Unknown tool".
        self.missing: Callable[[str], AgentError | None] | None = None
        #: The service this one was made from with fewer tools (a sub-agent's, a run's
        #: with --disallowed-tools): what is known there (``missing``, the MCP servers
        #: ``/server:prompt`` reaches) holds here too.
        self.derived_from: ToolService | None = None
        for t in tools:
            self.register(t)

    def derive(self, tools: Iterable[ToolDefinition]) -> ToolService:
        """A service with ``tools`` (some of this one's) that still knows what this one
        knows about the tools it lacks."""
        child = ToolService(tools)
        child.derived_from = self
        return child

    def why_missing(self, name: str) -> AgentError | None:
        """Why ``name`` (not registered) cannot be called, when someone knows."""
        service: ToolService | None = self
        while service is not None:
            if service.missing is not None:
                return service.missing(name)
            service = service.derived_from
        return None

    @classmethod
    def default(cls) -> ToolService:
        """A service with every built-in tool registered. Each module of built-in tools is
        imported when one of its tools is first asked for (a command that calls one tool
        loads no other): the names, their order and everything else are as if all were."""
        from codingcode.tools.builtin import BUILTIN_MODULES

        service = cls()
        for module, (_, names) in BUILTIN_MODULES.items():
            for name in names:
                service._tools[name] = _Unloaded(module)
        return service

    def _load(self, module: str) -> None:
        """Import the built-in tools of ``module`` in place of their stand-ins (a tool
        registered again or removed since stays as it is)."""
        from codingcode.tools.builtin import builtin_module_tools

        for definition in builtin_module_tools(module):
            if self._tools.get(definition.name) == _Unloaded(module):
                self._tools[definition.name] = definition

    # -- registry -----------------------------------------------------------------
    def register(self, definition: ToolDefinition, *, replace: bool = False) -> ToolDefinition:
        if not isinstance(definition, ToolDefinition):
            raise TypeError(f"register() takes a ToolDefinition, got {type(definition).__name__}")
        if definition.name in self._tools and not replace:
            raise ValueError(f"a tool named {definition.name!r} is already registered")
        self._tools[definition.name] = definition
        return definition

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> ToolDefinition:
        try:
            found = self._tools[name]
            if isinstance(found, _Unloaded):
                self._load(found.module)
                found = self._tools[name]
            assert isinstance(found, ToolDefinition)
            return found
        except KeyError:
            why = self.why_missing(name)
            if why is not None:
                raise why from None
            raise UnknownToolError(self._unknown_tool_message(name)) from None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def list(self, *, include_deferred: bool = True) -> builtins.list[ToolDefinition]:
        for module in {t.module for t in self._tools.values() if isinstance(t, _Unloaded)}:
            self._load(module)
        tools = [t for t in self._tools.values() if isinstance(t, ToolDefinition)]
        return [t for t in tools if include_deferred or not t.deferred]

    def names(self) -> builtins.list[str]:
        return list(self._tools)

    def _unknown_tool_message(self, name: str) -> str:
        import difflib

        close = difflib.get_close_matches(name, list(self._tools), n=3, cutoff=0.5)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        shown = ", ".join(sorted(t.name for t in self.list(include_deferred=False)))
        return f"Unknown tool {name!r}.{hint} Available tools: {shown}."

    # -- schemas --------------------------------------------------------------------
    @staticmethod
    def openai_schema(definition: ToolDefinition) -> dict[str, Any]:
        """The Chat Completions ``tools`` entry."""
        return {
            "type": "function",
            "function": {
                "name": definition.name,
                "description": definition.description,
                "parameters": definition.input_schema(),
            },
        }

    @staticmethod
    def anthropic_schema(definition: ToolDefinition) -> dict[str, Any]:
        """The Messages API ``tools`` entry."""
        return {
            "name": definition.name,
            "description": definition.description,
            "input_schema": definition.input_schema(),
        }

    @staticmethod
    def mcp_schema(definition: ToolDefinition) -> dict[str, Any]:
        """The MCP ``tools/list`` entry, annotations included."""
        a = definition.annotations
        return {
            "name": definition.name,
            "description": definition.description,
            "inputSchema": definition.input_schema(),
            "annotations": {
                "readOnlyHint": a.read_only,
                "destructiveHint": a.destructive,
                "idempotentHint": a.idempotent,
                "openWorldHint": a.open_world,
            },
        }

    # -- calling -----------------------------------------------------------------------
    def validate(self, name: str, args: Any) -> tuple[ToolDefinition, BaseModel]:
        """Look the tool up and validate ``args``; raise AgentError with a clear message."""
        definition = self.get(name)
        return definition, validate_arguments(definition, args)

    async def call(self, name: str, args: Any, ctx: ToolExecCtx | None = None) -> str:
        """Validate and execute one call (no approval; the pipeline wraps this)."""
        definition, model = self.validate(name, args)
        return await self.execute(definition, model, ctx or ToolExecCtx())

    @staticmethod
    async def execute(definition: ToolDefinition, model: BaseModel, ctx: ToolExecCtx) -> str:
        """Run an already validated call, turning every failure into an AgentError."""
        if ctx.signal is not None and ctx.signal.is_set():
            raise CancelledError(f"{definition.name} was cancelled before it started.")
        try:
            result: Any = await definition.execute(model, ctx)
        except AgentError:
            raise
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:  # a bug in a tool must not take the session down
            raise ToolFailureError(
                f"{definition.name} failed unexpectedly: {type(exc).__name__}: {exc}"
            ) from exc
        if isinstance(result, list):  # MCP content blocks (a custom tool may return them)
            from codingcode.tools.content import content_result

            return content_result(definition.name, result)
        if not isinstance(result, str):
            raise ToolFailureError(
                f"{definition.name} returned {type(result).__name__}, expected a string "
                "or a list of MCP content blocks."
            )
        return result


@dataclass(frozen=True)
class _Unloaded:
    """A built-in tool whose module is not imported yet."""

    module: str


def validate_arguments(definition: ToolDefinition, args: Any) -> BaseModel:
    if not isinstance(args, dict):
        raise InvalidArgumentsError(
            f"Arguments for {definition.name} must be a JSON object, got {_json_type(args)}."
        )
    try:
        return definition.parameters.model_validate(args)
    except ValidationError as exc:
        raise InvalidArgumentsError(format_validation_error(definition, exc)) from None


def format_validation_error(definition: ToolDefinition, exc: ValidationError) -> str:
    """One line per problem: the field, what was wrong, what is allowed."""
    allowed = ", ".join(definition.parameters.model_fields) or "(none)"
    lines = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        kind = err["type"]
        if kind == "extra_forbidden":
            lines.append(f"unknown field `{loc}` (allowed fields: {allowed})")
        elif kind == "missing":
            lines.append(f"`{loc}` is required")
        else:
            got = err.get("input")
            shown = repr(got) if len(repr(got)) <= 60 else repr(got)[:57] + "..."
            lines.append(f"`{loc}`: {err['msg']} (got {shown})")
    return f"Invalid arguments for {definition.name}: " + "; ".join(lines) + "."


def _json_type(value: Any) -> str:
    return {
        list: "an array",
        str: "a string",
        int: "a number",
        float: "a number",
        bool: "a boolean",
        type(None): "null",
    }.get(type(value), type(value).__name__)
