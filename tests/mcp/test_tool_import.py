"""A server's tool as ours: its schema checked on first use, not at import."""

from __future__ import annotations

import mcp_types as types
import pytest

from codingcode.errors import InvalidArgumentsError
from codingcode.mcp.tool_import import McpArguments, tool_definition
from codingcode.tools import ToolService


async def _never(tool: str, args: dict[str, object], ctx: object) -> str:
    return f"{tool} {args}"


def _tool(name: str, schema: dict[str, object]) -> types.Tool:
    return types.Tool(name=name, input_schema=schema)


@pytest.mark.anyio
async def test_schemas_are_compiled_on_first_use_only() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    definitions = [
        tool_definition("s", _tool(f"t{i}", schema), deferred=True, trusted=False, call=_never)  # type: ignore[arg-type]
        for i in range(2000)
    ]
    service = ToolService(definitions)
    params = definitions[7].parameters
    assert issubclass(params, McpArguments)
    check = params.schema_check  # type: ignore[attr-defined]
    assert check is not None and not check._ready  # nothing compiled at import
    with pytest.raises(InvalidArgumentsError, match="'n' is a required property"):
        await service.call("s:t7", {})
    assert check._ready
    assert await service.call("s:t7", {"n": 3}) == "t7 {'n': 3}"
    assert not definitions[8].parameters.schema_check._ready  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_an_invalid_schema_leaves_the_judging_to_the_server() -> None:
    bad = {"type": "object", "properties": {"n": {"type": 12}}}
    definition = tool_definition("s", _tool("t", bad), deferred=False, trusted=False, call=_never)  # type: ignore[arg-type]
    assert await ToolService([definition]).call("s:t", {"n": "anything"}) == "t {'n': 'anything'}"
