"""The interactive app (bare ``codingcode``).

prompt-toolkit input with history, the model's text rendered as Markdown while it streams,
tool calls and results, the todo list, and the approval pipeline's confirmation prompt.
Ctrl-C cancels the running prompt, not the session; Ctrl-D (or /exit) ends it.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from codingcode.cli.agent_commands import cli_session, depth_of, summarize_args
from codingcode.cli.tool_commands import check_mode, project_dir
from codingcode.tools.declarations import Lookup, builtin_declaration, lookup
from codingcode.tools.output import plural
from codingcode.tui.keys import TurnKeys

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.status import Status

    from codingcode.agent.session import AgentSession, Outcome
    from codingcode.agent.sessions.store import LoadedSession
    from codingcode.agent.transcript import AgentEvent, ToolCall, ToolProgress
    from codingcode.approval.confirm import ConfirmRequest, Reply
    from codingcode.workspace import Workspace


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
        #: The project (for the diff of an applied change) and each edit's text before it.
        self.project: Path | None = None
        self.before: dict[str, str | None] = {}
        #: The session's tool declarations (which calls write a file, and which arguments).
        self.declared: Lookup = builtin_declaration
        #: Calls (tool and arguments) whose diff a question already showed: not shown again.
        self.asked: set[str] = set()
        #: Commands running now (call id → their progress), shown live under the output.
        self.running: dict[str, ToolProgress] = {}
        self.progress: Live | None = None

    def _stop_progress(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def _show_progress(self) -> None:
        if not self.running:
            self._stop_progress()
            return
        if self.progress is None:
            from rich.live import Live

            self._stop_live()
            self.progress = Live(
                RunningView(self.running), console=self.console, refresh_per_second=4,
                transient=True,
            )  # fmt: skip
            self.progress.start()

    def _stop_live(self) -> None:
        self._stop_progress()
        self._stop_waiting()
        if self.live is not None:
            self.live.stop()
            self.live = None
        self.buffer = ""

    def _streaming(self) -> Any:
        """The answer so far, with a spinner under it while the model is still writing."""
        from rich.console import Group
        from rich.markdown import Markdown
        from rich.spinner import Spinner

        return Group(
            Markdown(self.buffer), Spinner("dots", text=f" {self.model} is writing…", style="dim")
        )

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
            ModelRetry,
            SubAgentFinished,
            SubAgentStarted,
            TodosChanged,
            ToolCallFinished,
            ToolCallStarted,
            ToolProgress,
        )

        depth = depth_of(event.session_id, self.root)
        indent = "  " * depth
        if isinstance(event, ToolProgress):
            # A running command: its elapsed time and last lines, live, until it ends.
            self.running[event.call.id] = event
            self._show_progress()
            return
        if isinstance(event, ToolCallFinished) and event.call.id in self.running:
            del self.running[event.call.id]
            if not self.running:
                self._stop_progress()
        if isinstance(event, ModelRetry):
            # Every retry is shown while it waits (a dead endpoint is not "thinking").
            self.console.print(f"{indent}[yellow]… {escape(event.line())}[/]")
            if self.waiting is not None:
                self.waiting.update(f"[dim]{escape(event.line())}[/]")
            return
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

                self.live = Live(self._streaming(), console=self.console, refresh_per_second=12)
                self.live.start()
            else:
                self.live.update(self._streaming())
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
            self._remember(event.call)
        elif isinstance(event, ToolCallFinished):
            self.render_result(indent, event.result.content, event.result.is_error)
            if not event.result.is_error:
                self._show_applied(indent, event.call)
        elif isinstance(event, TodosChanged):
            self.render_todos(event.todos)
        elif isinstance(event, SubAgentStarted):
            self.console.print(f"{indent}[magenta]↳ sub-agent {escape(event.agent)}[/]")
        elif isinstance(event, SubAgentFinished):
            status = "finished" if event.ok else "stopped"
            self.console.print(f"{indent}[magenta]↲ sub-agent {escape(event.agent)} {status}[/]")

    def _remember(self, call: ToolCall) -> None:
        """The file's text before an edit or write (for the diff shown once it is applied)."""
        from codingcode.approval.preview import snapshot

        if self.project is None or not isinstance(call.arguments, dict):
            return
        declared = self.declared(call.name)
        if declared is not None and declared.writes_files and len(self.before) < 256:
            self.before[call.id] = snapshot(call.name, call.arguments, self.project, declared)

    def _show_applied(self, indent: str, call: ToolCall) -> None:
        from rich.text import Text

        from codingcode.approval.preview import applied_diff

        if call.id not in self.before or self.project is None:
            return
        before = self.before.pop(call.id)
        assert isinstance(call.arguments, dict)
        key = call_key(call.name, call.arguments)
        shown = key in self.asked  # the question showed this diff: once is enough
        self.asked.discard(key)
        declared = self.declared(call.name)
        diff = applied_diff(call.name, call.arguments, self.project, before, declared)
        if diff is None or diff.empty:
            return
        self.console.print(f"{indent}  {diff.stat()}", style="dim", markup=False)
        if not shown:
            self.console.print(Text.from_ansi(diff.render(max_lines=40, color=True)))

    def render_result(self, indent: str, content: str, is_error: bool) -> None:
        from rich.markup import escape

        from codingcode.tools.output import real_sizes

        lines = content.rstrip().splitlines() or ["(empty)"]
        shown = lines[:4]
        style = "red" if is_error else "dim"
        for line in shown:
            self.console.print(f"{indent}  [{style}]│ {escape(line[:160])}[/]")
        cut = real_sizes(content)
        if cut:
            # The real sizes, not those of the preview the model got.
            for what, size, count, where in cut:
                saved = f" — saved in {where}" if where else ""
                self.console.print(
                    f"{indent}  [{style}]│ … {what}: {plural(count, 'line')}, "
                    f"{human_bytes(size)} in all{escape(saved)}[/]"
                )
        elif len(lines) > len(shown):
            more = plural(len(lines) - len(shown), "more line")
            self.console.print(f"{indent}  [{style}]│ … {more}[/]")

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


class RunningView:
    """The commands running now, each with its elapsed time (computed as it is drawn, so
    it ticks without new output) and its last lines of output."""

    def __init__(self, running: dict[str, ToolProgress]) -> None:
        self.running = running

    def __rich__(self) -> Any:
        import time

        from rich.text import Text

        out = Text()
        for event in list(self.running.values()):
            elapsed = time.monotonic() - event.started
            out.append(f"  ⏱ {event.call.name}({summarize_args(event.call)[:60]}) ", "cyan")
            out.append(f"running for {elapsed:.0f} s\n", "dim")
            for line in event.last_lines:
                out.append(f"    │ {line[:150]}\n", "dim")
        return out


def call_key(tool: str, args: object) -> str:
    import json

    return tool + json.dumps(args, sort_keys=True, default=str)


def human_bytes(n: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return plural(n, "byte")


class TerminalConfirmerApp:
    """The approval pipeline's confirmation, asked in the app (one question at a time).

    One key answers (y, s, p, u, n, t); a grant shows the rule it saves, editable, before
    saving it; t asks for a line sent to the model as the reason. Ctrl-C at the question
    interrupts the whole turn (the other calls are cancelled too).
    """

    def __init__(self, console: Console, view: TerminalView) -> None:
        import anyio

        self.console = console
        self.view = view
        self.lock = anyio.Lock()
        #: Called on Ctrl-C at a question: cancels the turn.
        self.on_interrupt: Callable[[], None] | None = None
        #: Set when the user interrupted this turn: queued questions are not asked.
        self.interrupted = False
        #: The terminal reader of the running turn, paused while a question is asked.
        self.keys: TurnKeys | None = None

    async def confirm(self, request: ConfirmRequest) -> Reply:
        async with self.lock:
            if self.interrupted:
                return self._interrupt()
            self.view.finish()
            with self.keys.paused() if self.keys is not None else contextlib.nullcontext():
                return await self._ask(request)

    def _interrupt(self) -> Reply:
        from codingcode.approval.confirm import Answer, Reply

        if not self.interrupted and self.on_interrupt is not None:
            self.on_interrupt()
        self.interrupted = True
        return Reply(Answer.DENY, interrupted=True)

    async def _ask(self, request: ConfirmRequest) -> Reply:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.key_binding import KeyBindings
        from rich.text import Text

        from codingcode.approval.confirm import (
            Answer,
            Reply,
            describe_call,
            describe_capabilities,
            grant_line,
            offered,
            request_headline,
            why_asked,
        )

        call = request.call
        session_id = str(getattr(call, "session_id", ""))
        who = ""
        if depth_of(session_id, self.view.root) > 0:
            who = f" (asked by sub-agent {session_id.rsplit('/', 1)[-1]})"
        title = Text("\n? ", style="bold yellow")
        title.append(f"{request_headline(request)}{who}", style="bold")
        title.append(f"  [{call.tool}]", style="dim")
        self.console.print(title)
        self.console.print(Text.from_ansi(describe_call(call, color=True)))
        self.view.asked.add(call_key(call.tool, call.args))
        self.console.print(Text(f"Why you are asked: {why_asked(request)}.", style="dim"))
        caps = describe_capabilities(request.capabilities)
        if caps:
            self.console.print(Text(f"If allowed, the sandbox lets it: {caps}.", style="dim"))
        if request.credentials:
            placeholders = "; ".join(request.credentials)
            self.console.print(
                Text(f"Credentials it gets as placeholders: {placeholders}.", style="dim")
            )
        choices = offered(request)
        if any(a.grants for _, a, _ in choices):
            self.console.print(Text(grant_line(request)))
        yes = [f"{k}) {w}" for k, a, w in choices if a.allows]
        no = [f"{k}) {w}" for k, a, w in choices if not a.allows]
        for row in (yes, no):  # whole lines: the keys are never cut or eaten
            self.console.print(Text("   ".join(row)), soft_wrap=True)
        keys = [k for k, _, _ in choices]
        bindings = KeyBindings()
        for key in keys:

            def pick(event: object, key: str = key) -> None:
                event.app.exit(result=key)  # type: ignore[attr-defined]

            bindings.add(key)(pick)
            bindings.add(key.upper())(pick)

        from codingcode.approval.confirm import CHOICES, not_offered

        why_not = not_offered(request)
        for key, _, said in CHOICES:
            if key in keys:
                continue

            def explain(event: object, key: str = key, said: str = said) -> None:
                # An answer not offered says why, instead of doing nothing.
                from prompt_toolkit.application import run_in_terminal

                line = f"{key} ({said}) is not offered: {why_not}."
                run_in_terminal(lambda: self.console.print(Text(line, style="yellow")))

            bindings.add(key)(explain)
            bindings.add(key.upper())(explain)

        @bindings.add("c-c")
        def interrupt(event: object) -> None:
            event.app.exit(result="^C")  # type: ignore[attr-defined]

        @bindings.add("<any>")
        def ignore(event: object) -> None:
            pass

        ask: PromptSession[str] = PromptSession(key_bindings=bindings)
        try:
            key = await ask.prompt_async(f"Allow? [{'/'.join(keys)}] ", handle_sigint=False)
        except (KeyboardInterrupt, EOFError):
            key = "^C"
        if key == "^C":
            return self._interrupt()
        answer, said = next((a, w) for k, a, w in choices if k == key)
        self.console.print(Text(f"→ {said}", style="bold"))
        line: PromptSession[str] = PromptSession()
        try:
            if key == "t":
                text = await line.prompt_async("Tell the model: ", handle_sigint=False)
                return Reply(Answer.DENY, message=text.strip() or None)
            if answer.grants and request.suggested_rule:
                what = "Names" if request.network and not request.network_rule else "Rule"
                rule = await line.prompt_async(
                    f"{what} to save (edit it, Enter to save): ",
                    default=request.suggested_rule,
                    handle_sigint=False,
                )
                return Reply(answer, rule=rule.strip() or None)
        except (KeyboardInterrupt, EOFError):
            return self._interrupt()
        return Reply(answer)


HELP = """/help lists the commands; !cmd runs a shell command; @path attaches a file.
A new line in a prompt: \\ then Enter, or Alt+Enter.
Esc or Ctrl-C interrupts the model and its running commands; Ctrl-C twice at an empty prompt,
Ctrl-D or /exit quits. Shift+Tab cycles the mode: default → acceptEdits → plan."""

#: What Shift+Tab cycles through (bypass only by --mode or settings, never by a key).
MODE_CYCLE = ("default", "acceptEdits", "plan")


async def run_turn(
    session: AgentSession, text: str, confirmer: TerminalConfirmerApp, console: Console
) -> Outcome:
    """Send ``text``; Ctrl-C (SIGINT) or Esc interrupts the turn: the model's stream stops,
    running calls are cancelled (their processes killed), the model is told, and the app
    returns to the prompt. The handler is the loop's own and nothing replaces it during the
    turn (the questions read Ctrl-C as a key), so it works after any number of approvals."""
    import asyncio

    loop = asyncio.get_running_loop()
    confirmer.interrupted = False

    def interrupt(how: str) -> None:
        if not confirmer.interrupted:
            confirmer.interrupted = True
            console.print(f"[yellow]Interrupted ({how}).[/] Stopping the running calls…")
        session.cancel(f"interrupted the turn ({how})")

    confirmer.on_interrupt = lambda: interrupt("Ctrl-C")
    loop.add_signal_handler(signal.SIGINT, lambda: interrupt("Ctrl-C"))
    keys = confirmer.keys = TurnKeys(interrupt)
    keys.start()
    try:
        return await session.send(text)
    finally:
        keys.stop()
        loop.remove_signal_handler(signal.SIGINT)


def run_interactive(
    *,
    project: Path,
    model: str | None,
    mode: str | None,
    resume: LoadedSession | None = None,
    initial: str | None = None,
) -> int:
    import anyio

    return anyio.run(_interactive, project, model, mode, resume, initial)


async def _interactive(
    project: Path,
    model: str | None,
    mode: str | None,
    resume: LoadedSession | None = None,
    initial: str | None = None,
) -> int:
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False)
    view = TerminalView(console, "")
    confirmer = TerminalConfirmerApp(console, view)

    def notify(line: str) -> None:
        console.print(f"[yellow]note:[/] {escape(line)}")

    from codingcode.agent import resolve_model
    from codingcode.workspace import Workspace

    # The session's settings and trust, read once here and handed down.
    workspace = Workspace.load(project)
    resolve_model(project, model, settings=workspace.settings)  # no model: say so first
    workspace = await ask_trust(console, workspace)
    async with cli_session(
        project, model, mode, view, notify, confirmer=confirmer, resume=resume, workspace=workspace
    ) as session:
        view.root = session.session_id
        view.model = str(session.model)
        view.project = session.project
        view.declared = lookup(session.service)
        from codingcode.tools.plan_mode import make_exit_plan_mode_tool

        def leave_plan() -> str:
            set_mode(session, "default")
            console.print("[green]Plan approved.[/] Mode: default (edits are asked about).")
            return "default"

        session.service.register(
            make_exit_plan_mode_tool(leave_plan, lambda: session.mode), replace=True
        )
        from codingcode.mcp.interaction import TerminalInteraction, install

        # MCP servers' questions (elicitation), progress and warnings, on this terminal.
        with install(TerminalInteraction(console, confirmer.lock, view.finish)):
            return await _prompt_loop(console, view, session, project, confirmer, initial)


def untrusted_grants(workspace: Workspace) -> bool:
    """Whether some untrusted file of the project would grant something if trusted."""
    from codingcode.trust import describe_grants

    return any(
        state.exists and not state.trusted and describe_grants(state.path)
        for state in workspace.trust.status(workspace.root)
    )


async def ask_trust(console: Console, workspace: Workspace) -> Workspace:
    """Workspace trust, first interactive run: show what the project would enable, ask once.

    The answer is remembered (keyed by the files' contents), so the question comes back only
    when one of those files changes. Declining runs the session with the grants ignored.
    Returns the session's workspace as the answer left it.
    """
    if not untrusted_grants(workspace):
        return workspace
    from prompt_toolkit import PromptSession
    from rich.markup import escape

    from codingcode.cli.trust_commands import trust_summary

    project = workspace.root
    summary, _ = trust_summary(project, workspace.trust)
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
        workspace.trust.trust(project)
        console.print("[green]Trusted.[/] Asked again only if one of these files changes.")
        return workspace.reload()  # the grants just trusted apply to this session
    console.print(
        "Not trusted: its grants are ignored this session (`codingcode trust` to change)."
    )
    return workspace


def set_mode(session: AgentSession, mode: str) -> None:
    """Switch the session's permission mode (what its next calls are decided under)."""
    session.mode = mode
    session.runner.mode = mode


async def _prompt_loop(
    console: Console,
    view: TerminalView,
    session: AgentSession,
    project: Path,
    confirmer: TerminalConfirmerApp,
    initial: str | None = None,
) -> int:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    from codingcode.agent.model import ModelError
    from codingcode.config import user_state_dir

    history_file = user_state_dir() / "prompt-history"
    history_file.parent.mkdir(parents=True, exist_ok=True)
    bindings = KeyBindings()

    @bindings.add("c-c")
    def ctrl_c(event: object) -> None:
        buffer = event.app.current_buffer  # type: ignore[attr-defined]
        if buffer.text:
            buffer.reset()  # a first Ctrl-C clears what was typed
        else:
            event.app.exit(exception=KeyboardInterrupt)  # type: ignore[attr-defined]

    from codingcode.tui import slash

    @bindings.add("escape", "escape")
    def rewind_list(event: object) -> None:
        from prompt_toolkit.application import run_in_terminal

        text = slash.rewind_list(session)
        run_in_terminal(lambda: console.print(text, markup=False, highlight=False))

    @bindings.add("enter")
    def enter(event: object) -> None:
        # A line ending in a backslash goes on to a new line (as in a shell); else: send.
        buffer = event.current_buffer  # type: ignore[attr-defined]
        if buffer.document.text_before_cursor.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    @bindings.add("escape", "enter")
    def newline(event: object) -> None:
        event.current_buffer.insert_text("\n")  # type: ignore[attr-defined]

    @bindings.add("s-tab")
    def cycle_mode(event: object) -> None:
        current = session.mode if session.mode in MODE_CYCLE else MODE_CYCLE[-1]
        set_mode(session, MODE_CYCLE[(MODE_CYCLE.index(current) + 1) % len(MODE_CYCLE)])
        event.app.invalidate()  # type: ignore[attr-defined]

    def message() -> str:
        return "› " if session.mode == "default" else f"{session.mode} › "

    commands = slash.SlashHandler(console, session)
    prompt: PromptSession[str] = PromptSession(
        history=FileHistory(str(history_file)),
        key_bindings=bindings,
        completer=slash.make_completer(project, commands.custom),
    )
    from codingcode.agent.hook_calls import wait_for_user

    armed = False  # a Ctrl-C at the empty prompt: the next one quits
    console.print(
        f"[bold]codingcode[/] — {session.model} — mode {session.mode} — {project}\n[dim]{HELP}[/]"
    )
    if session.history:  # --continue / --resume: where the conversation was
        console.print(f"Resumed session {session.session_id}; the last exchanges:", markup=False)
        console.print(slash.recap(session.history), markup=False, highlight=False)
    try:
        while True:
            try:
                if confirmer.keys is not None:
                    confirmer.keys.release()  # what was typed during the turn, as if typed here
                if initial is not None:  # `codingcode "PROMPT"`: as if typed first
                    text, initial = initial.strip(), None
                    console.print(f"> {text}", markup=False, highlight=False)
                else:
                    # Notification hooks fire when the user leaves the app waiting.
                    text = (
                        await wait_for_user(session, lambda: prompt.prompt_async(message))
                    ).strip()
            except KeyboardInterrupt:
                if armed:
                    break
                armed = True
                console.print("[dim]Press Ctrl-C again to exit (or type /exit).[/]")
                continue
            except EOFError:
                break
            armed = False
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
                outcome = await run_turn(session, text, confirmer, console)
            except ModelError as exc:
                view.finish()
                console.print(f"[red]error:[/] {exc.message}")
                continue
            finally:
                if handled.after is not None:  # a custom command's model is switched back
                    handled.after()
            view.finish()
            if outcome.status == "cancelled":
                console.print("[yellow]Cancelled.[/] The session goes on.")
            elif not outcome.ok:
                console.print(f"[red]{outcome.text}[/]")
            if session.mode != "default":
                console.print(f"[dim]mode: {session.mode} (Shift+Tab to change)[/]")
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
    initial: str | None = None,
) -> None:
    """Bare ``codingcode``: the interactive app (called from the root callback);
    ``initial``: the first prompt (``codingcode "PROMPT"``)."""
    from codingcode.cli.agent_commands import load_for_run
    from codingcode.cli.exits import fail

    root = project_dir(project)
    checked = check_mode(mode)
    loaded = load_for_run(root, continue_=continue_, resume=resume, fork=False)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail(
            'the interactive app needs a terminal; for scripts use `codingcode run "PROMPT"` '
            "(see `codingcode --help`)."
        )
    raise typer.Exit(
        run_interactive(project=root, model=model, mode=checked, resume=loaded, initial=initial)
    )
