"""How a server's tools become ours: argument models from their JSON Schema, annotations.

A server's tool ``t`` is registered as ``server:t`` (SPEC L3). Its arguments are checked
against the server's own JSON Schema before the call; its annotations are its hints only
when the server's entry says ``trusted``, the worst case otherwise.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar

import mcp_types as types
from pydantic import BaseModel, ConfigDict, model_validator

from codingcode.tools.definition import ToolAnnotations, ToolDefinition, ToolExecCtx, ToolOrigin


class _SchemaCheck:
    """A server's JSON Schema, compiled on the first call of its tool (not at import: a
    server may offer thousands of tools, and checking a schema costs milliseconds)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = dict(schema)
        self._validator: Any = None
        self._ready = False

    def validator(self) -> Any:
        if not self._ready:
            from jsonschema import validators

            try:
                cls = validators.validator_for(self.schema)
                cls.check_schema(self.schema)
                self._validator = cls(self.schema)
            except Exception:  # an invalid schema: let the server judge the arguments
                self._validator = None
            self._ready = True
        return self._validator

    def __call__(self, cls_: type[BaseModel], data: Any) -> Any:
        validator = self.validator() if isinstance(data, dict) else None
        if validator is not None:
            errors = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
            if errors:
                shown = []
                for err in errors[:5]:
                    where = ".".join(str(p) for p in err.path) or "(arguments)"
                    shown.append(f"{where}: {err.message}")
                raise ValueError("; ".join(shown))
        return data


class McpArguments(BaseModel):
    """The arguments of an MCP tool: any JSON object its server's schema accepts.

    One subclass per tool holds that tool's :class:`_SchemaCheck`; the validator is
    defined once here, and the subclasses defer their build, so making one costs little.
    """

    model_config = ConfigDict(extra="allow", defer_build=True)
    schema_check: ClassVar[_SchemaCheck | None] = None

    @model_validator(mode="before")
    @classmethod
    def _check(cls, data: Any) -> Any:
        return cls.schema_check(cls, data) if cls.schema_check is not None else data


def _args_model(name: str, schema: Mapping[str, Any]) -> type[BaseModel]:
    """A pydantic model that validates arguments against the server's JSON Schema
    (compiled on first use, so importing 20,000 tools costs little more than listing them)."""
    namespace: dict[str, Any] = {"schema_check": _SchemaCheck(schema), "__module__": __name__}
    return type(f"{name}_mcp_args", (McpArguments,), namespace)


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


ToolCall = Callable[[str, dict[str, Any], ToolExecCtx], Awaitable[str]]


def tool_definition(
    server: str, tool: types.Tool, *, deferred: bool, trusted: bool, call: ToolCall
) -> ToolDefinition:
    """The ToolDefinition of ``server:tool``; ``call(tool, args, ctx)`` runs it."""
    server_tool = tool.name
    schema = _input_schema(tool)

    async def execute(args: BaseModel, ctx: ToolExecCtx) -> str:
        return await call(server_tool, args.model_dump(), ctx)

    description = (tool.description or tool.title or tool.name).strip()
    first = description.split("\n", 1)[0][:120]
    return ToolDefinition(
        name=f"{server}:{tool.name}",
        description=f"{description}\n(MCP tool {tool.name!r} of server {server!r})",
        short_description=first,
        parameters=_args_model(f"{server}_{tool.name}", schema),
        execute=execute,
        deferred=deferred,
        json_schema=schema,
        annotations=_annotations(tool, trusted),
        origin=ToolOrigin("mcp", server),
    )
