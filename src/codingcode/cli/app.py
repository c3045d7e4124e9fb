"""The interactive app (bare ``codingcode``).

prompt-toolkit input with history, the model's text rendered as Markdown while it streams,
tool calls and results, the todo list, and the approval pipeline's confirmation prompt.
Ctrl-C cancels the running prompt, not the session; Ctrl-D (or /exit) ends it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from codingcode.cli.agent_commands import cli_session, depth_of, run_with_sigint, summarize_args
from codingcode.cli.tool_commands import check_mode, project_dir

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.status import Status

    from codingcode.agent.session import AgentSession
    from codingcode.agent.sessions.store import LoadedSession
    from codingcode.agent.transcript import AgentEvent
    from codingcode.approval.confirm import Answer, ConfirmRequest


# -- interactive -------------------------------------------------------------------------
class TerminalView:
    """Renders a session's events with rich: streamed Markdown, calls, results, todos."""

    def __init__(self, console: Console, root: str, model: str = "the model") -> None:
        self.console = console
        self.root = root
        self.model = model
        self.buffer = ""
        self.live: Live | None = None
        #: The "waiting for the model" spinner, while a request has no answer yet.
        self.waiting: Status | None = None

    def _stop_live(self) -> None:
        self._stop_waiting()
        if self.live is not None:
            self.live.stop()
            self.live = None
        self.buffer = ""

    def _stop_waiting(self) -> None:
        if self.waiting is not None:
            self.waiting.stop()
            self.waiting = None

    def __call__(self, event: AgentEvent) -> None:
        from rich.markdown import Markdown
        from rich.markup import escape

        from codingcode.agent.transcript import (
            AgentMessage,
            AgentTextDelta,
            ModelRequestStarted,
            SubAgentFinished,
            SubAgentStarted,
            TodosChanged,
            ToolCallFinished,
            ToolCallStarted,
        )

        depth = depth_of(event.session_id, self.root)
        indent = "  " * depth
        if isinstance(event, ModelRequestStarted):
            if not depth and self.live is None and self.waiting is None:
                self.waiting = self.console.status(f"[dim]{self.model} is thinking…[/]")
                self.waiting.start()
            return
        if not depth or not isinstance(event, AgentTextDelta):
            self._stop_waiting()
        if isinstance(event, AgentTextDelta):
            if depth:  # a sub-agent's thinking aloud stays out of the main view
                return
            self.buffer += event.text
            if self.live is None:
                from rich.live import Live

                self.live = Live(Markdown(self.buffer), console=self.console, refresh_per_second=12)
                self.live.start()
            else:
                self.live.update(Markdown(self.buffer))
        elif isinstance(event, AgentMessage):
            if self.live is not None:
                self.live.update(Markdown(self.buffer))
            self._stop_live()
        elif isinstance(event, ToolCallStarted):
            self._stop_live()
            self.console.print(
                f"{indent}[bold cyan]●[/] [bold]{escape(event.call.name)}[/]"
                f"([dim]{escape(summarize_args(event.call))}[/])"
            )
        elif isinstance(event, ToolCallFinished):
            self.render_result(indent, event.result.content, event.result.is_error)
        elif isinstance(event, TodosChanged):
            self.render_todos(event.todos)
        elif isinstance(event, SubAgentStarted):
            self.console.print(f"{indent}[magenta]↳ sub-agent {escape(event.agent)}[/]")
        elif isinstance(event, SubAgentFinished):
            status = "finished" if event.ok else "stopped"
            self.console.print(f"{indent}[magenta]↲ sub-agent {escape(event.agent)} {status}[/]")

    def render_result(self, indent: str, content: str, is_error: bool) -> None:
        from rich.markup import escape

        lines = content.rstrip().splitlines() or ["(empty)"]
        shown = lines[:4]
        style = "red" if is_error else "dim"
        for line in shown:
            self.console.print(f"{indent}  [{style}]│ {escape(line[:160])}[/]")
        if len(lines) > len(shown):
            self.console.print(f"{indent}  [{style}]│ … {len(lines) - len(shown)} more lines[/]")

    def render_todos(self, todos: list[dict[str, str]]) -> None:
        from rich.markup import escape
        from rich.panel import Panel

        marks = {"completed": "[green]✔[/]", "in_progress": "[yellow]▶[/]", "pending": "☐"}
        body = "\n".join(f"{marks.get(t['status'], '?')} {escape(t['step'])}" for t in todos)
        done = sum(t["status"] == "completed" for t in todos)
        self.console.print(
            Panel(body or "(empty)", title=f"Todo {done}/{len(todos)}", expand=False)
        )

    def finish(self) -> None:
        self._stop_live()


class TerminalConfirmerApp:
    """The approval pipeline's confirmation prompt, asked in the app (one at a time)."""

    def __init__(self, console: Console, view: TerminalView) -> None:
        import anyio

        self.console = console
        self.view = view
        self.lock = anyio.Lock()

    async def confirm(self, request: ConfirmRequest) -> Answer:
        from prompt_toolkit import PromptSession
        from rich.markup import escape

        from codingcode.approval.confirm import Answer, describe_call

        async with self.lock:
            self.view.finish()
            session_id = str(getattr(request.call, "session_id", ""))
            who = ""
            if depth_of(session_id, self.view.root) > 0:
                who = f" (asked by sub-agent {escape(session_id.rsplit('/', 1)[-1])})"
            self.console.print(
                f"\n[bold yellow]?[/] [bold]{escape(request.call.tool)}[/]{who} needs your "
                f"approval: {escape(request.reason)}"
            )
            self.console.print(escape(describe_call(request.call)), highlight=False)
            choices = {"a": Answer.ALLOW, "d": Answer.DENY}
            label = "[a]llow once  [d]eny"
            if request.suggested_rule:
                choices |= {"w": Answer.ALWAYS, "n": Answer.NEVER}
                label += "  al[w]ays  [n]ever"
                self.console.print(
                    f'[dim]always/never saves the rule "{escape(request.suggested_rule)}" to '
                    ".codingcode/settings.local.json[/]"
                )
            words = {"allow": "a", "yes": "a", "y": "a", "deny": "d", "no": "d"}
            words |= {"always": "w", "never": "n"} if request.suggested_rule else {}
            session: PromptSession[str] = PromptSession()
            while True:
                try:
                    reply = (await session.prompt_async(f"{label} > ")).strip().lower()
                except (KeyboardInterrupt, EOFError):
                    return Answer.DENY
                key = words.get(reply, reply[:1] if len(reply) == 1 else reply)
                if key in choices:
                    return choices[key]
                self.console.print(f"[dim]Answer one of: {label}[/]")


HELP = """/help lists the commands; !cmd runs a shell command; @path attaches a file.
Ctrl-C cancels the running prompt; Ctrl-D or /exit quits."""


def run_interactive(
    *, project: Path, model: str | None, mode: str | None, resume: LoadedSession | None = None
) -> int:
    import anyio

    return anyio.run(_interactive, project, model, mode, resume)


async def _interactive(
    project: Path, model: str | None, mode: str | None, resume: LoadedSession | None = None
) -> int:
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False)
    view = TerminalView(console, "")
    confirmer = TerminalConfirmerApp(console, view)

    def notify(line: str) -> None:
        console.print(f"[yellow]note:[/] {escape(line)}")

    from codingcode.agent import resolve_model

    resolve_model(project, model)  # no model: say so before asking anything
    await ask_trust(console, project)
    async with cli_session(
        project, model, mode, view, notify, confirmer=confirmer, resume=resume
    ) as session:
        view.root = session.session_id
        view.model = str(session.model)
        return await _prompt_loop(console, view, session, project)


def untrusted_grants(project: Path) -> bool:
    """Whether some untrusted file of the project would grant something if trusted."""
    from codingcode.trust import TrustStore, describe_grants

    return any(
        state.exists and not state.trusted and describe_grants(state.path)
        for state in TrustStore().status(project)
    )


async def ask_trust(console: Console, project: Path) -> None:
    """Workspace trust, first interactive run: show what the project would enable, ask once.

    The answer is remembered (keyed by the files' contents), so the question comes back only
    when one of those files changes. Declining runs the session with the grants ignored.
    """
    if not untrusted_grants(project):
        return
    from prompt_toolkit import PromptSession
    from rich.markup import escape

    from codingcode.cli.trust_commands import trust_summary
    from codingcode.trust import TrustStore

    summary, _ = trust_summary(project)
    console.print(
        "[bold yellow]This project carries settings that grant permissions or run code.[/]"
    )
    console.print(escape(summary), highlight=False)
    ask: PromptSession[str] = PromptSession()
    try:
        reply = (await ask.prompt_async("Trust this project and apply them? [y/N] > ")).strip()
    except (KeyboardInterrupt, EOFError):
        reply = ""
    if reply.lower() in ("y", "yes"):
        TrustStore().trust(project)
        console.print("[green]Trusted.[/] Asked again only if one of these files changes.")
    else:
        console.print(
            "Not trusted: its grants are ignored this session (`codingcode trust` to change)."
        )


async def _prompt_loop(
    console: Console, view: TerminalView, session: AgentSession, project: Path
) -> int:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    from codingcode.agent.model import ModelError
    from codingcode.config import user_state_dir

    history_file = user_state_dir() / "prompt-history"
    history_file.parent.mkdir(parents=True, exist_ok=True)
    from codingcode.cli import slash

    prompt: PromptSession[str] = PromptSession(
        history=FileHistory(str(history_file)),
        completer=slash.make_completer(project),
    )
    commands = slash.SlashHandler(console, session)
    console.print(
        f"[bold]codingcode[/] — {session.model} — mode {session.mode} — {project}\n[dim]{HELP}[/]"
    )
    try:
        while True:
            try:
                text = (await prompt.prompt_async("› ")).strip()
            except KeyboardInterrupt:
                continue
            except EOFError:
                break
            if not text:
                continue
            # /commands, !shell and @file mentions (cli/slash.py); None: nothing to send.
            handled = await commands.handle(text)
            if handled.exit:
                break
            if handled.prompt is None:
                continue
            text = handled.prompt
            try:
                outcome = await run_with_sigint(session, text)
            except ModelError as exc:
                view.finish()
                console.print(f"[red]error:[/] {exc.message}")
                continue
            view.finish()
            if outcome.status == "cancelled":
                console.print("[yellow]Cancelled.[/] The session goes on.")
            elif not outcome.ok:
                console.print(f"[red]{outcome.text}[/]")
            console.print(slash.status_line(session), style="dim", markup=False, highlight=False)
    finally:
        view.finish()
    return 0


def start_app(
    project: Path | None,
    model: str | None,
    mode: str | None,
    *,
    continue_: bool = False,
    resume: str | None = None,
) -> None:
    """Bare ``codingcode``: the interactive app (called from the root callback)."""
    from codingcode.cli import fail
    from codingcode.cli.agent_commands import load_for_run

    root = project_dir(project)
    checked = check_mode(mode)
    loaded = load_for_run(root, continue_=continue_, resume=resume, fork=False)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail(
            'the interactive app needs a terminal; for scripts use `codingcode run "PROMPT"` '
            "(see `codingcode --help`)."
        )
    raise typer.Exit(run_interactive(project=root, model=model, mode=checked, resume=loaded))
