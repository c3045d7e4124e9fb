from __future__ import annotations

import pytest

from codingcode.errors import AgentError
from codingcode.tools import ToolExecCtx, ToolService
from codingcode.tools.builtin.state import MAX_TODO_ITEMS

pytestmark = pytest.mark.anyio


async def test_replaces_the_list_and_renders_it(service: ToolService, ctx: ToolExecCtx) -> None:
    plan = [
        {"step": "read the code", "status": "completed"},
        {"step": "fix the bug", "status": "in_progress"},
        {"step": "run the tests", "status": "pending"},
    ]
    out = await service.call("todo_write", {"plan": plan}, ctx)
    assert out.splitlines() == [
        "Task list (1/3 completed):",
        "[x] read the code",
        "[~] fix the bug",
        "[ ] run the tests",
    ]
    assert ctx.state.todos == plan
    assert await service.call("todo_write", {"plan": []}, ctx) == "Task list cleared."
    assert ctx.state.todos == []


async def test_bounds_and_statuses(service: ToolService, ctx: ToolExecCtx) -> None:
    too_many = [{"step": f"s{i}", "status": "pending"} for i in range(MAX_TODO_ITEMS + 1)]
    with pytest.raises(AgentError, match="at most 50 items"):
        await service.call("todo_write", {"plan": too_many}, ctx)
    with pytest.raises(AgentError, match=r"plan\.0\.status"):
        await service.call("todo_write", {"plan": [{"step": "x", "status": "done"}]}, ctx)
