"""What ``codingcode run`` and the interactive app share: the CLI's session (built-in and
MCP tools, saved as it goes), Ctrl-C handling, ``--allowed-tools`` / ``--disallowed-tools``,
and ``--continue`` / ``--resume``."""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from codingcode.approval.rules.syntax import split_rule_list as split_rule_list

if TYPE_CHECKING:
    from codingcode.agent.session import AgentSession, Outcome
    from codingcode.agent.sessions.store import LoadedSession
    from codingcode.agent.transcript import AgentEvent, ToolCall
    from codingcode.approval.confirm import Confirmer
    from codingcode.approval.rules import Rule
    from codingcode.workspace import Workspace


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

    from codingcode.cancel import first_error

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
    workspace: Workspace | None = None,
) -> AsyncIterator[AgentSession]:
    """A session for the CLI: the built-in tools and the project's MCP servers' tools (all
    registered in one ToolService, so the resolver offers them), saved as it goes, closed
    on the way out. ``workspace``: the one the front end already read (None: read it here)."""
    from codingcode.agent import open_session, resolve_model
    from codingcode.agent.session import DEFAULT_MAX_TURNS
    from codingcode.cli.tool_service import cli_tool_service
    from codingcode.mcp.client import open_project_mcp
    from codingcode.workspace import Workspace

    # The session's settings and trust, read once and handed down to everything below.
    workspace = workspace or Workspace.load(project)
    spec = resolve_model(project, model, settings=workspace.settings)  # fail fast
    rules, hidden = tool_rules(allowed_tools, disallowed_tools)
    service = cli_tool_service()  # C1: registered at set-up, hence offered to the model
    shown = list(workspace.settings.notes)
    for line in shown:
        notify(line)
    async with open_project_mcp(project, service, workspace=workspace) as mcp:
        for line in mcp.notes():
            notify(line)
        if hidden:
            service = service.derive([d for d in service.list() if d.name not in hidden])
        session = open_session(
            workspace,
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
        for line in workspace.settings.notes:  # what the session's readers noted (hooks)
            if line not in shown:
                notify(line)
        show_hook_status(session, sink, notify)
        if session.runner.ignored_grants:
            from codingcode.config import untrusted_note

            notify(untrusted_note(session.runner.ignored_grants, project))
        for note in [*ignored_profile_notes(session), *session.skill_notes]:
            notify(note)
        try:
            yield session
        finally:
            await session.aclose()


def show_hook_status(session: AgentSession, sink: Any, notify: Callable[[str], None]) -> None:
    """A hook's ``statusMessage`` while it runs: to the front end's sink when it takes it
    (``hook_status``: the stream-json line, the progress line), else one note as it starts."""
    from codingcode.hooks.pre_tool_use import HOOK_STATUS

    bus = getattr(session.runner, "hook_bus", None)
    if bus is None:
        return
    told = getattr(sink, "hook_status", None)

    def tell(event: dict[str, Any]) -> None:
        if callable(told):
            told(event)
        elif event["state"] == "start":
            notify(f"{event['message']} ({event['event']} hook)")

    bus.on(HOOK_STATUS, tell)


def tool_rules(allowed: Sequence[str], disallowed: Sequence[str]) -> tuple[list[Rule], set[str]]:
    """Allow and deny rules for this run (rule syntax, as in the settings), and the tools a
    plain ``--disallowed-tools NAME`` takes out of what the model is offered."""
    from codingcode.approval.rules import Rule, RuleEngine, RuleSyntaxError, split_rule
    from codingcode.approval.rules.syntax import rule_texts
    from codingcode.errors import InvalidArgumentsError

    rules: list[Rule] = []
    hidden: set[str] = set()
    for option, action, values in (
        ("--allowed-tools", "allow", allowed),
        ("--disallowed-tools", "deny", disallowed),
    ):
        for text in split_rule_list(values):
            try:
                made = []
                for ours in rule_texts(text):
                    tool, spec = split_rule(ours)
                    written = text if ours != text else ""
                    rule = Rule(ours, action, 0, None, option, written=written)  # type: ignore[arg-type]
                    RuleEngine([rule], Path("/"))  # compiles it: a bad pattern fails here
                    made.append((rule, tool, spec))
            except (RuleSyntaxError, ValueError) as exc:
                raise InvalidArgumentsError(
                    f"{option} {text!r}: {exc}. Write TOOL or TOOL(SPEC), e.g. "
                    "read_file, execute_command(git log *), github:*, or Claude Code's "
                    "Read, Bash(git log:*), mcp__github."
                ) from None
            for rule, tool, spec in made:
                rules.append(rule)
                if action == "deny" and spec is None and not any(c in tool for c in "*?["):
                    hidden.add(tool)
    return rules, hidden


def ignored_profile_notes(session: AgentSession) -> list[str]:
    from codingcode.agent.profiles import SKIPPED

    return [
        *SKIPPED.get(session.project, []),
        *(a.ignored for a in session.agents.values() if a.ignored),
    ]


def load_for_run(
    project: Path, *, continue_: bool, resume: str | None, fork: bool
) -> LoadedSession | None:
    """The saved session ``--continue`` / ``--resume ID`` (``--fork``: a copy) goes on with."""
    from codingcode.agent.session import new_session_id
    from codingcode.agent.sessions import store
    from codingcode.cli.exits import fail

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
