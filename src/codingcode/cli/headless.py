"""``codingcode run`` without a terminal: an ``ask`` of the approval pipeline becomes a deny.

``--output-format`` chooses what stdout gets: ``text`` the final answer (progress on stderr),
``json`` one transcript at the end (``--json`` is the same), ``stream-json`` one JSON object per
line as each event happens. The exit code says how it ended (:data:`EXIT_CODES`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from codingcode.cli.agent_session import cli_session, depth_of, run_with_sigint, summarize_args

if TYPE_CHECKING:
    from codingcode.agent.session import AgentSession, Outcome
    from codingcode.agent.sessions.store import LoadedSession
    from codingcode.agent.transcript import AgentEvent
    from codingcode.custom_commands.invoke import Invocation
    from codingcode.workspace import Workspace

#: How ``codingcode run`` ends (docs/agent.md, "codingcode run").
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
    "stopped": "a hook answered continue: false",
}


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

    def hook_status(self, event: dict[str, Any]) -> None:
        """A hook's ``statusMessage`` while it runs: a ``hook_status`` line (stream-json),
        kept (json), or a progress line on stderr as it starts (text)."""
        record = {"type": "hook_status", "session_id": self.root, **event}
        if self.output_format == "stream-json":
            self.emit(record)
        elif self.output_format == "json":
            self.events.append(record)
        elif not self.quiet and event["state"] == "start":
            typer.echo(f"… {event['message']} ({event['event']} hook)", err=True)

    def emit(self, record: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()

    def __call__(self, event: AgentEvent) -> None:
        from codingcode.agent.transcript import (
            AgentTextDelta,
            ModelRequestStarted,
            ModelRetry,
            SubAgentFinished,
            SubAgentStarted,
            ToolCallFinished,
            ToolCallStarted,
            ToolProgress,
            event_to_json,
        )

        if isinstance(event, AgentTextDelta | ModelRequestStarted | ToolProgress):
            return
        if self.output_format == "json":
            self.events.append(event_to_json(event))
        elif self.output_format == "stream-json":
            for record in stream_records(event):
                self.emit(record)
        if self.quiet:
            return
        indent = "  " * depth_of(event.session_id, self.root)
        if isinstance(event, ModelRetry):
            typer.echo(f"{indent}… {event.line()}", err=True)
        elif isinstance(event, ToolCallStarted):
            typer.echo(f"{indent}> {event.call.name}({summarize_args(event.call)})", err=True)
        elif isinstance(event, ToolCallFinished) and event.result.is_error:
            typer.echo(f"{indent}  ! {error_line(event.result.error_kind, event.result.content)}",
                       err=True)  # fmt: skip
        elif isinstance(event, SubAgentStarted):
            typer.echo(f"{indent}[sub-agent {event.agent} started]", err=True)
        elif isinstance(event, SubAgentFinished):
            typer.echo(f"{indent}[sub-agent {event.agent} finished]", err=True)


#: A failed call's output is shown by its first line, cut here (its whole text went to the
#: model); a denial is shown whole: it says how to allow the call.
ERROR_LINE_CHARS = 300


def error_line(kind: str | None, content: str) -> str:
    """How the progress lines on stderr show a failed or denied call."""
    text = content.strip()
    if kind == "denied":
        return f"{kind}: " + " ".join(text.split())
    first = text.splitlines()[0] if text else ""
    if len(first) > ERROR_LINE_CHARS:
        first = f"{first[:ERROR_LINE_CHARS]}… ({len(first) - ERROR_LINE_CHARS} more characters)"
    return f"{kind}: {first}"


def stream_records(event: AgentEvent) -> list[dict[str, Any]]:
    """The stream-json lines of one event (docs/agent.md, "codingcode run")."""
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
    workspace: Workspace | None = None,
) -> int:
    import anyio

    from codingcode.agent.model import ModelError

    async def main() -> int:
        reporter = HeadlessReporter("", quiet=quiet, output_format=output_format)

        def notify(line: str) -> None:
            typer.echo(f"note: {line}", err=True)

        async with cli_session(
            project,
            model or command_model(project, command, workspace),
            mode,
            reporter,
            notify,
            max_turns=max_turns,
            resume=resume,
            append_system_prompt=append_system_prompt,
            allowed_tools=allowed_tools,
            disallowed_tools=disallowed_tools,
            workspace=workspace,
        ) as session:
            reporter.root = session.session_id
            if session.runner.pipeline is not None:
                # A name the network policy blocked: no one can be asked, so say what to add.
                session.runner.pipeline.session_grants.on_network_block = notify
            if output_format == "stream-json":
                reporter.emit(init_record(session, resumed=resume is not None))
                if resume is not None:
                    reporter.emit(resumed_record(resume))
            elif output_format == "text" and resume is not None:
                from codingcode.agent.sessions.store import describe

                typer.echo(f"Continuing {describe(resume)}", err=True)
            sent = prompt
            if command is not None:  # a custom command: its ! lines and @ files, its limit
                for line in command.notes:
                    notify(line)
                sent = (await command.prepare(session, notify)).text
            elif (mcp_prompt := _mcp_prompt(prompt)) is not None:  # /server:prompt ARGS
                from codingcode.errors import AgentError
                from codingcode.mcp.prompts import prompt_command

                try:
                    sent = await prompt_command(session.service, *mcp_prompt)
                except AgentError as exc:
                    typer.echo(f"error: /{mcp_prompt[0]}: {exc.message}", err=True)
                    return EXIT_BAD_INPUT
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


def command_model(
    project: Path, command: Invocation | None, workspace: Workspace | None
) -> str | None:
    """The model a custom command or skill asks for (``model:``), as ``PROVIDER:MODEL``:
    Claude Code's aliases (``haiku``, ``sonnet``, ``opus``, ``inherit``) and bare model
    names go through :func:`codingcode.agent.model.resolve_alias` against the session's
    own model; None: the session's model."""
    if command is None or not command.model:
        return None
    from codingcode.agent.model import resolve_alias, resolve_model
    from codingcode.workspace import Workspace

    settings = (workspace or Workspace.load(project)).settings
    return resolve_alias(command.model, resolve_model(project, None, settings=settings), settings)


def _mcp_prompt(text: str) -> tuple[str, str] | None:
    """``("server:prompt", ARGS)`` when ``text`` is ``/server:prompt ARGS``."""
    from codingcode.custom_commands.invoke import (
        is_command_line,
        is_mcp_prompt_name,
        split_command_line,
    )

    if not is_command_line(text):
        return None
    name, arguments = split_command_line(text)
    return (name, arguments) if is_mcp_prompt_name(name) else None


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


def resumed_record(loaded: LoadedSession) -> dict[str, Any]:
    """The stream-json line naming the session ``--continue`` / ``--resume`` goes on with."""
    return {
        "type": "resumed",
        "session_id": loaded.session_id,
        "first_prompt": loaded.first_prompt,
        "turns": loaded.turns,
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
        "turn": session.turn,
        "num_turns": outcome.responses if outcome else 0,
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
        "turn": session.turn,
        "num_turns": outcome.responses if outcome else 0,
        "usage": usage_json(session, outcome) if outcome else None,
        "messages": [m.to_json() for m in session.history],
        "events": reporter.events,
    }
    typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
