"""dispatch_agent (SPEC T11): delegate a task to a sub-agent and return its final answer.

The tool is built per session (it needs the session to spawn children from), which is why
it lives in ``agent`` and not in ``tools``: the tools package never imports the agent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, ConfigDict, Field

from codingcode.agent.transcript import SubAgentFinished, SubAgentStarted
from codingcode.errors import CancelledError, NotFoundError, ToolFailureError
from codingcode.tools.definition import BUILTIN, ToolAnnotations, ToolDefinition, ToolExecCtx
from codingcode.tools.resolver import DISPATCH_AGENT_NAME

if TYPE_CHECKING:
    from codingcode.agent.profiles import AgentSpec
    from codingcode.agent.transcript import AgentEvent
    from codingcode.cancel import CancelSignal


class _Answer(Protocol):
    @property
    def text(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def ok(self) -> bool: ...


class _Child(Protocol):
    @property
    def session_id(self) -> str: ...
    async def send(self, prompt: str, *, signal: CancelSignal | None = None) -> _Answer: ...


class Dispatcher(Protocol):
    """What the tool needs of the session it dispatches from (an ``AgentSession``); a
    protocol, so that this module never imports the session that imports it."""

    @property
    def agents(self) -> Mapping[str, AgentSpec]: ...
    @property
    def sink(self) -> Callable[[AgentEvent], None]: ...
    def spawn(self, spec: AgentSpec) -> _Child: ...


class DispatchAgentArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent: str = Field(min_length=1, description="The sub-agent's name (see the list above).")
    prompt: str = Field(
        min_length=1,
        description="The whole task: the sub-agent sees nothing else of this conversation.",
    )


def make_dispatch_tool(session: Dispatcher) -> ToolDefinition:
    listing = "\n".join(f"- {a.name}: {a.description}" for a in session.agents.values())

    async def dispatch_agent(args: DispatchAgentArgs, ctx: ToolExecCtx) -> str:
        spec = session.agents.get(args.agent)
        if spec is None:
            known = ", ".join(sorted(session.agents))
            raise NotFoundError(f"Unknown agent {args.agent!r}. Known agents: {known}.")
        child = session.spawn(spec)
        session.sink(SubAgentStarted(child.session_id, spec.name, args.prompt))
        outcome = None
        try:
            outcome = await child.send(args.prompt, signal=ctx.signal)
        finally:
            session.sink(
                SubAgentFinished(
                    child.session_id,
                    spec.name,
                    outcome.text if outcome else "",
                    bool(outcome and outcome.ok),
                )
            )
        if outcome.status == "cancelled":
            raise CancelledError(f"The {spec.name} sub-agent was cancelled.")
        if not outcome.ok:
            raise ToolFailureError(f"The {spec.name} sub-agent did not finish: {outcome.text}")
        return outcome.text or "(the sub-agent gave an empty answer)"

    return ToolDefinition(
        name=DISPATCH_AGENT_NAME,
        description=(
            "Delegate a self-contained task to a sub-agent, which works with its own tools and "
            "context and returns only its final answer. Available agents:\n" + listing
        ),
        short_description="Delegate a task to a sub-agent",
        parameters=DispatchAgentArgs,
        execute=dispatch_agent,
        annotations=ToolAnnotations(read_only=False, open_world=True),
        arg_roles={"prompt": "text"},
        # Its own calls are approved one by one; the dispatch itself touches nothing.
        effects=frozenset(),
        origin=BUILTIN,
    )
