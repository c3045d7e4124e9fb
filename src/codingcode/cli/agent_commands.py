"""``codingcode run "PROMPT"`` (headless), and what it shares with the interactive app.

Headless: an ``ask`` of the approval pipeline becomes a deny. ``--output-format`` chooses
what stdout gets: ``text`` the final answer (progress on stderr), ``json`` one transcript at
the end (``--json`` is the same), ``stream-json`` one JSON object per line as each event
happens. The exit code says how it ended (:data:`EXIT_CODES`).

Interactive: prompt-toolkit input with history, the model's text rendered as Markdown while it
streams, tool calls and results, the todo list, and the approval pipeline's confirmation
prompt. Ctrl-C cancels the running prompt, not the session; Ctrl-D (or /exit) ends it.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from codingcode.cli.tool_commands import ModeOption, ProjectOption, check_mode, project_dir

if TYPE_CHECKING:
    from codingcode.agent.session import AgentSession, Outcome
    from codingcode.agent.sessions.store import LoadedSession
    from codingcode.agent.transcript import AgentEvent, ToolCall
    from codingcode.approval.confirm import Confirmer
    from codingcode.approval.rules import Rule
    from codingcode.commands.invoke import Invocation

#: How ``codingcode run`` ends (README, "Headless mode").
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_DENIED = 3
EXIT_TURN_LIMIT = 4
EXIT_INTERRUPTED = 130
EXIT_CODES = {
    "answered": EXIT_OK,
    "error": EXIT_ERROR,
    "denied": EXIT_DENIED,
    "turn_limit": EXIT_TURN_LIMIT,
    "cancelled": EXIT_INTERRUPTED,
}
OUTPUT_FORMATS = ("text", "json", "stream-json")
EXIT_REASONS = {
    "answered": "the model gave its final answer",
    "error": "an error stopped the run",
    "denied": "the model stopped after a denied call",
    "turn_limit": "the turn limit was reached",
    "cancelled": "interrupted",
}

ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="PROVIDER:MODEL, e.g. openai:gpt-4.1 or anthropic:claude-sonnet-4-5 "
        "(default: $CODINGCODE_MODEL, then settings `model`).",
    ),
]


# -- shared -----------------------------------------------------------------------------
def summarize_args(call: ToolCall, limit: int = 100) -> str:
    args = call.arguments if call.arguments is not None else call.raw_arguments
    if isinstance(args, dict):
        parts = []
        for key, value in args.items():
            shown = json.dumps(value, ensure_ascii=False)
            parts.append(f"{key}={shown if len(shown) <= 60 else shown[:57] + '...'}")
        text = ", ".join(parts)
    else:
        text = str(args)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def depth_of(session_id: str, root: str) -> int:
    return session_id.count("/") - root.count("/")


async def run_with_sigint(session: AgentSession, prompt: str) -> Outcome:
    """Send ``prompt``; a Ctrl-C (SIGINT) cancels the running prompt instead of killing us.

    The first Ctrl-C sets the session's cancel signal (running calls stop, their processes
    are killed); a second one while it is still stopping interrupts for good.
    """
    import anyio

    from codingcode.agent.session import first_error

    result: list[Outcome] = []

    async def watch(scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            count = 0
            async for _ in signals:
                count += 1
                if count > 1:
                    raise KeyboardInterrupt
                session.cancel()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch, tg.cancel_scope)
            result.append(await session.send(prompt))
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise first_error(group) from None
    return result[0]


@contextlib.asynccontextmanager
async def cli_session(
    project: Path,
    model: str | None,
    mode: str | None,
    sink: Callable[[AgentEvent], None],
    notify: Callable[[str], None],
    confirmer: Confirmer | None = None,
    max_turns: int | None = None,
    *,
    resume: LoadedSession | None = None,
    append_system_prompt: Sequence[str] = (),
    allowed_tools: Sequence[str] = (),
    disallowed_tools: Sequence[str] = (),
) -> AsyncIterator[AgentSession]:
    """A session for the CLI: the built-in tools and the project's MCP servers' tools (all
    registered in one ToolService, so the resolver offers them), saved as it goes, closed
    on the way out."""
    from codingcode.agent import open_session, resolve_model
    from codingcode.agent.session import DEFAULT_MAX_TURNS
    from codingcode.cli.tool_service import cli_tool_service
    from codingcode.mcp.client import open_project_mcp

    spec = resolve_model(project, model)  # before starting any server: fail fast
    rules, hidden = tool_rules(allowed_tools, disallowed_tools)
    service = cli_tool_service()  # C1: registered at set-up, hence offered to the model
    async with open_project_mcp(project, service) as mcp:
        for line in mcp.notes():
            notify(line)
        if hidden:
            from codingcode.tools.service import ToolService

            service = ToolService([d for d in service.list() if d.name not in hidden])
        session = open_session(
            project,
            model=spec,
            mode=mode,
            sink=sink,
            service=service,
            confirmer=confirmer,
            max_turns=max_turns or DEFAULT_MAX_TURNS,
            save=True,
            resume=resume,
            append_system_prompt=append_system_prompt,
            extra_rules=rules,
        )
        if session.runner.ignored_grants:
            from codingcode.config import untrusted_note

            notify(untrusted_note(session.runner.ignored_grants, project))
        for note in [*ignored_profile_notes(session), *session.skill_notes]:
            notify(note)
        try:
            yield session
        finally:
            await session.aclose()


def split_rule_list(values: Sequence[str]) -> list[str]:
    """Rules from repeated options, each value also split on commas and spaces outside
    parentheses: ``--allowed-tools "read_file,execute_command(git log *)"``."""
    out: list[str] = []
    for value in values:
        depth = 0
        current = ""
        for ch in value:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            if ch in ", " and depth == 0:
                if current.strip():
                    out.append(current.strip())
                current = ""
            else:
                current += ch
        if current.strip():
            out.append(current.strip())
    return out


def tool_rules(allowed: Sequence[str], disallowed: Sequence[str]) -> tuple[list[Rule], set[str]]:
    """Allow and deny rules for this run (rule syntax, as in the settings), and the tools a
    plain ``--disallowed-tools NAME`` takes out of what the model is offered."""
    from codingcode.approval.rules import Rule, RuleEngine, RuleSyntaxError, split_rule
    from codingcode.errors import InvalidArgumentsError

    rules: list[Rule] = []
    hidden: set[str] = set()
    for option, action, values in (
        ("--allowed-tools", "allow", allowed),
        ("--disallowed-tools", "deny", disallowed),
    ):
        for text in split_rule_list(values):
            try:
                tool, spec = split_rule(text)
                rule = Rule(text, action, 0, None, option)  # type: ignore[arg-type]
                RuleEngine([rule], Path("/"))  # compiles it: a bad pattern fails here
            except (RuleSyntaxError, ValueError) as exc:
                raise InvalidArgumentsError(
                    f"{option} {text!r}: {exc}. Write TOOL or TOOL(SPEC), e.g. "
                    "read_file, execute_command(git log *), github:*."
                ) from None
            rules.append(rule)
            if action == "deny" and spec is None and not any(c in tool for c in "*?["):
                hidden.add(tool)
    return rules, hidden


def ignored_profile_notes(session: AgentSession) -> list[str]:
    return [a.ignored for a in session.agents.values() if a.ignored]


# -- headless -----------------------------------------------------------------------------
class HeadlessReporter:
    """Progress on stderr (one line per call, ``text``), every event kept (``json``) or
    printed as one JSON line as it happens (``stream-json``)."""

    def __init__(self, root: str, *, quiet: bool, output_format: str) -> None:
        self.root = root
        self.output_format = output_format
        self.quiet = quiet or output_format != "text"
        self.events: list[dict[str, Any]] = []

    @property
    def as_json(self) -> bool:
        return self.output_format == "json"

    def emit(self, record: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()

    def __call__(self, event: AgentEvent) -> None:
        from codingcode.agent.transcript import (
            AgentTextDelta,
            ModelRequestStarted,
            SubAgentFinished,
            SubAgentStarted,
            ToolCallFinished,
            ToolCallStarted,
            event_to_json,
        )

        if isinstance(event, AgentTextDelta | ModelRequestStarted):
            return
        if self.output_format == "json":
            self.events.append(event_to_json(event))
        elif self.output_format == "stream-json":
            for record in stream_records(event):
                self.emit(record)
        if self.quiet:
            return
        indent = "  " * depth_of(event.session_id, self.root)
        if isinstance(event, ToolCallStarted):
            typer.echo(f"{indent}> {event.call.name}({summarize_args(event.call)})", err=True)
        elif isinstance(event, ToolCallFinished) and event.result.is_error:
            first = event.result.content.strip().splitlines()[0] if event.result.content else ""
            typer.echo(f"{indent}  ! {event.result.error_kind}: {first[:200]}", err=True)
        elif isinstance(event, SubAgentStarted):
            typer.echo(f"{indent}[sub-agent {event.agent} started]", err=True)
        elif isinstance(event, SubAgentFinished):
            typer.echo(f"{indent}[sub-agent {event.agent} finished]", err=True)


def stream_records(event: AgentEvent) -> list[dict[str, Any]]:
    """The stream-json lines of one event (README, "Headless mode")."""
    from codingcode.agent.transcript import (
        AgentMessage,
        Compacted,
        ToolCallFinished,
        ToolCallStarted,
        ToolDecision,
        UsageReported,
        event_to_json,
    )

    sid = event.session_id
    if isinstance(event, AgentMessage):
        m = event.message
        if not m.text:
            return []
        return [{"type": "assistant", "session_id": sid, "text": m.text}]
    if isinstance(event, ToolCallStarted):
        c = event.call
        args: Any = c.arguments if c.arguments is not None else c.raw_arguments
        return [
            {"type": "tool_call", "session_id": sid, "id": c.id, "name": c.name, "arguments": args}
        ]
    if isinstance(event, ToolDecision):
        return [
            {
                "type": "decision",
                "session_id": sid,
                "call_id": event.call.id,
                "tool": event.call.name,
                "decision": event.decision,
                "layer": event.layer,
                "reason": event.reason,
                "rule": event.rule,
            }
        ]
    if isinstance(event, ToolCallFinished):
        r = event.result
        return [
            {
                "type": "tool_result",
                "session_id": sid,
                "call_id": r.call_id,
                "name": r.name,
                "is_error": r.is_error,
                "error_kind": r.error_kind,
                "content": r.content,
            }
        ]
    if isinstance(event, UsageReported | Compacted):
        record = event_to_json(event)
        record["type"] = "usage" if isinstance(event, UsageReported) else "compaction"
        return [record]
    return [event_to_json(event)]


def outcome_status(outcome: Outcome) -> str:
    if outcome.status == "answered" and outcome.stopped_by_denial:
        return "denied"
    return outcome.status


def run_headless(
    prompt: str,
    *,
    project: Path,
    model: str | None,
    mode: str | None,
    output_format: str,
    quiet: bool,
    max_turns: int | None,
    resume: LoadedSession | None = None,
    append_system_prompt: Sequence[str] = (),
    allowed_tools: Sequence[str] = (),
    disallowed_tools: Sequence[str] = (),
    command: Invocation | None = None,
) -> int:
    import anyio

    from codingcode.agent.model import ModelError

    async def main() -> int:
        reporter = HeadlessReporter("", quiet=quiet, output_format=output_format)

        def notify(line: str) -> None:
            typer.echo(f"note: {line}", err=True)

        async with cli_session(
            project,
            model or (command.model if command is not None else None),
            mode,
            reporter,
            notify,
            max_turns=max_turns,
            resume=resume,
            append_system_prompt=append_system_prompt,
            allowed_tools=allowed_tools,
            disallowed_tools=disallowed_tools,
        ) as session:
            reporter.root = session.session_id
            if output_format == "stream-json":
                reporter.emit(init_record(session, resumed=resume is not None))
            sent = prompt
            if command is not None:  # a custom command: its ! lines and @ files, its limit
                for line in command.notes:
                    notify(line)
                sent = (await command.prepare(session, notify)).text
            try:
                outcome = await run_with_sigint(session, sent)
            except ModelError as exc:
                if output_format == "text":
                    raise
                final = final_record(session, None, error=exc.message)
                if output_format == "json":
                    print_json(session, None, reporter, error=exc.message)
                else:
                    reporter.emit(final)
                return EXIT_ERROR
        status = outcome_status(outcome)
        if output_format == "json":
            print_json(session, outcome, reporter)
        elif output_format == "stream-json":
            reporter.emit(final_record(session, outcome))
        elif outcome.ok:
            typer.echo(outcome.text)
        elif outcome.status == "cancelled":
            typer.echo(
                "Interrupted: the run was cancelled (running commands were stopped).", err=True
            )
        else:
            typer.echo(f"error: {outcome.text}", err=True)
        return EXIT_CODES.get(status, EXIT_ERROR)

    return anyio.run(main)


def init_record(session: AgentSession, *, resumed: bool) -> dict[str, Any]:
    return {
        "type": "init",
        "session_id": session.session_id,
        "model": str(session.model),
        "mode": session.mode,
        "project": str(session.project),
        "tools": [t.name for t in session.tools()],
        "deferred_tools": [t.name for t in session.resolver.deferred()],
        "resumed": resumed,
        "context_window": session.window,
    }


def usage_json(session: AgentSession, outcome: Outcome | None) -> dict[str, Any]:
    from codingcode.agent.context.tokens import cost_usd

    run_usage = outcome.usage if outcome else None
    return {
        "input_tokens": run_usage.input_tokens if run_usage else 0,
        "output_tokens": run_usage.output_tokens if run_usage else 0,
        "session_input_tokens": session.usage.input_tokens,
        "session_output_tokens": session.usage.output_tokens,
        "context_tokens": session.context_tokens(),
        "context_window": session.window,
        "cost_usd": cost_usd(session.model.model, run_usage) if run_usage else None,
    }


def final_record(
    session: AgentSession, outcome: Outcome | None, error: str | None = None
) -> dict[str, Any]:
    status = outcome_status(outcome) if outcome else "error"
    return {
        "type": "result",
        "session_id": session.session_id,
        "status": status,
        "exit_reason": EXIT_REASONS.get(status, status),
        "exit_code": EXIT_CODES.get(status, EXIT_ERROR),
        "answer": outcome.text if outcome and outcome.status == "answered" else None,
        "error": error or (None if outcome is None or outcome.ok else outcome.text),
        "turns": outcome.turns if outcome else 0,
        "usage": usage_json(session, outcome),
    }


def print_json(
    session: AgentSession,
    outcome: Outcome | None,
    reporter: HeadlessReporter,
    error: str | None = None,
) -> None:
    status = outcome_status(outcome) if outcome else "error"
    payload = {
        "ok": bool(outcome and outcome.ok),
        "status": status,
        "exit_code": EXIT_CODES.get(status, EXIT_ERROR),
        "answer": outcome.text if outcome and outcome.ok else None,
        "error": error or (None if outcome is None or outcome.ok else outcome.text),
        "model": str(session.model),
        "session_id": session.session_id,
        "mode": session.mode,
        "turns": outcome.turns if outcome else 0,
        "usage": usage_json(session, outcome) if outcome else None,
        "messages": [m.to_json() for m in session.history],
        "events": reporter.events,
    }
    typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))


def load_for_run(
    project: Path, *, continue_: bool, resume: str | None, fork: bool
) -> LoadedSession | None:
    """The saved session ``--continue`` / ``--resume ID`` (``--fork``: a copy) goes on with."""
    from codingcode.agent.session import new_session_id
    from codingcode.agent.sessions import store
    from codingcode.cli import fail

    if continue_ and resume:
        fail("--continue and --resume cannot be combined: choose the latest or a given session.")
    if fork and not (continue_ or resume):
        fail("--fork needs --continue or --resume ID (the session to branch from).")
    if not (continue_ or resume):
        return None
    directory = store.latest(project) if continue_ else store.find(project, resume or "")
    if fork:
        copy = store.fork(project, directory, new_session_id())
        copy.close()
        directory = copy.directory
    loaded = store.load(directory)
    if loaded.note:
        typer.echo(f"note: {loaded.note}", err=True)
    return loaded


# -- registration --------------------------------------------------------------------------
ContinueOption = Annotated[
    bool,
    typer.Option("--continue", "-c", help="Continue the project's latest session."),
]
ResumeOption = Annotated[
    str | None,
    typer.Option(
        "--resume", "-r", help="Continue the session with this id (`codingcode sessions`)."
    ),
]


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run_command(
        prompt: Annotated[
            list[str],
            typer.Argument(
                help="The task for the agent (or /COMMAND ARGS, a custom command), or - to "
                "read stdin."
            ),
        ],
        project: ProjectOption = None,
        mode: ModeOption = None,
        model: ModelOption = None,
        output_format: Annotated[
            str,
            typer.Option(
                "--output-format",
                help="text (the final answer), json (one transcript at the end) or "
                "stream-json (one JSON object per line per event, as it happens).",
            ),
        ] = "text",
        as_json: Annotated[
            bool, typer.Option("--json", help="Same as --output-format json.")
        ] = False,
        quiet: Annotated[
            bool, typer.Option("--quiet", "-q", help="No progress lines on stderr.")
        ] = False,
        max_turns: Annotated[
            int | None,
            typer.Option("--max-turns", min=1, max=500, help="Stop after this many model turns."),
        ] = None,
        continue_: ContinueOption = False,
        resume: ResumeOption = None,
        fork: Annotated[
            bool,
            typer.Option("--fork", help="With --continue/--resume: go on in a copy (a new id)."),
        ] = False,
        append_system_prompt: Annotated[
            list[str] | None,
            typer.Option("--append-system-prompt", help="Text appended to the system prompt."),
        ] = None,
        allowed_tools: Annotated[
            list[str] | None,
            typer.Option(
                "--allowed-tools",
                help="Allow rules for this run, e.g. 'execute_command(git log *)' (repeat, or "
                "separate with commas).",
            ),
        ] = None,
        disallowed_tools: Annotated[
            list[str] | None,
            typer.Option(
                "--disallowed-tools",
                help="Deny rules for this run; a plain tool name is also not offered.",
            ),
        ] = None,
    ) -> None:
        """Run the agent on PROMPT without a terminal and print its final answer.

        Exit codes: 0 answered; 1 error (model endpoint, ...); 2 bad input or no model;
        3 a denied call stopped the work; 4 the turn limit was reached; 130 interrupted.
        """
        from codingcode.approval.audit import safe_text
        from codingcode.cli import fail

        if as_json:
            if output_format not in ("text", "json"):
                fail("--json is --output-format json; give one of them.")
            output_format = "json"
        if output_format not in OUTPUT_FORMATS:
            fail(
                f"unknown --output-format {output_format!r}; choose one of: text, json, stream-json."
            )
        # Bytes that are not UTF-8 (argv, stdin) arrive as lone surrogates; the model's wire
        # format needs valid text.
        text = safe_text(sys.stdin.read() if prompt == ["-"] else " ".join(prompt))
        if not text.strip():
            fail("PROMPT is empty.")
        root = project_dir(project)
        from codingcode.commands.invoke import find_invocation

        command = find_invocation(root, text)  # `codingcode run /name ARGS` (issue 17)
        loaded = load_for_run(root, continue_=continue_, resume=resume, fork=fork)
        code = run_headless(
            text,
            project=root,
            model=model,
            mode=check_mode(mode),
            output_format=output_format,
            quiet=quiet,
            max_turns=max_turns,
            resume=loaded,
            append_system_prompt=append_system_prompt or (),
            allowed_tools=allowed_tools or (),
            disallowed_tools=disallowed_tools or (),
            command=command,
        )
        raise typer.Exit(code)
