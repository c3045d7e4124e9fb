"""``codingcode run "PROMPT"`` (headless), and what it shares with the interactive app.

Headless: prints the final answer on stdout (progress on stderr), an ``ask`` of the approval
pipeline becomes a deny, ``--json`` prints a machine-readable transcript, and the exit code
says how it went (0 answered, 1 failed or turn limit, 2 bad input / no model, 130 Ctrl-C).

Interactive: prompt-toolkit input with history, the model's text rendered as Markdown while it
streams, tool calls and results, the todo list, and the approval pipeline's confirmation
prompt. Ctrl-C cancels the running prompt, not the session; Ctrl-D (or /exit) ends it.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from codingcode.cli.tool_commands import ModeOption, ProjectOption, check_mode, project_dir

if TYPE_CHECKING:
    from codingcode.agent.session import AgentSession, Outcome
    from codingcode.agent.transcript import AgentEvent, ToolCall
    from codingcode.approval.confirm import Confirmer

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
) -> AsyncIterator[AgentSession]:
    """A session for the CLI: the built-in tools and the project's MCP servers' tools (all
    registered in one ToolService, so the resolver offers them), closed on the way out."""
    from codingcode.agent import open_session, resolve_model
    from codingcode.agent.session import DEFAULT_MAX_TURNS
    from codingcode.cli.tool_service import cli_tool_service
    from codingcode.mcp.client import open_project_mcp

    spec = resolve_model(project, model)  # before starting any server: fail fast
    service = cli_tool_service()  # C1: registered at set-up, hence offered to the model
    async with open_project_mcp(project, service) as mcp:
        for line in mcp.notes():
            notify(line)
        session = open_session(
            project,
            model=spec,
            mode=mode,
            sink=sink,
            service=service,
            confirmer=confirmer,
            max_turns=max_turns or DEFAULT_MAX_TURNS,
        )
        if session.runner.ignored_grants:
            from codingcode.config import untrusted_note

            notify(untrusted_note(session.runner.ignored_grants, project))
        for note in ignored_profile_notes(session):
            notify(note)
        try:
            yield session
        finally:
            await session.aclose()


def ignored_profile_notes(session: AgentSession) -> list[str]:
    return [a.ignored for a in session.agents.values() if a.ignored]


# -- headless -----------------------------------------------------------------------------
class HeadlessReporter:
    """Progress on stderr (one line per call), every event kept for --json."""

    def __init__(self, root: str, *, quiet: bool, as_json: bool) -> None:
        self.root = root
        self.quiet = quiet
        self.as_json = as_json
        self.events: list[dict[str, Any]] = []

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
        if self.as_json:
            self.events.append(event_to_json(event))
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


def run_headless(
    prompt: str,
    *,
    project: Path,
    model: str | None,
    mode: str | None,
    as_json: bool,
    quiet: bool,
    max_turns: int | None,
) -> int:
    import anyio

    from codingcode.agent.model import ModelError

    async def main() -> int:
        reporter = HeadlessReporter("", quiet=quiet or as_json, as_json=as_json)

        def notify(line: str) -> None:
            typer.echo(f"note: {line}", err=True)

        async with cli_session(
            project, model, mode, reporter, notify, max_turns=max_turns
        ) as session:
            reporter.root = session.session_id
            try:
                outcome = await run_with_sigint(session, prompt)
            except ModelError as exc:
                if as_json:
                    print_json(session, None, reporter, error=exc.message)
                    return 1
                raise
        if as_json:
            print_json(session, outcome, reporter)
        elif outcome.ok:
            typer.echo(outcome.text)
        elif outcome.status == "cancelled":
            typer.echo(
                "Interrupted: the run was cancelled (running commands were stopped).", err=True
            )
        else:
            typer.echo(f"error: {outcome.text}", err=True)
        if outcome.status == "cancelled":
            return 130
        return 0 if outcome.ok else 1

    return anyio.run(main)


def print_json(
    session: AgentSession,
    outcome: Outcome | None,
    reporter: HeadlessReporter,
    error: str | None = None,
) -> None:
    payload = {
        "ok": bool(outcome and outcome.ok),
        "status": outcome.status if outcome else "error",
        "answer": outcome.text if outcome and outcome.ok else None,
        "error": error or (None if outcome is None or outcome.ok else outcome.text),
        "model": str(session.model),
        "session_id": session.session_id,
        "mode": session.mode,
        "turns": outcome.turns if outcome else 0,
        "usage": (
            {
                "input_tokens": outcome.usage.input_tokens,
                "output_tokens": outcome.usage.output_tokens,
            }
            if outcome
            else None
        ),
        "messages": [m.to_json() for m in session.history],
        "events": reporter.events,
    }
    typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))


# -- registration --------------------------------------------------------------------------
def register(app: typer.Typer) -> None:
    @app.command("run")
    def run_command(
        prompt: Annotated[str, typer.Argument(help="The task for the agent, or - to read stdin.")],
        project: ProjectOption = None,
        mode: ModeOption = None,
        model: ModelOption = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print a machine-readable transcript as JSON.")
        ] = False,
        quiet: Annotated[
            bool, typer.Option("--quiet", "-q", help="No progress lines on stderr.")
        ] = False,
        max_turns: Annotated[
            int | None,
            typer.Option("--max-turns", min=1, max=500, help="Stop after this many model turns."),
        ] = None,
    ) -> None:
        """Run the agent on PROMPT without a terminal and print its final answer."""
        from codingcode.approval.audit import safe_text
        from codingcode.cli import fail

        # Bytes that are not UTF-8 (argv, stdin) arrive as lone surrogates; the model's wire
        # format needs valid text.
        text = safe_text(sys.stdin.read() if prompt == "-" else prompt)
        if not text.strip():
            fail("PROMPT is empty.")
        code = run_headless(
            text,
            project=project_dir(project),
            model=model,
            mode=check_mode(mode),
            as_json=as_json,
            quiet=quiet,
            max_turns=max_turns,
        )
        raise typer.Exit(code)
