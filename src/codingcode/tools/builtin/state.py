"""todo_write: the agent's task list for the session (SPEC T9)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from codingcode.tools.definition import BUILTIN, ToolAnnotations, ToolDefinition, ToolExecCtx

#: Enough for any plan worth following; a longer list is a sign the task needs splitting.
MAX_TODO_ITEMS = 50
MAX_STEP_CHARS = 500

_MARK = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


class TodoItem(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")
    step: str = Field(min_length=1, max_length=MAX_STEP_CHARS, description="What to do.")
    status: Literal["pending", "in_progress", "completed"] = Field(description="Where it stands.")


class TodoWriteArgs(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")
    plan: list[TodoItem] = Field(
        max_length=MAX_TODO_ITEMS,
        description=f"The whole task list (replaces the previous one; at most {MAX_TODO_ITEMS} steps).",
    )


def render_todos(todos: list[dict[str, str]]) -> str:
    if not todos:
        return "Task list cleared."
    done = sum(t["status"] == "completed" for t in todos)
    lines = [f"Task list ({done}/{len(todos)} completed):"]
    lines += [f"{_MARK[t['status']]} {t['step']}" for t in todos]
    return "\n".join(lines)


async def todo_write(args: TodoWriteArgs, ctx: ToolExecCtx) -> str:
    ctx.state.todos = [item.model_dump() for item in args.plan]
    return render_todos(ctx.state.todos)


def state_tools() -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name="todo_write",
            description=(
                "Replace the session's task list with `plan`: each step with status pending, "
                f"in_progress or completed (at most {MAX_TODO_ITEMS} steps). Returns the list."
            ),
            short_description="Replace the session's task list",
            parameters=TodoWriteArgs,
            execute=todo_write,
            annotations=ToolAnnotations(idempotent=True),
            effects=frozenset(),
            origin=BUILTIN,
        )
    ]
