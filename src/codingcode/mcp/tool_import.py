"""How a server's tools become ours: argument models from their JSON Schema, annotations.

A server's tool ``t`` is registered as ``server:t`` (SPEC L3). Its arguments are checked
against the server's own JSON Schema before the call; its annotations are its hints only
when the server's entry says ``trusted``, the worst case otherwise.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from pydantic import BaseModel, ConfigDict, model_validator

from codingcode.tools.definition import ToolAnnotations, ToolDefinition, ToolExecCtx, ToolOrigin


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
