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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from codingcode.agent.context.settings import AgentSettings, load_agent_settings
from codingcode.agent.context.spill import spill_output
from codingcode.agent.context.tokens import context_window, estimate_message, estimate_text
from codingcode.agent.model import ContextLengthExceeded, ModelError, ModelSpec, parse_model
from codingcode.agent.profiles import AgentSpec, load_agents
from codingcode.agent.providers import ModelProvider, make_provider
from codingcode.agent.providers.base import retry_notice
from codingcode.agent.sessions.store import LoadedSession, SessionStore
from codingcode.agent.transcript import (
    AgentEvent,
    AgentMessage,
    AgentTextDelta,
    Compacted,
    Message,
    ModelRequestStarted,
    ModelRetry,
    TextDelta,
    TodosChanged,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolDecision,
    ToolProgress,
    ToolResult,
    TurnComplete,
    Usage,
    UsageReported,
)
from codingcode.approval.confirm import Confirmer
from codingcode.cancel import first_error

if TYPE_CHECKING:
    from codingcode.approval.pipeline import Decision
    from codingcode.approval.rules import Rule
    from codingcode.workspace import Workspace
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

#: The system prompt of a ``prompt`` hook's model call (Claude Code's answer shape).
HOOK_SYSTEM = (
    "You evaluate one event of a coding agent for a hook. Answer with one JSON object and "
    'nothing else: {"ok": true} to let it go on, or {"ok": false, "reason": "why"} to stop it.'
)

DEFAULT_MAX_TURNS = 50
#: Stop hooks may keep the agent going at most this many times in a row per prompt.
MAX_STOP_BLOCKS = 3
SUB_AGENT_MAX_TURNS = 30
#: Sub-agents may dispatch sub-agents, down to this depth (the main session is depth 0).
MAX_DEPTH = 2
#: After Ctrl-C, how long running calls get to stop on their signal before being cancelled.
CANCEL_GRACE_S = 3.0
#: A running command's progress goes to the front end at most this often.
PROGRESS_EVERY_S = 0.25
#: How many times one request is compacted and retried when the endpoint says it is too long.
OVERFLOW_RETRIES = 2
#: Without a window named in the refusal, the window is taken as this share of what was sent.
OVERFLOW_SHRINK = 0.7

EventSink = Callable[[AgentEvent], None]


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


@dataclass
class Outcome:
    """How a prompt ended."""

    text: str
    #: "answered", "turn_limit", "cancelled", "blocked" (a hook refused the prompt) or
    #: "stopped" (a hook answered ``continue: false``; ``text`` says which and why).
    status: str
    #: Model responses this prompt took (what ``max_turns`` limits: Claude Code's "agentic
    #: turns"; the prompt itself is one turn of the session).
    responses: int
    usage: Usage = field(default_factory=Usage)
    #: The model answered right after one of its calls was denied (the denial stopped it).
    stopped_by_denial: bool = False

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
        store: SessionStore | None = None,
        settings: AgentSettings | None = None,
        spill_dir: Path | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.service = service
        self.runner = runner
        bus = getattr(runner, "hook_bus", None)
        if bus is not None and bus.ask_model is None:  # `prompt` hooks ask this model
            bus.ask_model = self.ask_hook_model
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
        #: The number of the latest prompt (a turn is one user prompt, with every model
        #: response and call it led to); checkpoints and the audit file calls under it.
        self.turn = 0
        #: (turn, history length before its prompt) of each prompt still in the conversation.
        self.prompt_marks: list[tuple[int, int]] = []
        #: The session that dispatched this one (a sub-agent's), else None.
        self.parent: AgentSession | None = None
        self._children = 0
        self._signal: CancelSignal | None = None
        self._owned_providers: list[ModelProvider] = []
        self.store = store
        self.settings = settings or AgentSettings()
        self.spill_dir = spill_dir
        self.window = context_window(model.model, self.settings.context_window)
        #: Tokens of the whole session (every response), from the provider or estimated.
        self.usage = Usage()
        #: (history length, tokens it took) from the provider's last figures.
        self._measured: tuple[int, int] | None = None
        self._estimates: dict[int, int] = {}
        self._counted: tuple[int, int] = (0, 0)
        #: Files the model wrote or spilled outputs saved, for /diff and the user.
        self.spilled: list[Path] = []
        #: Extra rules this session was opened with (--allowed-tools / --disallowed-tools).
        self.extra_rules: list[Rule] = []
        #: Lines about skills that could not be loaded (the front end shows them).
        self.skill_notes: list[str] = []
        #: Every skill loaded (``codingcode.skills.Skill``): ``/name`` and ``/skills``.
        self.skills: list[Any] = []
        #: The front end's slash commands (``codingcode.custom_commands.commands_of`` loads them on
        #: first use; others, e.g. MCP prompts, register there too).
        self.commands: Any = None
        #: The source the next SessionStart hooks get (startup, resume, clear, compact),
        #: None once they ran for it.
        self.hook_source: str | None = "startup"
        self._hooks_started = False

    # -- control ---------------------------------------------------------------------
    def cancel(self, reason: str = "cancelled by the user") -> None:
        """Cancel the prompt that is running (if any); the session stays usable."""
        if self._signal is not None:
            self._signal.set(reason)

    async def aclose(self) -> None:
        if self.runner.lifecycle is not None and self.depth == 0 and self._hooks_started:
            with anyio.CancelScope(shield=True):
                await self.runner.lifecycle.fire(
                    "SessionEnd", {"reason": "other"}, session_id=self.session_id
                )
        if self.state.background is not None:
            # Background processes die with their session (docs/tools.md: Background commands).
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
        if self.store is not None:
            self.store.close()
        if self.runner.checkpoints is not None:
            self.runner.checkpoints.store.close()  # its inotify watches

    def tools(self) -> list[Any]:
        from codingcode.tools.plan_mode import tools_for_mode

        return tools_for_mode(self.resolver.tools(), self.mode)  # plan mode: no writers

    def system(self) -> str:
        from codingcode.tools.plan_mode import mode_prompt

        extra = self.resolver.deferred_summary()
        prompt = self.system_prompt + (f"\n\n{extra}" if extra else "")
        told = mode_prompt(self.mode)  # the model knows what plan mode means
        prompt += f"\n\n{told}" if told else ""
        if self.state.background is not None:
            # The model is reminded, every request, which background commands still run.
            running = self.state.background.reminder()
            prompt += f"\n\n{running}" if running else ""
        return prompt

    # -- the loop ----------------------------------------------------------------------
    # -- recording -----------------------------------------------------------------------
    def _add(self, message: Message) -> None:
        self.history.append(message)
        if self.store is not None:
            self.store.message(message)

    def _estimate(self, m: Message) -> int:
        key = id(m)
        n = self._estimates.get(key)
        if n is None:
            n = self._estimates[key] = estimate_message(m)
        return n

    def context_tokens(self) -> int:
        """Tokens the next request would take: the provider's last figure plus an estimate
        of what was added since; an estimate of everything when there is no figure."""
        if self._measured is not None and self._measured[0] <= len(self.history):
            count, tokens = self._measured
            return tokens + sum(self._estimate(m) for m in self.history[count:])
        fixed = estimate_text(self.system()) + sum(
            estimate_text(t.description) + 40 for t in self.tools()
        )
        # A running total over the history (it only grows between compactions).
        count, total = self._counted
        if count > len(self.history):
            count, total = 0, 0
        total += sum(self._estimate(m) for m in self.history[count:])
        self._counted = (len(self.history), total)
        return fixed + total

    async def ask_hook_model(self, prompt: str) -> str:
        """One model call for a ``prompt`` hook: no tools, no history; the answer's text."""
        done: list[TurnComplete] = []
        async for event in self.provider.stream(HOOK_SYSTEM, [Message("user", prompt)], []):
            if isinstance(event, TurnComplete):
                done.append(event)
        return done[-1].message.text if done else ""

    def _account(self, reply: TurnComplete) -> None:
        usage = reply.usage
        estimated = usage.input_tokens == 0 and usage.output_tokens == 0
        if estimated:
            usage = Usage(self.context_tokens(), estimate_message(reply.message))
        self.usage.add(usage)
        if not estimated:
            self._measured = (len(self.history) + 1, usage.input_tokens + usage.output_tokens)
        if self.store is not None:
            self.store.usage(usage, estimated=estimated)
        self.sink(
            UsageReported(
                self.session_id,
                usage.input_tokens,
                usage.output_tokens,
                estimated,
                self.usage.input_tokens,
                self.usage.output_tokens,
                usage.input_tokens + usage.output_tokens,
                self.window,
            )
        )

    def clear_state(self, *, keep_history: bool = False) -> None:
        """Drop what was measured about the conversation (after it or the model changed)."""
        if not keep_history:
            self.history = []
            self.prompt_marks = []
            self.state.todos = []
        self._measured = None
        self._estimates.clear()
        self._counted = (0, 0)

    def clear(self) -> None:
        """Forget the conversation (``/clear``); the todo list goes too."""
        self.clear_state()
        self.hook_source = "clear"
        if self.store is not None:
            self.store.append({"type": "clear", "time": time.time()}, sync=True)

    def rewind_prompts(self, back: int) -> tuple[int, int] | None:
        """Drop the conversation from the prompt ``back`` prompts ago on (1: the latest);
        returns (that prompt's turn, messages dropped), or None when the conversation does
        not go back that far (compacted or cleared since)."""
        if back < 1 or back > len(self.prompt_marks):
            return None
        turn, keep = self.prompt_marks[-back]
        dropped = len(self.history) - keep
        self.history = self.history[:keep]
        self.prompt_marks = self.prompt_marks[: len(self.prompt_marks) - back]
        self.clear_state(keep_history=True)
        if self.store is not None:
            self.store.append({"type": "rewind", "keep": keep, "time": time.time()}, sync=True)
        return turn, dropped

    def add_message(self, message: Message) -> None:
        """Add a message to the conversation (and the session file), e.g. the output of a
        command the user ran; the model sees it with the next prompt."""
        self._add(message)

    def fit_user_output(self, output: str) -> str:
        """Output the user brought in, spilled like a tool output when it is long."""
        if self.spill_dir is None:
            return output
        shown, _ = spill_output(
            output,
            limit=self.settings.tool_output_limit,
            directory=self.spill_dir,
            call_id=f"user-{int(time.time() * 1000)}",
            tool="command",
        )
        return shown

    async def compact(self, focus: str | None = None, *, reason: str = "manual") -> bool:
        """Summarise the older part of the conversation (see ``agent.context.compaction``);
        False when there is nothing older to summarise."""
        from codingcode.agent.context.compaction import compact

        before = self.context_tokens()
        if self.runner.lifecycle is not None:
            await self.runner.lifecycle.fire(
                "PreCompact",
                {
                    "trigger": "manual" if reason == "manual" else "auto",
                    "custom_instructions": focus or "",
                },
                session_id=self.session_id,
            )
        result = await compact(
            self.history,
            provider=self.provider,
            window=self.window,
            todos=list(self.state.todos),
            focus=focus,
        )
        if result is None:
            return False
        self.history = result.history
        self.prompt_marks = []  # the prompts before the summary are no longer messages
        self._measured = None
        self._estimates.clear()
        self._counted = (0, 0)
        if self.store is not None:
            self.store.compaction(result.summary, result.kept, reason)
        self.hook_source = "compact"
        self.sink(
            Compacted(self.session_id, reason, before, self.context_tokens(), result.summarized)
        )
        return True

    # -- the loop ----------------------------------------------------------------------
    async def send(self, prompt: str, *, signal: CancelSignal | None = None) -> Outcome:
        """Run ``prompt`` to the model's answer (or the turn limit, or cancellation)."""
        signal = signal or CancelSignal()
        self._signal = signal
        usage = Usage()
        hooks = self.runner.lifecycle
        from codingcode.agent.hook_calls import take_stop

        take_stop(self)  # a stop from outside a prompt (a manual /compact) is not this one's
        if hooks is not None:  # SessionStart / UserPromptSubmit hooks (issue 17)
            from codingcode.agent.hook_calls import before_prompt

            prompt, blocked = await before_prompt(self, hooks, prompt)
            if blocked is not None:
                take_stop(self)
                self._signal = None
                self.state.limits.clear()  # a command's limit ends with its prompt
                return Outcome(blocked, "blocked", 0, usage)
        # A turn is this prompt: every response and call it leads to is filed under it.
        self.turn += 1
        self.prompt_marks.append((self.turn, len(self.history)))
        if self.store is not None:
            self.store.prompt(self.turn, len(self.history))
        self._add(Message("user", prompt))
        try:
            outcome = await self._run_turn(signal, usage)
        except AgentError as exc:
            if self.store is not None and self.depth == 0:
                self.store.outcome(self.turn, "failed", exc.message)
            raise
        except BaseException:
            if self.store is not None and self.depth == 0:
                self.store.outcome(self.turn, "cancelled")
            raise
        if self.store is not None and self.depth == 0:
            self.store.outcome(self.turn, outcome.status)
        return outcome

    async def _run_turn(self, signal: CancelSignal, usage: Usage) -> Outcome:
        """The model's responses and their calls, to the answer (or a stop)."""
        hooks = self.runner.lifecycle
        from codingcode.agent.hook_calls import take_stop

        denied = False
        stop_blocks = 0
        try:
            for responses in range(1, self.max_turns + 1):
                reply = await self._respond_fitting(signal)
                if reply is None and (stop := take_stop(self)) is not None:
                    self._add(Message("assistant", f"({stop})"))  # a PreCompact hook
                    return Outcome(stop, "stopped", responses, usage)
                if reply is None:
                    self._add(Message("assistant", "(cancelled by the user)"))
                    return Outcome("Cancelled.", "cancelled", responses, usage)
                usage.add(reply.usage)
                message = reply.message
                self._account(reply)
                self._add(message)
                self.sink(AgentMessage(self.session_id, message))
                if not message.tool_calls:
                    if hooks is not None and stop_blocks < MAX_STOP_BLOCKS:
                        from codingcode.agent.hook_calls import stop_hook

                        go_on = await stop_hook(self, hooks, message.text, stop_blocks > 0)
                        take_stop(self)  # continue: false from Stop: it stops anyway
                        if go_on is not None:  # a Stop hook blocked: one more turn
                            stop_blocks += 1
                            self._add(Message("user", go_on))
                            continue
                    return Outcome(message.text, "answered", responses, usage, denied)
                results = await self._run_calls(message.tool_calls, signal)
                self._add(Message("tool", results=results))
                denied = any(r.error_kind == "denied" for r in results)
                if signal.is_set():
                    return Outcome("Cancelled.", "cancelled", responses, usage)
                if (stop := take_stop(self)) is not None:
                    # A hook of this step answered continue: false (issue 17).
                    return Outcome(stop, "stopped", responses, usage, denied)
            return Outcome(
                f"Stopped after {self.max_turns} model responses without a final answer.",
                "turn_limit",
                self.max_turns,
                usage,
            )
        finally:
            self._signal = None
            self.state.limits.clear()  # a skill's or command's allowed-tools end here
            if self.store is not None:
                self.store.sync()

    async def _respond_fitting(self, signal: CancelSignal) -> TurnComplete | None:
        """One response, compacting first when the conversation nears the context window and
        again (then retrying) when the endpoint still says it is too long."""
        if self.context_tokens() > self.settings.compact_threshold * self.window:
            await self.compact(reason="auto")
            from codingcode.agent.hook_calls import stop_pending

            if stop_pending(self):  # a PreCompact hook answered continue: false
                return None
        for attempt in range(OVERFLOW_RETRIES + 1):
            try:
                return await self._respond(signal)
            except ContextLengthExceeded as exc:
                # The real window is smaller than we thought: learn it from the refusal
                # (or, when it names none, from the size of what was refused).
                learned = exc.limit or int(self.context_tokens() * OVERFLOW_SHRINK)
                self.window = max(1_000, min(self.window, learned))
                if attempt == OVERFLOW_RETRIES or not await self.compact(reason="overflow"):
                    raise ModelError(
                        f"{exc.message} — even after compacting the conversation. Start a new "
                        "session, or set `contextWindow` in the settings to the model's real "
                        f"window (now {self.window} tokens) so it is compacted in time."
                    ) from None
        return None

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

        def retrying(wait: float, attempt: int, attempts: int, reason: str) -> None:
            self.sink(ModelRetry(self.session_id, wait, attempt, attempts, reason))

        token = retry_notice.set(retrying)  # the stream's task inherits it
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
        finally:
            retry_notice.reset(token)
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
            ctx = self.runner.context(
                signal=signal,
                state=self.state,
                turn_id=self.user_turn(),
                # What the model sees of a result is decided once (see _fit_output): a tool
                # that cuts its own output to this budget saves the whole of it here.
                output_dir=self.spill_dir,
                call_id=call.id,
                output_budget=self.settings.tool_output_limit,
                on_output=self._progress(call),
            )

            def decided(decision: Decision) -> None:
                self._decided(call, decision)

            def checkpointed(checkpoint_id: str) -> None:
                # The session log links the call to the checkpoint taken before it.
                if self.store is not None:
                    self.store.append(
                        {"type": "checkpoint", "call_id": call.id, "checkpoint": checkpoint_id}
                    )

            output = await self.runner.run(
                call.name, call.arguments, ctx, on_decision=decided, on_checkpoint=checkpointed
            )
            result = ToolResult(call.id, call.name, self._fit_output(call, output))
        except AgentError as exc:
            message = exc.message
            if signal.is_set() and signal.reason.startswith("interrupted"):
                message += f"\n(The user {signal.reason}.)"  # tell the model why it stopped
            result = ToolResult(call.id, call.name, message, True, exc.kind.value)
        results[index] = result
        self.sink(ToolCallFinished(self.session_id, call, result))
        if call.name == "todo_write" and not result.is_error:
            self.sink(TodosChanged(self.session_id, list(self.state.todos)))

    def user_turn(self) -> int:
        """The turn (the user's prompt) a call of this session belongs to: a sub-agent's
        calls belong to the prompt of the session that dispatched it."""
        top: AgentSession = self
        while top.parent is not None:
            top = top.parent
        return top.turn

    def _progress(self, call: ToolCall) -> Callable[[bytes], None]:
        """What a running command's output becomes: ToolProgress events with its last lines,
        at most every PROGRESS_EVERY_S (the front end shows them with the elapsed time)."""
        started = time.monotonic()
        tail = bytearray()
        sent = [0.0]

        def seen(data: bytes) -> None:
            tail.extend(data)
            if len(tail) > 4096:
                del tail[: len(tail) - 4096]
            now = time.monotonic()
            if data and now - sent[0] < PROGRESS_EVERY_S:
                return
            sent[0] = now
            text = tail.decode("utf-8", errors="replace")
            lines = [line for line in text.splitlines() if line.strip()][-3:]
            self.sink(ToolProgress(self.session_id, call, started, lines))

        return seen

    def _decided(self, call: ToolCall, decision: Decision) -> None:
        event = ToolDecision(
            self.session_id,
            call,
            decision.decision,
            decision.layer,
            decision.reason,
            decision.rule,
        )
        if self.store is not None:
            self.store.decision(
                {
                    "call_id": call.id,
                    "tool": call.name,
                    "decision": decision.decision,
                    "layer": decision.layer,
                    "reason": decision.reason,
                    "rule": decision.rule,
                }
            )
        self.sink(event)

    def _fit_output(self, call: ToolCall, output: str) -> str:
        """A long output saved whole to the session's directory; the model gets a preview."""
        if self.spill_dir is None:
            return output
        shown, path = spill_output(
            output,
            limit=self.settings.tool_output_limit,
            directory=self.spill_dir,
            call_id=call.id,
            tool=call.name,
        )
        if path is not None:
            self.spilled.append(path)
        return shown

    # -- sub-agents ----------------------------------------------------------------------
    @property
    def workspace(self) -> Workspace:
        """The session's project, settings and trust (its runner's; shared with sub-agents)."""
        return self.runner.workspace

    @property
    def project(self) -> Path:
        """The session's project root (its workspace's)."""
        return self.workspace.root

    def spawn(self, spec: AgentSpec) -> AgentSession:
        """A child session for ``spec``: its own history, tools filtered by its profile,
        calls through the same pipeline under the session id ``parent/child``."""
        self._children += 1
        child_id = f"{self.session_id}/{spec.name}-{self._children}"
        from codingcode.agent.model import resolve_alias

        written = (
            resolve_alias(spec.model, self.model, self.workspace.settings) if spec.model else None
        )
        if written:
            model = parse_model(written, source=spec.origin, scope=spec.scope)
            provider = make_provider(model, settings=self.workspace.settings)
            self._owned_providers.append(provider)
        else:
            model, provider = self.model, self.provider
        inherited = [
            d for d in self.service.list() if d.name not in (TOOL_SEARCH_NAME, DISPATCH_AGENT_NAME)
        ]
        child = open_session(
            self.workspace,
            model=model,
            provider=provider,
            service=self.service.derive(inherited),
            agent=spec,
            mode=self.mode,
            sink=self.sink,
            session_id=child_id,
            depth=self.depth + 1,
            agents=self.agents,
            max_turns=SUB_AGENT_MAX_TURNS,
            confirmer=self.confirmer,
            spill_dir=self.spill_dir,
            extra_rules=self.extra_rules,
        )
        # A sub-agent's tokens count in the session's totals (and its cost), and what the
        # user granted "for this session" holds for it too (both ways: one session).
        child.usage = self.usage
        child.parent = self  # its calls are filed under the user's prompt that led to them
        if child.runner.pipeline is not None and self.runner.pipeline is not None:
            child.runner.pipeline.session_grants = self.runner.pipeline.session_grants
        return child


def open_session(
    workspace: Workspace,
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
    save: bool = False,
    resume: LoadedSession | None = None,
    append_system_prompt: Sequence[str] = (),
    extra_rules: Sequence[Rule] = (),
    spill_dir: Path | None = None,
) -> AgentSession:
    """A ready session in ``workspace``: the service's tools (C1: a registered tool is
    offered), the session's resolver, a runner for the project, and the model's provider.

    ``workspace``: the session's project, settings and trust, built once by the front end
    (``Workspace.load``) and shared with sub-agents; every builder below takes it.
    ``save`` records the session as it goes (``agent.sessions.store``); ``resume`` continues
    a saved one (its id, history and file). ``extra_rules`` are approval rules added for this
    session only (``--allowed-tools`` / ``--disallowed-tools``).
    """
    from codingcode.agent.context.prompt import (
        BASE_PROMPT,
        build_system_prompt,
        environment,
        load_instructions,
    )
    from codingcode.agent.dispatch import make_dispatch_tool
    from codingcode.agent.sessions.store import project_dir

    project = workspace.root
    service = service if service is not None else ToolService.default()
    agents = agents if agents is not None else load_agents(workspace)
    if resume is not None:
        session_id = resume.session_id
    session_id = session_id or new_session_id()
    owned = provider is None
    provider = provider or make_provider(model, settings=workspace.settings)
    policy = None
    if extra_rules:
        from codingcode.approval.rules import load_policy

        policy = load_policy(workspace.settings)
        policy.rules.extend(extra_rules)
    # confirmer=None: headless, the pipeline turns an ask into a deny saying how to allow it.
    runner = build_runner(
        workspace,
        mode=mode,
        session_id=session_id,
        service=service,
        confirmer=confirmer,
        policy=policy,
        checkpoints=True,
    )
    settings = load_agent_settings(workspace)
    store: SessionStore | None = None
    if resume is not None:
        store = SessionStore(resume.directory, session_id)
    elif save and depth == 0:
        store = SessionStore.create(project, session_id, model=str(model), mode=runner.mode)
    if spill_dir is None:
        spill_dir = (
            store.outputs_dir
            if store is not None
            else project_dir(project) / session_id / "outputs"
        )
    env = environment(
        project,
        mode=runner.mode,
        launcher=runner.launcher,
        spill_dir=spill_dir,
        tool_output_limit=settings.tool_output_limit,
    )
    instructions = load_instructions(workspace, check=approval_import_check(runner))
    base = BASE_PROMPT.format(project=project)
    if agent is not None:
        base = f"{agent.system_prompt}\n\nThe project is at {project}."
    from codingcode.skills.install import install_skills

    installed = install_skills(workspace, service)
    skills_text, skill_notes = installed.prompt, installed.notes
    prompt = build_system_prompt(
        base,
        env,
        instructions,
        [*settings.append_system_prompt, *append_system_prompt, *filter(None, [skills_text])],
    )
    session = AgentSession(
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
        store=store,
        settings=settings,
        spill_dir=spill_dir,
    )
    session.extra_rules = list(extra_rules)
    if runner.lifecycle is not None and depth == 0 and store is not None:
        # Every hook is given the transcript's path; the file is there from the first prompt
        # on (a hook of the app idle before it, a Notification, finds none yet).
        runner.lifecycle.transcript_path = str(store.path)
    session.skill_notes = skill_notes
    session.skills = installed.skills
    if resume is not None:
        session.hook_source = "resume"
        session.history = list(resume.history)
        session.usage = Usage(resume.usage.input_tokens, resume.usage.output_tokens)
        session.turn = resume.last_turn
        session.prompt_marks = list(resume.prompt_marks)
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


def approval_import_check(runner: ToolRunner) -> Callable[[Path], str | None]:
    """Whether the approval rules let ``read_file`` read an ``@path`` import without asking
    (rules and the read-only whitelist only: no hook runs, no one is asked, nothing saved)."""
    from codingcode.approval.pipeline import ToolCall as ApprovalCall

    def check(path: Path) -> str | None:
        pipeline = runner.pipeline
        if pipeline is None:
            return None
        try:
            definition, args = runner.service.validate("read_file", {"path": str(path)})
        except AgentError:
            return "read_file is not available"
        call = ApprovalCall(
            tool="read_file",
            args=args.model_dump(mode="json"),
            project_path=runner.project_path,
            session_id=runner.session_id,
            mode=runner.mode,
            arg_roles=definition.arg_roles,
            effects=definition.effects,
            origin=definition.origin,
        )
        result = pipeline.evaluate(call)
        if result.action == "deny":
            return f"the approval rules deny reading it ({result.reason})"
        if result.action == "ask":
            return f"reading it needs the user's approval ({result.reason})"
        return None

    return check
