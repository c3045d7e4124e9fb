"""One agent session: its history, its tools, and the loop that runs a prompt to an answer.

Each model response is streamed; the tool calls it asks for run at once, in one task group
(structured concurrency), every one through the session's :class:`ToolRunner` — the
approval pipeline, the sandbox and the audit log sit there. Results and errors go back to
the model, and the loop ends when the model answers without tool calls or at the turn limit.

Cancellation (Ctrl-C) cancels the running prompt, not the session: the current response
stream is dropped, running calls see their signal (processes are killed), and the session
is ready for the next prompt.
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from codingcode.agent.model import ModelSpec, parse_model
from codingcode.agent.profiles import AgentSpec, load_agents
from codingcode.agent.providers import ModelProvider, make_provider
from codingcode.agent.transcript import (
    AgentEvent,
    AgentMessage,
    AgentTextDelta,
    Message,
    ModelRequestStarted,
    TextDelta,
    TodosChanged,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolResult,
    TurnComplete,
    Usage,
)
from codingcode.approval.confirm import Confirmer
from codingcode.cancel import CancelSignal
from codingcode.errors import AgentError, ErrorKind
from codingcode.runner import ToolRunner, build_runner
from codingcode.tools.definition import SessionState
from codingcode.tools.resolver import (
    DISPATCH_AGENT_NAME,
    SessionToolResolver,
    create_session_tool_resolver,
)
from codingcode.tools.search import TOOL_SEARCH_NAME
from codingcode.tools.service import ToolService

DEFAULT_MAX_TURNS = 50
SUB_AGENT_MAX_TURNS = 30
#: Sub-agents may dispatch sub-agents, down to this depth (the main session is depth 0).
MAX_DEPTH = 2
#: After Ctrl-C, how long running calls get to stop on their signal before being cancelled.
CANCEL_GRACE_S = 3.0

EventSink = Callable[[AgentEvent], None]

BASE_PROMPT = """You are codingcode, a coding agent working in the project at {project}.
Use the tools to read, search, change and run the code; prefer small, verifiable steps.
Tool calls that can run independently may be requested together; they run in parallel.
Some calls need the user's approval and may be denied: then adapt, do not insist.
When the task is done, answer with a short summary of what you did and found."""


def first_error(group: BaseExceptionGroup[Any]) -> BaseException:
    """The exception a task group failed with (a KeyboardInterrupt or the first error)."""
    leaves: list[BaseException] = []

    def walk(g: BaseExceptionGroup[Any]) -> None:
        for e in g.exceptions:
            if isinstance(e, BaseExceptionGroup):
                walk(e)
            else:
                leaves.append(e)

    walk(group)
    for e in leaves:
        if isinstance(e, KeyboardInterrupt):
            return e
    return leaves[0] if leaves else group


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


@dataclass
class Outcome:
    """How a prompt ended."""

    text: str
    #: "answered", "turn_limit" or "cancelled".
    status: str
    turns: int
    usage: Usage = field(default_factory=Usage)

    @property
    def ok(self) -> bool:
        return self.status == "answered"


def _ignore(event: AgentEvent) -> None:
    pass


class AgentSession:
    """A conversation with one model over one set of tools."""

    def __init__(
        self,
        *,
        project: Path,
        provider: ModelProvider,
        model: ModelSpec,
        service: ToolService,
        runner: ToolRunner,
        resolver: SessionToolResolver,
        system_prompt: str,
        session_id: str,
        agents: dict[str, AgentSpec],
        sink: EventSink = _ignore,
        depth: int = 0,
        max_turns: int = DEFAULT_MAX_TURNS,
        mode: str = "default",
        confirmer: Confirmer | None = None,
    ) -> None:
        self.project = project
        self.provider = provider
        self.model = model
        self.service = service
        self.runner = runner
        self.resolver = resolver
        self.system_prompt = system_prompt
        self.session_id = session_id
        self.agents = agents
        self.sink = sink
        self.depth = depth
        self.max_turns = max_turns
        self.mode = mode
        self.confirmer = confirmer
        self.history: list[Message] = []
        self.state = SessionState()
        self.turn = 0
        self._children = 0
        self._signal: CancelSignal | None = None
        self._owned_providers: list[ModelProvider] = []

    # -- control ---------------------------------------------------------------------
    def cancel(self, reason: str = "cancelled by the user") -> None:
        """Cancel the prompt that is running (if any); the session stays usable."""
        if self._signal is not None:
            self._signal.set(reason)

    async def aclose(self) -> None:
        if self.state.background is not None:
            # Background processes die with their session (README: Background commands).
            with anyio.CancelScope(shield=True):
                ended = await anyio.to_thread.run_sync(self.state.background.close)
            for pid_id in ended:
                proc = self.state.background.processes[pid_id]
                print(
                    f"codingcode: ended background process {pid_id} ({proc.command[:80]}) "
                    "with the session.",
                    file=sys.stderr,
                )
        for p in self._owned_providers:
            await p.aclose()

    def tools(self) -> list[Any]:
        from codingcode.tools.plan_mode import tools_for_mode

        return tools_for_mode(self.resolver.tools(), self.mode)  # plan mode: no writers

    def system(self) -> str:
        from codingcode.tools.plan_mode import mode_prompt

        extra = self.resolver.deferred_summary()
        prompt = self.system_prompt + (f"\n\n{extra}" if extra else "")
        told = mode_prompt(self.mode)  # the model knows what plan mode means
        return prompt + (f"\n\n{told}" if told else "")

    # -- the loop ----------------------------------------------------------------------
    async def send(self, prompt: str, *, signal: CancelSignal | None = None) -> Outcome:
        """Run ``prompt`` to the model's answer (or the turn limit, or cancellation)."""
        signal = signal or CancelSignal()
        self._signal = signal
        self.history.append(Message("user", prompt))
        usage = Usage()
        try:
            for turns in range(1, self.max_turns + 1):
                self.turn += 1
                reply = await self._respond(signal)
                if reply is None:
                    self.history.append(Message("assistant", "(cancelled by the user)"))
                    return Outcome("Cancelled.", "cancelled", turns, usage)
                usage.input_tokens += reply.usage.input_tokens
                usage.output_tokens += reply.usage.output_tokens
                message = reply.message
                self.history.append(message)
                self.sink(AgentMessage(self.session_id, message))
                if not message.tool_calls:
                    return Outcome(message.text, "answered", turns, usage)
                results = await self._run_calls(message.tool_calls, signal)
                self.history.append(Message("tool", results=results))
                if signal.is_set():
                    return Outcome("Cancelled.", "cancelled", turns, usage)
            return Outcome(
                f"Stopped after {self.max_turns} model turns without a final answer.",
                "turn_limit",
                self.max_turns,
                usage,
            )
        finally:
            self._signal = None

    async def _respond(self, signal: CancelSignal) -> TurnComplete | None:
        """Stream one model response; None when cancelled."""
        done: list[TurnComplete] = []
        tools = self.tools()
        system = self.system()

        async def stream() -> None:
            async for event in self.provider.stream(system, self.history, tools):
                if isinstance(event, TextDelta):
                    self.sink(AgentTextDelta(self.session_id, event.text))
                else:
                    done.append(event)

        if signal.is_set():
            return None
        self.sink(ModelRequestStarted(self.session_id))
        try:
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    await signal.wait()
                    tg.cancel_scope.cancel()

                async def run() -> None:
                    await stream()
                    tg.cancel_scope.cancel()

                tg.start_soon(watch)
                tg.start_soon(run)
        except BaseExceptionGroup as group:
            raise first_error(group) from None
        if signal.is_set() or not done:
            return None
        return done[-1]

    async def _run_calls(self, calls: list[ToolCall], signal: CancelSignal) -> list[ToolResult]:
        results: list[ToolResult | None] = [None] * len(calls)
        try:
            await self._run_group(calls, signal, results)
        except BaseExceptionGroup as group:
            raise first_error(group) from None
        final: list[ToolResult] = []
        for call, result in zip(calls, results, strict=True):
            if result is None:
                why = f" ({signal.reason})" if signal.reason else ""
                result = ToolResult(
                    call.id, call.name, f"{call.name} was cancelled{why}.", True, "cancelled"
                )
                self.sink(ToolCallFinished(self.session_id, call, result))
            final.append(result)
        return final

    async def _run_group(
        self, calls: list[ToolCall], signal: CancelSignal, results: list[ToolResult | None]
    ) -> None:
        async with anyio.create_task_group() as outer:

            async def hard_stop() -> None:
                # Calls stop on the signal; one that does not is cancelled after a grace.
                await signal.wait()
                await anyio.sleep(CANCEL_GRACE_S)
                calls_group.cancel_scope.cancel()

            outer.start_soon(hard_stop)
            async with anyio.create_task_group() as calls_group:
                for i, call in enumerate(calls):
                    calls_group.start_soon(self._run_one, i, call, signal, results)
            outer.cancel_scope.cancel()

    async def _run_one(
        self, index: int, call: ToolCall, signal: CancelSignal, results: list[ToolResult | None]
    ) -> None:
        self.sink(ToolCallStarted(self.session_id, call))
        try:
            if call.arguments is None:
                raise AgentError(
                    f"The arguments of this {call.name} call are not a JSON object: "
                    f"{call.raw_arguments[:200]!r}. Send them as a JSON object.",
                    kind=ErrorKind.INVALID_ARGUMENTS,
                )
            self.resolver.ensure_callable(call.name)
            ctx = self.runner.context(signal=signal, state=self.state, turn_id=self.turn)
            output = await self.runner.run(call.name, call.arguments, ctx)
            result = ToolResult(call.id, call.name, output)
        except AgentError as exc:
            message = exc.message
            if signal.is_set() and signal.reason.startswith("interrupted"):
                message += f"\n(The user {signal.reason}.)"  # tell the model why it stopped
            result = ToolResult(call.id, call.name, message, True, exc.kind.value)
        results[index] = result
        self.sink(ToolCallFinished(self.session_id, call, result))
        if call.name == "todo_write" and not result.is_error:
            self.sink(TodosChanged(self.session_id, list(self.state.todos)))

    # -- sub-agents ----------------------------------------------------------------------
    def spawn(self, spec: AgentSpec) -> AgentSession:
        """A child session for ``spec``: its own history, tools filtered by its profile,
        calls through the same pipeline under the session id ``parent/child``."""
        self._children += 1
        child_id = f"{self.session_id}/{spec.name}-{self._children}"
        if spec.model:
            model = parse_model(spec.model, source=spec.origin, scope=spec.scope)
            provider = make_provider(model)
            self._owned_providers.append(provider)
        else:
            model, provider = self.model, self.provider
        inherited = [
            d for d in self.service.list() if d.name not in (TOOL_SEARCH_NAME, DISPATCH_AGENT_NAME)
        ]
        return open_session(
            self.project,
            model=model,
            provider=provider,
            service=ToolService(inherited),
            agent=spec,
            mode=self.mode,
            sink=self.sink,
            session_id=child_id,
            depth=self.depth + 1,
            agents=self.agents,
            max_turns=SUB_AGENT_MAX_TURNS,
            confirmer=self.confirmer,
        )


def open_session(
    project: Path,
    *,
    model: ModelSpec,
    provider: ModelProvider | None = None,
    service: ToolService | None = None,
    agent: AgentSpec | None = None,
    mode: str | None = None,
    sink: EventSink = _ignore,
    session_id: str | None = None,
    depth: int = 0,
    agents: dict[str, AgentSpec] | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    confirmer: Confirmer | None = None,
) -> AgentSession:
    """A ready session: the service's tools (C1: a registered tool is offered), the
    session's resolver, a runner for the project, and the model's provider."""
    from codingcode.agent.dispatch import make_dispatch_tool

    project = project.resolve()
    service = service if service is not None else ToolService.default()
    agents = agents if agents is not None else load_agents(project)
    session_id = session_id or new_session_id()
    owned = provider is None
    provider = provider or make_provider(model)
    # confirmer=None: headless, the pipeline turns an ask into a deny saying how to allow it.
    runner = build_runner(
        project,
        mode=mode,
        session_id=session_id,
        service=service,
        confirmer=confirmer,
        checkpoints=True,
    )
    prompt = BASE_PROMPT.format(project=project)
    if agent is not None:
        prompt = f"{agent.system_prompt}\n\nThe project is at {project}."
    session = AgentSession(
        project=project,
        provider=provider,
        model=model,
        service=service,
        runner=runner,
        resolver=None,  # type: ignore[arg-type]  # set just below: the tool needs the session
        system_prompt=prompt,
        session_id=session_id,
        agents=agents,
        sink=sink,
        depth=depth,
        max_turns=max_turns,
        mode=runner.mode,  # the effective one (None: the settings' defaultMode)
        confirmer=confirmer,
    )
    if owned:
        session._owned_providers.append(provider)
    dispatch = make_dispatch_tool(session) if depth < MAX_DEPTH else None
    session.resolver = create_session_tool_resolver(
        service,
        profile=agent.profile() if agent is not None else None,
        dispatch_agent=dispatch,
    )
    # One set: what tool_search loads and what a tool makes relevant (command_output).
    session.resolver.loaded = session.state.offered
    return session
