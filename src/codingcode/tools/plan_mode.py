"""Plan mode the model knows about (issue 13): what it is told, what it is offered, and
``exit_plan_mode``, the tool with which it presents its plan for the user to approve.

In plan mode the approval pipeline lets only read-only work run (SPEC M3); here the model
is *told* so, and the tools that write are not offered to it at all: a tool whose declared
effects include writing or running code is left out, except a command tool (its read-only
commands run) and an MCP tool a trusted server marks read-only. ``exit_plan_mode`` is
offered in plan mode only; the user's "yes" runs it, and it switches the session out of
plan mode.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from codingcode.errors import InvalidArgumentsError
from codingcode.tools.definition import BUILTIN, ToolAnnotations, ToolDefinition, ToolExecCtx

EXIT_PLAN_MODE = "exit_plan_mode"
MAX_PLAN_CHARS = 20_000

PLAN_MODE_PROMPT = """Plan mode is on. The user wants a plan before any change: read, search \
and run read-only commands (ls, cat, grep, git status/log/diff ...) to understand the task, \
but do not change anything — writing files and commands that change things are refused in \
this mode, and the tools that write are not offered. When the plan is ready, call \
exit_plan_mode with the plan (short, concrete steps). The user approves it or not; once \
approved, plan mode ends and you may carry the plan out."""


def offered_in_plan(d: ToolDefinition) -> bool:
    """Whether plan mode offers this tool to the model."""
    if d.name == EXIT_PLAN_MODE:
        return True
    if d.origin.kind == "mcp":
        return d.annotations.read_only
    if d.effects is None:  # nothing declared: it could do anything
        return d.annotations.read_only
    if "command" in d.arg_roles.values():
        return True  # read-only commands run in plan mode
    return not ({"writes", "runs"} & set(d.effects))


def tools_for_mode(tools: list[ToolDefinition], mode: str) -> list[ToolDefinition]:
    """The tools offered in ``mode``: plan mode leaves out the writers; exit_plan_mode is
    offered in plan mode only."""
    if mode == "plan":
        return [d for d in tools if offered_in_plan(d)]
    return [d for d in tools if d.name != EXIT_PLAN_MODE]


def mode_prompt(mode: str) -> str:
    """What the model is told about its permission mode (empty: nothing to say)."""
    return PLAN_MODE_PROMPT if mode == "plan" else ""


class ExitPlanModeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    plan: str = Field(
        min_length=1,
        max_length=MAX_PLAN_CHARS,
        description="The plan to carry out, as short concrete steps (Markdown).",
    )


def make_exit_plan_mode_tool(
    leave: Callable[[], str], current_mode: Callable[[], str]
) -> ToolDefinition:
    """``exit_plan_mode`` for one session: ``leave()`` switches it out of plan mode and says
    to which mode; it runs only once the user approved the call (the approval pipeline asks
    about it in plan mode, where it is never auto-allowed)."""

    async def execute(args: ExitPlanModeArgs, ctx: ToolExecCtx) -> str:
        if current_mode() != "plan":
            raise InvalidArgumentsError(
                "Plan mode is not on; there is no plan to approve. Carry on with the task."
            )
        mode = leave()
        return (
            f"The user approved the plan. Plan mode is off (mode: {mode}); carry the plan out "
            "now, step by step."
        )

    return ToolDefinition(
        name=EXIT_PLAN_MODE,
        description=(
            "In plan mode: present your plan to the user for approval. If the user approves, "
            "plan mode ends and you can make the changes; if not, you get their answer."
        ),
        short_description="Present the plan and leave plan mode",
        parameters=ExitPlanModeArgs,
        execute=execute,
        annotations=ToolAnnotations(),
        arg_roles={"plan": "text"},
        # leaves plan mode: the user approves each plan, no rule does
        effects=frozenset({"mode"}),
        origin=BUILTIN,
    )
