"""Plan mode the model knows: the writers are not offered, the model is told, and
exit_plan_mode switches the mode once the user approved it."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode.approval.confirm import Answer, ScriptedConfirmer
from codingcode.errors import DeniedError, InvalidArgumentsError
from codingcode.runner import build_runner
from codingcode.tools import ToolService
from codingcode.tools.definition import ToolAnnotations, ToolDefinition, ToolOrigin
from codingcode.tools.plan_mode import (
    EXIT_PLAN_MODE,
    PLAN_MODE_PROMPT,
    make_exit_plan_mode_tool,
    mode_prompt,
    tools_for_mode,
)
from codingcode.workspace import Workspace

pytestmark = pytest.mark.anyio


def _names(tools: list[ToolDefinition]) -> set[str]:
    return {d.name for d in tools}


def test_plan_mode_offers_no_writers(service: ToolService) -> None:
    exit_tool = make_exit_plan_mode_tool(lambda: "default", lambda: "plan")
    tools = [*service.list(), exit_tool]
    planned = _names(tools_for_mode(tools, "plan"))
    assert {"read_file", "search_code", "search_files", "execute_command"} <= planned
    assert {"todo_write", EXIT_PLAN_MODE} <= planned
    assert not {"write_file", "edit_file"} & planned
    normal = _names(tools_for_mode(tools, "default"))
    assert {"write_file", "edit_file"} <= normal and EXIT_PLAN_MODE not in normal


def test_mcp_tools_in_plan_mode_only_when_marked_read_only(service: ToolService) -> None:
    base = service.get("read_file")

    def mcp(name: str, read_only: bool) -> ToolDefinition:
        return ToolDefinition(
            name=name,
            description="x",
            parameters=base.parameters,
            execute=base.execute,
            annotations=ToolAnnotations(read_only=read_only),
            origin=ToolOrigin(kind="mcp", server="s"),
        )

    kept = _names(tools_for_mode([mcp("s__look", True), mcp("s__change", False)], "plan"))
    assert kept == {"s__look"}


def test_the_model_is_told() -> None:
    assert mode_prompt("plan") == PLAN_MODE_PROMPT and "exit_plan_mode" in PLAN_MODE_PROMPT
    assert mode_prompt("default") == ""


async def test_exit_plan_mode_asks_the_user_and_switches(project: Path) -> None:
    state = {"mode": "plan"}

    def leave() -> str:
        state["mode"] = runner.mode = "default"
        return "default"

    service = ToolService([make_exit_plan_mode_tool(leave, lambda: state["mode"])])
    confirmer = ScriptedConfirmer([Answer.DENY, Answer.ALLOW, Answer.ALLOW])
    runner = build_runner(
        Workspace.load(project), mode="plan", service=service, confirmer=confirmer
    )
    with pytest.raises(DeniedError):
        await runner.run(EXIT_PLAN_MODE, {"plan": "1. edit a.py"})
    assert state["mode"] == "plan"
    request = confirmer.requests[0]
    assert request.suggested_rule is None  # each plan is approved on its own
    out = await runner.run(EXIT_PLAN_MODE, {"plan": "1. edit a.py"})
    assert state["mode"] == "default" and "Plan mode is off" in out
    with pytest.raises(InvalidArgumentsError):  # out of plan mode: there is nothing to approve
        await runner.run(EXIT_PLAN_MODE, {"plan": "again"})
