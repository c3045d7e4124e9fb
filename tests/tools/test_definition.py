from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from codingcode.errors import AgentError, ErrorKind, ToolFailureError
from codingcode.tools import ToolDefinition, ToolExecCtx, ToolService, tool

pytestmark = pytest.mark.anyio


@tool
async def greet(name: str, times: int = 1) -> str:
    """Greet someone.

    Longer text."""
    return " ".join([f"hello {name}"] * times)


class EchoArgs(BaseModel):
    text: str


@tool(name="echo_ctx", short_description="Echo with context")
async def echo(args: EchoArgs, ctx: ToolExecCtx) -> str:
    return f"{args.text} in {ctx.project_path.name} ({ctx.session_id})"


async def test_tool_decorator_builds_schema_from_signature(ctx: ToolExecCtx) -> None:
    assert greet.name == "greet"
    assert greet.short_description == "Greet someone."
    schema = greet.input_schema()
    assert schema["required"] == ["name"]
    assert schema["properties"]["times"] == {"default": 1, "type": "integer"}
    assert schema["additionalProperties"] is False
    service = ToolService([greet])
    assert await service.call("greet", {"name": "ann", "times": 2}, ctx) == "hello ann hello ann"


async def test_tool_decorator_with_model_and_ctx(ctx: ToolExecCtx) -> None:
    service = ToolService([echo])
    out = await service.call("echo_ctx", {"text": "hi"}, ctx)
    assert out == "hi in project (test)"
    assert echo.short_description == "Echo with context"


def test_tool_decorator_rejects_sync_functions() -> None:
    with pytest.raises(TypeError):
        tool(lambda: "x")  # type: ignore[arg-type]


def test_register_twice_is_an_error_unless_replacing() -> None:
    service = ToolService([greet])
    with pytest.raises(ValueError, match="already registered"):
        service.register(greet)
    service.register(greet, replace=True)
    assert service.names() == ["greet"]


def test_unknown_tool_suggests_close_names(service: ToolService) -> None:
    with pytest.raises(AgentError) as info:
        service.get("read_fil")
    assert info.value.kind is ErrorKind.NOT_FOUND
    assert "Did you mean: read_file" in info.value.message


async def test_validation_errors_name_the_field_and_the_limit(
    service: ToolService, ctx: ToolExecCtx
) -> None:
    cases = {
        "limit": (
            {"path": "x", "limit": 501},
            "`limit`: Input should be less than or equal to 500",
        ),
        "missing": ({}, "`path` is required"),
        "type": ({"path": 3}, "`path`: Input should be a valid string"),
        "extra": (
            {"path": "x", "bogus": 1},
            "unknown field `bogus` (allowed fields: path, offset, limit)",
        ),
    }
    for args, expected in cases.values():
        with pytest.raises(AgentError) as info:
            await service.call("read_file", args, ctx)
        assert info.value.kind is ErrorKind.INVALID_ARGUMENTS
        assert expected in info.value.message
    with pytest.raises(AgentError, match="must be a JSON object, got an array"):
        await service.call("read_file", [], ctx)


async def test_unexpected_exception_becomes_tool_failure(ctx: ToolExecCtx) -> None:
    @tool
    async def broken() -> str:
        """Always fails."""
        raise RuntimeError("boom")

    with pytest.raises(ToolFailureError, match="broken failed unexpectedly: RuntimeError: boom"):
        await ToolService([broken]).call("broken", {}, ctx)


async def test_non_string_result_is_a_failure(ctx: ToolExecCtx) -> None:
    @tool
    async def number() -> str:
        """Returns the wrong type."""
        return 3  # type: ignore[return-value]

    with pytest.raises(ToolFailureError, match="expected a string"):
        await ToolService([number]).call("number", {}, ctx)


async def test_cancelled_signal_stops_before_start(ctx: ToolExecCtx) -> None:
    from codingcode.tools import CancelSignal

    ctx.signal = CancelSignal()
    ctx.signal.set()
    with pytest.raises(AgentError) as info:
        await ToolService([greet]).call("greet", {"name": "x"}, ctx)
    assert info.value.kind is ErrorKind.CANCELLED


def test_schema_shapes_for_each_provider() -> None:
    d: ToolDefinition = greet
    openai = ToolService.openai_schema(d)
    assert openai["type"] == "function" and openai["function"]["name"] == "greet"
    assert openai["function"]["parameters"] == d.input_schema()
    anthropic = ToolService.anthropic_schema(d)
    assert set(anthropic) == {"name", "description", "input_schema"}
    mcp = ToolService.mcp_schema(d)
    assert mcp["inputSchema"] == d.input_schema()
    assert set(mcp["annotations"]) == {
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    }


def test_json_schema_override_wins() -> None:
    d = ToolDefinition(
        name="srv:x",
        description="d",
        parameters=EchoArgs,
        execute=echo.execute,
        json_schema={"type": "object", "properties": {"q": {"type": "string"}}},
    )
    assert d.input_schema()["properties"] == {"q": {"type": "string"}}


def test_ctx_resolves_relative_paths_against_the_project(tmp_path: Path) -> None:
    ctx = ToolExecCtx(project_path=tmp_path)
    assert ctx.resolve_path("a/../b.txt") == tmp_path.resolve() / "b.txt"
    assert ctx.resolve_path("/etc/hosts") == Path("/etc/hosts")


def test_default_service_offers_the_builtin_tools(service: ToolService) -> None:
    names = {t.name for t in service.list(include_deferred=False)}
    assert {
        "read_file",
        "write_file",
        "edit_file",
        "search_code",
        "search_files",
        "execute_command",
        "todo_write",
    } <= names


def test_every_builtin_declares_its_origin_effects_and_argument_roles() -> None:
    from codingcode.tools.service import ToolService

    for definition in ToolService.default().list():
        assert definition.origin.kind == "builtin", definition.name
        assert definition.effects is not None, definition.name
        fields = set(definition.parameters.model_fields)
        assert set(definition.arg_roles) <= fields, (definition.name, definition.arg_roles)
    by_name = {d.name: d for d in ToolService.default().list()}
    assert by_name["execute_command"].arg_roles["command"] == "command"
    assert by_name["read_file"].arg_roles == {"path": "path"}
    assert by_name["todo_write"].effects == frozenset()


def test_an_unknown_argument_role_is_refused() -> None:
    import pytest
    from pydantic import BaseModel

    from codingcode.tools.definition import ToolDefinition

    class Args(BaseModel):
        x: str

    async def run(args: Args, ctx: object) -> str:
        return ""

    with pytest.raises(ValueError, match="unknown argument roles"):
        ToolDefinition(
            name="t",
            description="d",
            parameters=Args,
            execute=run,  # type: ignore[arg-type]
            arg_roles={"x": "filename"},  # type: ignore[dict-item]
        )


# -- the built-ins load by module, on first use -------------------------------------------
def test_builtin_table_is_complete() -> None:
    """``BUILTIN_MODULES`` names, in order, exactly the tools each module makes."""
    from importlib import import_module

    from codingcode.tools.builtin import BUILTIN_MODULES

    for module, (factory, names) in BUILTIN_MODULES.items():
        made = [t.name for t in getattr(import_module(module), factory)()]
        assert made == list(names), module


def test_the_default_service_loads_a_module_when_one_of_its_tools_is_asked_for() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from codingcode.tools import ToolService\n"
        "s = ToolService.default()\n"
        "assert 'fetch_url' in s and len(s) == 11, s.names()\n"
        "assert s.get('read_file').name == 'read_file'\n"
        "print(sorted(m for m in sys.modules if m.startswith('codingcode.tools.builtin.')))\n"
        "s.list()\n"
        "print(sorted(m for m in sys.modules if m.startswith('codingcode.tools.builtin.')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    first, every = proc.stdout.splitlines()
    assert "codingcode.tools.builtin.fs" in first
    for lazy in ("web", "shell", "background", "code_search", "state"):
        assert f"codingcode.tools.builtin.{lazy}'" not in first, lazy
        assert f"codingcode.tools.builtin.{lazy}'" in every, lazy


def test_the_lazy_service_is_the_eager_one() -> None:
    """Names, order, definitions, and what replacing or removing a built-in does."""
    from codingcode.tools.builtin import builtin_tools

    lazy, eager = ToolService.default(), ToolService(builtin_tools())
    assert lazy.names() == eager.names()
    assert [(t.name, t.description, t.deferred) for t in lazy.list()] == [
        (t.name, t.description, t.deferred) for t in eager.list()
    ]
    assert [t.name for t in lazy.list(include_deferred=False)] == [
        t.name for t in eager.list(include_deferred=False)
    ]

    replaced = ToolService.default()
    mine = ToolDefinition(
        name="fetch_url", description="mine", parameters=EchoArgs, execute=echo.execute
    )
    with pytest.raises(ValueError, match="already registered"):
        replaced.register(mine)
    replaced.register(mine, replace=True)
    replaced.unregister("web_search")
    assert replaced.get("fetch_url") is mine  # not overwritten when web loads
    assert "web_search" not in replaced
    assert [t.name for t in replaced.list()] == [n for n in eager.names() if n != "web_search"]
    assert replaced.get("fetch_url") is mine
