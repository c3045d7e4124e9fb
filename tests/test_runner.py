"""ToolRunner: plan mode and read-only MCP tools; the sandbox reaches every call."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from codingcode.runner import build_runner
from codingcode.tools import ToolAnnotations, ToolDefinition, ToolExecCtx, ToolOrigin, ToolService
from codingcode.workspace import Workspace

pytestmark = pytest.mark.anyio


class NoArgs(BaseModel):
    pass


async def _noop(args: NoArgs, ctx: ToolExecCtx) -> str:
    return "ran"


def mcp_tool(name: str, read_only: bool) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description="an MCP tool",
        parameters=NoArgs,
        execute=_noop,
        annotations=ToolAnnotations(read_only=read_only),
        # The origin is a field, not the ":" in the name.
        origin=ToolOrigin("mcp", name.split(":")[0]) if ":" in name else ToolOrigin(),
    )


@pytest.mark.parametrize(
    ("name", "read_only", "layer"),
    [
        ("srv:lookup", True, "UserConfirmation"),  # kept by plan mode, still needs approval
        ("srv:delete", False, "PermissionMode"),  # plan mode refuses it
        ("local_tool", True, "PermissionMode"),  # only MCP tools carry the hint; built-ins go by A2
    ],
)
async def test_plan_mode_keeps_only_trusted_read_only_mcp_tools(
    project: Path, name: str, read_only: bool, layer: str
) -> None:
    service = ToolService([mcp_tool(name, read_only)])
    runner = build_runner(Workspace.load(project), mode="plan", service=service, audit=False)
    decision = await runner.decide(name, {})
    assert decision.layer == layer, decision
    if layer == "PermissionMode":
        assert decision.decision == "deny" and "plan mode is on" in decision.reason


async def test_a_callers_own_context_still_gets_the_runners_sandbox(project: Path) -> None:
    seen: list[object] = []

    async def record(args: NoArgs, ctx: ToolExecCtx) -> str:
        seen.append(ctx.launcher)
        return "ok"

    service = ToolService(
        [ToolDefinition(name="probe", description="d", parameters=NoArgs, execute=record)]
    )
    runner = build_runner(Workspace.load(project), mode="bypass", service=service, audit=False)
    assert runner.launcher is not None
    await runner.run("probe", {}, ToolExecCtx(project_path=project))
    assert seen == [runner.launcher]
