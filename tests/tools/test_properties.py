"""Random arguments thrown at every built-in tool: only AgentError may come out."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codingcode.errors import AgentError
from codingcode.tools import ToolExecCtx, ToolService

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)

# Field names of the real tools, so many draws get past the first check and exercise the tools.
FIELDS = ["path", "offset", "limit", "content", "old_string", "new_string", "pattern", "glob",
          "max_results", "command", "timeout_ms", "cwd", "plan", "step", "status", "url",
          "max_length", "query"]  # fmt: skip
safe_values = json_values | st.sampled_from(
    ["a.txt", "sub", "../x", "", ".", "*", "[", "(", "x" * 300]
)
arguments = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=6), safe_values, max_size=4)

# Commands stay harmless: the property is about argument handling, not about shell behaviour.
# The web tools see no URL or provider they could reach (no network is needed).
TOOLS = ["read_file", "write_file", "edit_file", "search_code", "search_files", "todo_write",
         "fetch_url", "web_search"]  # fmt: skip


@pytest.fixture(scope="module")
def sandbox_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("prop")
    (root / "a.txt").write_text("alpha\nbeta\n")
    (root / "sub").mkdir()
    return root


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=st.sampled_from(TOOLS), args=arguments | json_values)
def test_random_arguments_never_raise_anything_but_agent_error(
    sandbox_project: Path, name: str, args: Any
) -> None:
    service = ToolService.default()
    ctx = ToolExecCtx(project_path=sandbox_project)

    async def call() -> None:
        try:
            result = await service.call(name, args, ctx)
        except AgentError as exc:
            assert exc.message
        else:
            assert isinstance(result, str)

    anyio.run(call)


@settings(max_examples=30, deadline=None)
@given(args=arguments)
def test_execute_command_argument_validation(
    args: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    args = {**args, "command": "true"} if isinstance(args.get("command"), str) else args
    service = ToolService.default()
    ctx = ToolExecCtx(project_path=tmp_path_factory.getbasetemp())

    async def call() -> None:
        with contextlib.suppress(AgentError):
            await service.call("execute_command", args, ctx)

    anyio.run(call)
