"""What the interactive app does with a line before (or instead of) sending it to the model.

- ``/command [args]``: handled here, never sent to the model; an unknown one gets a hint.
- ``!command``: run by the user in the project's sandbox (no approval: the user typed it);
  its output joins the conversation, so the model sees it with the next prompt.
- ``@path`` in a prompt: the file is read through the approval pipeline (an ``@.env``
  mention asks first) and attached to the prompt.

Also the prompt's completions (commands, ``@`` paths) and its status line (model, mode,
context use, tokens and cost).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from codingcode.errors import AgentError

if TYPE_CHECKING:
    from rich.console import Console

    from codingcode.agent.session import AgentSession
    from codingcode.custom_commands import CommandRegistry

COMMANDS: dict[str, str] = {
    "/help": "this list",
    "/clear": "forget the conversation (a fresh start, same settings)",
    "/compact": "/compact [focus] — summarise the older part of the conversation now",
    "/resume": "/resume [ID] — list saved sessions, or continue one",
    "/model": "/model [PROVIDER:MODEL] — show or switch the model",
    "/mode": "/mode [default|acceptEdits|plan|bypass] — show or switch the permission mode",
    "/cost": "tokens used, context window use and cost",
    "/tools": "the tools the model is offered",
    "/mcp": "the MCP servers' tools",
    "/permissions": "the permission mode and the approval rules in effect",
    "/hooks": "the hooks of the settings, with their source files",
    "/skills": "the skills, with their descriptions and where they come from",
    "/agents": "the sub-agents, their tools and where they come from (and files skipped)",
    "/config": "the settings files read (codingcode's and Claude Code's) and what each gave",
    "/diff": "what this session changed in the project",
    "/rewind": "/rewind [N|ID] [files|conversation|both] [force] — list this session's "
    "prompts (also Esc Esc), or go back N prompts (to before the Nth latest)",
    "/init": "write an AGENTS.md for this project through the model (asks before overwriting)",
    "/todos": "the task list",
    "/bashes": "/bashes [kill ID] — the background commands of this session, or end one",
    "/exit": "quit (also Ctrl-D)",
}
ALIASES = {"/quit": "/exit", "/q": "/exit", "/?": "/help"}
#: Output of a ``!command`` longer than this is spilled like a tool output.
SHELL_OUTPUT_LIMIT = 30_000
MAX_ATTACHMENTS = 10
_MENTION = re.compile(r"(?:(?<=\s)|^)@([^\s'\"`]+)")


@dataclass
class Result:
    """What the prompt loop should do: quit, nothing more, or send ``prompt``."""

    exit: bool = False
    prompt: str | None = None
    #: Run once the prompt is answered (a custom command's model switched back).
    after: Callable[[], None] | None = None


def is_command(text: str) -> bool:
    """``/word ...`` is a command; ``/usr/bin/x is broken`` (a path) is a prompt."""
    if not text.startswith("/"):
        return False
    head = text.split(maxsplit=1)[0]
    return "/" not in head[1:]


def help_text() -> str:
    lines = [f"  {name:<13} {what}" for name, what in COMMANDS.items()]
    lines += [
        "  !command      run a shell command yourself (in the sandbox); the model sees its output",
        "  @path         attach a file to your prompt (Tab completes paths)",
        "  \\ + Enter     a new line in the prompt (so does Alt+Enter); Enter alone sends it",
        "Ctrl-C cancels the running prompt; Ctrl-D or /exit quits.",
    ]
    return "\n".join(lines)


class SlashHandler:
    def __init__(self, console: Console, session: AgentSession) -> None:
        from codingcode.custom_commands import commands_of

        self.console = console
        self.session = session
        #: Custom commands (issue 17): Markdown files that become /name, and what other
        #: parts registered in the session's registry.
        self.custom = commands_of(session)
        for note in self.custom.notes:
            self.note(note)
        for c in self.custom.list():
            if f"/{c.name}" in COMMANDS or f"/{c.name}" in ALIASES:
                self.note(f"{c.source} is shadowed by the built-in /{c.name}.")

    def note(self, line: str) -> None:
        from rich.markup import escape

        self.console.print(f"[yellow]note:[/] {escape(line)}")

    async def handle(self, text: str) -> Result:
        if text.startswith("!"):
            await self.shell(text[1:].strip())
            return Result()
        if is_command(text):
            return await self.command(text)
        return Result(prompt=await self.attach(text))

    # -- commands ------------------------------------------------------------------------
    async def command(self, text: str) -> Result:
        from rich.markup import escape

        name, _, arg = text.partition(" ")
        name = ALIASES.get(name, name)
        arg = arg.strip()
        handler: Callable[[str], Any] | None = getattr(self, "cmd_" + name[1:], None)
        custom = self.custom.get(name[1:]) if name not in COMMANDS else None
        if custom is not None:
            return await self.run_custom(custom, arg)
        if name not in COMMANDS and ":" in name:  # an MCP server's prompt: /server:prompt ARGS
            from codingcode.mcp.prompts import prompt_command

            try:
                return Result(prompt=await prompt_command(self.session.service, name[1:], arg))
            except AgentError as exc:
                self.console.print(f"[yellow]{escape(name)}:[/] {escape(exc.message)}")
                return Result()
        if name not in COMMANDS or handler is None:
            names = [*COMMANDS, *(f"/{c.name}" for c in self.custom.list())]
            close = difflib.get_close_matches(name, names, n=1)
            hint = f" Did you mean {close[0]}?" if close else ""
            from codingcode.custom_commands.invoke import names_file_of

            why = [n for n in self.custom.notes if names_file_of(n, name[1:])]
            if why:  # its file did not load: say why
                hint += f" ({'; '.join(why)})"
            self.console.print(
                f"[yellow]Unknown command {escape(name)}.[/]{escape(hint)} /help lists them "
                "(nothing was sent to the model)."
            )
            return Result()
        if name == "/exit":
            return Result(exit=True)
        outcome = handler(arg)
        if hasattr(outcome, "__await__"):
            outcome = await outcome
        return outcome if isinstance(outcome, Result) else Result()

    async def run_custom(self, command: Any, arguments: str) -> Result:
        """A custom command: its prompt (``!`` lines run and ``@`` files read through the
        approval pipeline), sent with its ``allowed-tools`` limit and ``model``."""
        from codingcode.agent.model import ModelError, parse_model
        from codingcode.agent.providers import make_provider
        from codingcode.custom_commands.invoke import Invocation

        session = self.session
        invocation = Invocation(command, arguments)
        after: Callable[[], None] | None = None
        from codingcode.agent.model import resolve_alias

        wanted = invocation.model and resolve_alias(
            invocation.model, session.model, session.workspace.settings
        )
        if wanted:  # None: `inherit`, or an alias with no model here: the session's
            try:
                spec = parse_model(wanted, source=command.source)
                provider = make_provider(spec, settings=session.workspace.settings)
            except ModelError as exc:
                self.console.print(f"[red]error:[/] {exc.message}", highlight=False)
                return Result()
            before = (session.model, session.provider, session.window)
            switch_model(session, spec, provider)

            def restore() -> None:
                session.model, session.provider, session.window = before
                session.clear_state(keep_history=True)

            after = restore
        prepared = await invocation.prepare(session, self.note)
        return Result(prompt=prepared.text, after=after)

    async def cmd_help(self, arg: str) -> None:
        self.console.print(help_text(), highlight=False, markup=False)
        custom = self.custom.list()
        if custom:
            lines = ["Custom commands:"]
            for c in custom:
                hint = f" {c.argument_hint}" if c.argument_hint else ""
                lines.append(f"  /{c.name}{hint} — {c.description} ({c.source})")
            self.console.print("\n".join(lines), highlight=False, markup=False)
        if self.custom.notes:  # the files that did not load (or loaded with a warning)
            self.console.print(
                "\n".join(["Command files:", *(f"  {n}" for n in self.custom.notes)]),
                highlight=False,
                markup=False,
            )
        prompts = await self._mcp_prompts()
        if prompts:
            self.console.print(
                "\n".join(["MCP prompts (/server:prompt ARGS):", *prompts]),
                highlight=False,
                markup=False,
            )

    async def _mcp_prompts(self) -> list[str]:
        """``  /server:prompt ARGS — description`` of each running MCP server's prompts."""
        from codingcode.mcp.prompts import prompt_commands

        return [
            f"  {name}{' ' + usage if usage else ''}{' — ' + about if about else ''}"
            for name, usage, about in await prompt_commands(self.session.service)
        ]

    def cmd_exit(self, arg: str) -> None:  # handled in command()
        pass

    def cmd_clear(self, arg: str) -> None:
        self.session.clear()
        self.console.print("Conversation cleared.")

    async def cmd_compact(self, arg: str) -> None:
        from codingcode.agent.model import ModelError

        before = self.session.context_tokens()
        try:
            done = await self.session.compact(arg or None, reason="manual")
        except ModelError as exc:
            self.console.print(f"[red]error:[/] {exc.message}")
            return
        if not done:
            self.console.print("Nothing to compact yet.")
        else:
            self.console.print(
                f"Compacted: context {_k(before)} → {_k(self.session.context_tokens())} tokens. "
                f"{status_line(self.session)}",
                markup=False,
            )

    def cmd_todos(self, arg: str) -> None:
        from rich.markup import escape

        todos = self.session.state.todos
        marks = {"completed": "✔", "in_progress": "▶", "pending": "☐"}
        for t in todos:
            self.console.print(f"{marks.get(t['status'], '?')} {escape(t['step'])}")
        if not todos:
            self.console.print("(no task list)")

    def cmd_resume(self, arg: str) -> None:
        from codingcode.agent.sessions import store

        session = self.session
        if not arg:
            rows = [store.summarize(d) for d in store.session_dirs(session.project)[:15]]
            for r in rows:
                first = " ".join(r.first_prompt.split())[:60]
                mark = " (this one)" if r.id == session.session_id else ""
                self.console.print(f"{r.id}  {r.turns:>3} turns  {first}{mark}", markup=False)
            if not rows:
                self.console.print("No saved sessions in this project.")
            else:
                self.console.print("/resume ID continues one.")
            return
        try:
            loaded = store.load(store.find(session.project, arg))
        except store.SessionError as exc:
            self.console.print(f"[red]error:[/] {exc.message}", markup=True, highlight=False)
            return
        resume_into(session, loaded)
        if loaded.note:
            self.console.print(f"note: {loaded.note}", markup=False)
        from codingcode.agent.sessions.store import describe

        self.console.print(f"Resumed {describe(loaded)}.", markup=False)
        if session.history:
            self.console.print(recap(session.history), markup=False, highlight=False)

    async def cmd_model(self, arg: str) -> None:
        from codingcode.agent.model import ModelError, parse_model
        from codingcode.agent.providers import make_provider

        session = self.session
        if not arg:
            self.console.print(f"Model: {session.model} ({session.window} tokens of context)")
            return
        try:
            spec = parse_model(arg, source="/model")
            provider = make_provider(spec, settings=self.session.workspace.settings)
        except ModelError as exc:
            self.console.print(f"[red]error:[/] {exc.message}", highlight=False)
            return
        switch_model(session, spec, provider)
        self.console.print(f"Model: {session.model} ({session.window} tokens of context)")

    def cmd_mode(self, arg: str) -> None:
        from codingcode.modes import PERMISSION_MODES

        session = self.session
        if not arg:
            self.console.print(
                f"Mode: {session.mode}. Choose one of: {', '.join(PERMISSION_MODES)}."
            )
            return
        if arg not in PERMISSION_MODES:
            self.console.print(
                f"[red]Unknown mode {arg!r}[/]; choose one of: {', '.join(PERMISSION_MODES)}."
            )
            return
        switch_mode(session, arg)
        self.console.print(f"Mode: {arg}.")

    def cmd_cost(self, arg: str) -> None:
        self.console.print(status_line(self.session), markup=False)

    def cmd_tools(self, arg: str) -> None:
        session = self.session
        offered = {t.name for t in session.tools()}
        for t in session.resolver.eligible():
            mark = "" if t.name in offered else "  (deferred: through tool_search)"
            self.console.print(f"{t.name:<28} {t.short_description}{mark}", markup=False)

    async def cmd_mcp(self, arg: str) -> None:
        from codingcode.mcp.connection import ServerState
        from codingcode.mcp.prompts import manager_of

        servers: dict[str, list[str]] = {}
        shared: list[str] = []
        for t in self.session.service.list():
            if t.origin.kind == "mcp" and t.origin.server:
                servers.setdefault(t.origin.server, []).append(t.name)
            elif t.origin.kind == "mcp":
                shared.append(t.name)  # the resource tools: they serve every server
        manager = manager_of(self.session.service)
        down = [
            f"MCP server {c.name!r} {c.state.value}: {c.error or 'no reason given'}"
            for c in (manager.servers.values() if manager is not None else ())
            if c.state in (ServerState.SKIPPED, ServerState.FAILED, ServerState.NEEDS_LOGIN)
        ]
        prompts = await self._mcp_prompts()
        if not servers and not down and not prompts:
            self.console.print(
                "No MCP tools: none configured in .mcp.json, or the project is not trusted "
                "(`codingcode mcp list` says which)."
            )
        for server, names in sorted(servers.items()):
            self.console.print(f"server {server}: {', '.join(sorted(names))}", markup=False)
        if shared:
            self.console.print(
                f"every server's resources: {', '.join(sorted(shared))}", markup=False
            )
        if prompts:
            self.console.print(
                "\n".join(["Prompts (/server:prompt ARGS):", *prompts]),
                highlight=False,
                markup=False,
            )
        for line in down:  # a server that failed, needs a login or was skipped: why
            self.console.print(line, markup=False, highlight=False)

    def cmd_permissions(self, arg: str) -> None:
        from codingcode.approval.rules import load_policy

        session = self.session
        self.console.print(f"Mode: {session.mode}", markup=False)
        settings = session.workspace.reload().settings  # as the files say now
        rules = [*load_policy(settings).rules, *session.extra_rules]
        for r in rules:
            where = r.source or "built in"
            ignored = "" if r.trusted or r.action != "allow" else "  (ignored: untrusted)"
            self.console.print(f"{r.action:<5} {r.shown}  [{where}]{ignored}", markup=False)
        if not rules:
            self.console.print("No rules of your own; the nine preset rules always apply.")

    def cmd_hooks(self, arg: str) -> None:
        from codingcode.cli.hooks_commands import format_rows, hook_rows
        from codingcode.config import SettingsError

        try:
            text = format_rows(hook_rows(self.session.project))
        except SettingsError as exc:
            text = exc.message
        self.console.print(text, markup=False, highlight=False)

    def cmd_skills(self, arg: str) -> None:
        from codingcode.custom_commands.skills import skills_listing

        self.console.print(
            skills_listing(self.session.skills, self.session.skill_notes),
            highlight=False,
            markup=False,
        )

    def cmd_config(self, arg: str) -> None:
        from codingcode.cli.config_commands import config_report

        text = config_report(self.session.workspace.settings)
        self.console.print(text, highlight=False, markup=False)

    def cmd_agents(self, arg: str) -> None:
        from codingcode.agent.profiles import SKIPPED

        lines = ["Sub-agents (dispatch_agent):"]
        for spec in self.session.agents.values():
            tools = ", ".join(spec.tools) if spec.tools is not None else "every tool"
            model = f"; model {spec.model}" if spec.model else ""
            lines.append(f"  {spec.name} — {spec.description} [{tools}{model}] ({spec.origin})")
            if spec.ignored:
                lines.append(f"    {spec.ignored}")
        lines += [
            f"  {n.removeprefix('codingcode: ')}" for n in SKIPPED.get(self.session.project, [])
        ]
        self.console.print("\n".join(lines), highlight=False, markup=False)

    def cmd_diff(self, arg: str) -> None:
        self.console.print(session_diff(self.session), markup=False, highlight=False)

    async def cmd_bashes(self, arg: str) -> None:
        registry = self.session.state.background
        words = arg.split()
        if not words:
            text = registry.listing() if registry else "No background commands in this session."
            self.console.print(text, markup=False, highlight=False)
            return
        if words[0] != "kill" or len(words) != 2:
            self.console.print("Usage: /bashes, or /bashes kill ID", markup=False)
            return
        if registry is None:
            self.console.print("No background commands in this session.", markup=False)
            return
        try:
            proc = registry.get(words[1])
        except AgentError as exc:
            self.console.print(exc.message, markup=False, highlight=False)
            return
        await anyio.to_thread.run_sync(proc.kill, "killed by the user (/bashes)")
        self.console.print(f"{proc.id}: {proc.status()}", markup=False, highlight=False)

    async def cmd_init(self, arg: str) -> Result:
        """The model studies the project and writes AGENTS.md (as Claude Code's /init)."""
        target = self.session.project / "AGENTS.md"
        if target.exists():
            from prompt_toolkit import PromptSession

            ask: PromptSession[str] = PromptSession()
            try:
                reply = await ask.prompt_async(
                    f"{target.name} exists ({target.stat().st_size} bytes). Let the model "
                    "rewrite it? [y/N] "
                )
            except (KeyboardInterrupt, EOFError):
                reply = ""
            if reply.strip().lower() not in ("y", "yes"):
                self.console.print(f"Kept {target.name} as it is; nothing was sent.")
                return Result()
        return Result(prompt=init_prompt(target.exists(), arg))

    def cmd_rewind(self, arg: str) -> None:
        self.console.print(rewind(self.session, arg), markup=False, highlight=False)

    # -- ! and @ -------------------------------------------------------------------------
    async def shell(self, command: str) -> None:
        from codingcode.agent.transcript import Message
        from codingcode.errors import AgentError

        if not command:
            self.console.print("Type a command after !, e.g. !git status")
            return
        # Ctrl-C ends the command (its whole process tree), not the app, as during a turn.
        import asyncio
        import signal

        import anyio

        loop = asyncio.get_running_loop()
        with anyio.CancelScope() as scope:
            loop.add_signal_handler(signal.SIGINT, scope.cancel)
            try:
                output = await run_user_command(self.session, command)
            finally:
                loop.remove_signal_handler(signal.SIGINT)
        if scope.cancelled_caught:
            self.console.print(f"[yellow]Cancelled:[/] !{command}", highlight=False)
            return
        if isinstance(output, AgentError):
            self.console.print(f"[red]error:[/] {output.message}", highlight=False)
            text = f"error: {output.message}"
        else:
            self.console.print(output.rstrip() or "(no output)", markup=False, highlight=False)
            text = self.session.fit_user_output(output)
        self.session.add_message(
            Message("user", f"I ran this command myself: `{command}`\nIts output:\n{text}")
        )

    async def attach(self, text: str) -> str:
        """The prompt with each ``@path`` mention's file attached (read through approval)."""
        from codingcode.errors import AgentError

        session = self.session
        blocks: list[str] = []
        for target in mentions(text, session.project)[:MAX_ATTACHMENTS]:
            try:
                content = await session.runner.run(
                    "read_file", {"path": target, "limit": 500}, session.runner.context()
                )
            except AgentError as exc:
                self.console.print(f"[yellow]@{target} not attached:[/] {exc.message}")
                continue
            blocks.append(f'<file path="{target}">\n{content}\n</file>')
        from codingcode.mcp.resources import attach_resources  # @server:uri mentions

        blocks += await attach_resources(
            session,
            text,
            lambda line: self.console.print(line, markup=False, emoji=False, highlight=False),
        )
        if not blocks:
            return text
        return text + "\n\nAttached files:\n" + "\n".join(blocks)


def mentions(text: str, project: Path) -> list[str]:
    """``@path`` mentions of existing files (relative to the project, or absolute)."""
    found: list[str] = []
    for m in _MENTION.finditer(text):
        target = m.group(1).rstrip(".,;:!?)]}")
        path = Path(target).expanduser()
        full = path if path.is_absolute() else project / path
        if target and full.is_file() and target not in found:
            found.append(target)
    return found


async def run_user_command(session: AgentSession, command: str) -> str | Any:
    """Run ``command`` in the session's sandbox as the user's own (no approval); the output
    or the AgentError."""
    from dataclasses import replace

    from codingcode.approval.capabilities import capabilities_for
    from codingcode.errors import AgentError

    runner = session.runner
    try:
        definition, args = runner.service.validate("execute_command", {"command": command})
        ctx = runner.context()
        # The user's own command is an explicit grant of what it names literally: a masked
        # path it names (`!cat .env`) is shown to it, exactly as to a call the user approved;
        # words known only at run time and globs name nothing.
        call = runner._call("execute_command", definition, args, ctx, "")
        ctx = replace(ctx, capabilities=capabilities_for(call))
        return await runner.service.execute(definition, args, ctx)
    except AgentError as exc:
        return exc


def init_prompt(exists: bool, focus: str = "") -> str:
    """What ``/init`` asks the model to do."""
    verb = "Improve the existing" if exists else "Create an"
    extra = f"\nPay particular attention to: {focus}" if focus else ""
    return (
        f"{verb} AGENTS.md file at the root of this project: the instructions a coding agent "
        "reads before it works here. Study the project first (its README, build and package "
        "files, test set-up, source layout; use the read-only tools). Then write AGENTS.md "
        "with write_file, concise and specific to this project:\n"
        "- how to build, run, lint and test it (whole suite and a single test), exact commands;\n"
        "- the architecture at a glance: the main packages or directories and what each does;\n"
        "- code style and conventions that are not obvious from a quick look;\n"
        "- anything that commonly trips people up.\n"
        "Do not invent commands or files that are not there; no generic advice."
        f"{extra}"
    )


def resume_into(session: AgentSession, loaded: Any) -> None:
    from codingcode.agent.sessions.store import SessionStore
    from codingcode.agent.transcript import Usage

    if session.store is not None:
        session.store.close()
    session.clear_state()
    session.history = list(loaded.history)
    session.session_id = loaded.session_id
    session.runner.session_id = loaded.session_id
    session.store = SessionStore(loaded.directory, loaded.session_id)
    session.spill_dir = session.store.outputs_dir
    session.usage = Usage(loaded.usage.input_tokens, loaded.usage.output_tokens)
    session.turn = loaded.last_turn
    session.prompt_marks = list(loaded.prompt_marks)


def recap(history: list[Any], exchanges: int = 3, lines: int = 4) -> str:
    """The last exchanges of a conversation (each prompt and the answer it got), for a
    resumed session: what was said, at a glance."""
    pairs: list[list[str]] = []
    for m in history:
        if m.role == "user" and m.text:
            pairs.append([m.text, ""])
        elif m.role == "assistant" and m.text and pairs:
            pairs[-1][1] = m.text
    out: list[str] = []
    if len(pairs) > exchanges:
        out.append(f"… {len(pairs) - exchanges} earlier exchange(s)")
    for prompt, answer in pairs[-exchanges:]:
        text = " ".join(prompt.split())
        out.append(f"› {text if len(text) <= 200 else text[:197] + '...'}")
        shown = answer.strip().splitlines() or ["(no answer)"]
        out += [f"  {line[:200]}" for line in shown[:lines]]
        if len(shown) > lines:
            more = len(shown) - lines
            out.append(f"  … {more} more line{'s' if more != 1 else ''}")
    return "\n".join(out)


def switch_model(session: AgentSession, spec: Any, provider: Any) -> None:
    from codingcode.agent.context.tokens import context_window

    session._owned_providers.append(provider)
    session.provider = provider
    session.model = spec
    session.window = context_window(spec.model, session.settings.context_window)
    session.clear_state(keep_history=True)


def switch_mode(session: AgentSession, mode: str) -> None:
    from codingcode.agent.context.prompt import MODE_MEANINGS

    session.mode = mode
    session.runner.mode = mode
    lines = session.system_prompt.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("- Permission mode: "):
            lines[i] = f"- Permission mode: {mode} — {MODE_MEANINGS.get(mode, '')}"
    session.system_prompt = "\n".join(lines)


def session_diff(session: AgentSession) -> str:
    """What this session changed: the project now against its first checkpoint."""
    store = getattr(session.runner.checkpoints, "store", None)
    if store is None:
        return "No checkpoints in this session (checkpoints are off), so no diff to show."
    from codingcode.checkpoints.store import root_session

    mine = [c for c in store.checkpoints() if root_session(c.session) == session.session_id]
    if not mine:
        return "This session has changed nothing yet."
    text: str = store.diff_text(mine[0].id)
    return text.rstrip("\n") if text.strip() else "No changes since this session began."


def rewind_points(session: AgentSession) -> list[Any]:
    """This session's checkpoints grouped by prompt (``checkpoints.store.Turn``)."""
    store = getattr(session.runner.checkpoints, "store", None)
    if store is None:
        return []
    from codingcode.checkpoints.store import group_turns, root_session

    return group_turns(
        c
        for c in store.checkpoints()
        if root_session(c.session) == session.session_id and c.kind == "before"
    )


def _prompt_text(session: AgentSession, keep: int) -> str:
    if 0 <= keep < len(session.history) and session.history[keep].role == "user":
        return " ".join(session.history[keep].text.split())
    return ""


def rewind_list(session: AgentSession) -> str:
    marks = session.prompt_marks
    if not marks:
        return "No prompts to rewind to in this conversation yet."
    store_on = getattr(session.runner.checkpoints, "store", None) is not None
    by_turn = {t.turn: t for t in rewind_points(session)}
    lines = ["Prompts of this conversation, latest first (N: go back to before it):"]
    for back, (turn, keep) in enumerate(reversed(marks), 1):
        text = _prompt_text(session, keep)
        text = text if len(text) <= 60 else text[:57] + "..."
        found = by_turn.get(turn)
        lines.append(f"  {back}. turn {turn}  {text!r}")
        if found is not None:
            made = "; ".join(f"{c.get('tool')} {c.get('summary', '')}".strip() for c in found.calls)
            lines.append(f"       calls: {made[:100]}")
    if not store_on:
        lines.append("Checkpoints are off in this session: only the conversation can go back.")
    lines.append(
        "/rewind N [files|conversation|both] goes back to before the Nth latest prompt "
        "(default both); files changed outside the agent since its last call are kept unless "
        "you add `force`."
    )
    return "\n".join(lines)


def rewind(session: AgentSession, arg: str) -> str:
    """``/rewind`` without arguments lists the prompts; ``/rewind N`` goes back N prompts
    (files and/or conversation); a checkpoint id restores that checkpoint's files."""
    words = arg.split()
    if not words:
        return rewind_list(session)
    ref, rest = words[0], words[1:]
    what = next((w for w in rest if w in ("files", "conversation", "both")), "both")
    force = "force" in rest
    unknown = [w for w in rest if w not in ("files", "conversation", "both", "force")]
    if unknown:
        return f"Unknown word {unknown[0]!r}: /rewind N [files|conversation|both] [force]."
    marks = session.prompt_marks
    turns = rewind_points(session)
    point = None
    back: int | None = None
    if ref.isdigit():
        back = int(ref)
        if not 1 <= back <= len(marks):
            if not marks:
                return "No prompts to rewind to in this conversation yet."
            return f"The conversation has {len(marks)} prompt(s) to go back to: /rewind 1 to {len(marks)}."
        turn = marks[-back][0]
        # The files as they were before that prompt: the first checkpoint from it on.
        later = [t for t in turns if t.turn >= turn]
        point = later[0].first if later else None
    else:
        matches = [p for t in turns for p in t.points if p.id.startswith(ref)]
        if len(matches) != 1:
            return f"No checkpoint {ref!r} in this session; /rewind lists the prompts."
        point = matches[0]
        back = next((len(marks) - i for i, m in enumerate(marks) if m[0] == point.turn), None)
    out: list[str] = []
    if what in ("files", "both"):
        store = getattr(session.runner.checkpoints, "store", None)
        if point is None or store is None:
            out.append(
                "Files: nothing to restore (no call changed files since then)."
                if store is not None
                else "Files: checkpoints are off in this session; nothing restored."
            )
        else:
            from codingcode.checkpoints import CheckpointError

            try:
                plan = store.plan_restore(point)
                if plan.conflicts and not force:
                    shown = ", ".join(plan.conflicts[:5])
                    return (
                        f"Nothing rewound: {len(plan.conflicts)} file(s) changed outside the "
                        f"agent since its last call ({shown}). Add `force` to overwrite them."
                    )
                report = store.restore(plan, force=force)
            except CheckpointError as exc:
                return f"Nothing rewound: {exc.message}"
            out.append(
                f"Files: restored {len(report.restored)}, deleted {len(report.deleted)} "
                f"(undo: `codingcode checkpoints restore {report.undo_id}`)."
            )
            out += [f"  not restored (kept by hash only): {p}" for p in report.unrestorable]
    if what in ("conversation", "both"):
        done = session.rewind_prompts(back) if back is not None else None
        out.append(
            "Conversation: that prompt is no longer in the conversation (compacted or "
            "cleared since); kept as is."
            if done is None
            else f"Conversation: dropped {done[1]} message(s), back to before turn {done[0]}."
        )
    return "\n".join(out)


def status_line(session: AgentSession) -> str:
    from codingcode.agent.context.tokens import cost_usd

    used = session.context_tokens()
    share = 100 * used / session.window if session.window else 0
    cost = cost_usd(session.model.model, session.usage)
    money = f" · ${cost:.4f}" if cost is not None else ""
    return (
        f"{session.model} · {session.mode} · context {_k(used)}/{_k(session.window)} "
        f"({share:.0f}%) · tokens {_k(session.usage.input_tokens)} in, "
        f"{_k(session.usage.output_tokens)} out{money}"
    )


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


# -- completion -----------------------------------------------------------------------------
def path_candidates(project: Path, partial: str, limit: int = 200) -> Iterable[str]:
    """Paths for ``@partial``: entries of its directory that start with its last part."""
    directory, _, stem = partial.rpartition("/")
    base = project / directory if directory else project
    try:
        with os.scandir(base) as entries:
            count = 0
            for entry in entries:
                if count >= limit:
                    break
                if not entry.name.startswith(stem) or entry.name in (".git",):
                    continue
                if entry.name.startswith(".") and not stem.startswith("."):
                    continue
                count += 1
                suffix = "/" if entry.is_dir(follow_symlinks=False) else ""
                yield (f"{directory}/" if directory else "") + entry.name + suffix
    except OSError:
        return


def make_completer(project: Path, registry: CommandRegistry) -> Any:
    """Completion of ``/commands`` (the custom ones of ``registry``: the session's, read
    with its workspace's trust) and of ``@paths``."""
    from prompt_toolkit.completion import Completer, Completion

    # Custom commands complete too (their files' problems are reported by the handler).
    custom = {f"/{c.name}": c.description for c in registry.list()}
    names = {**custom, **COMMANDS}

    class SlashCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Iterable[Completion]:
            text = document.text_before_cursor
            if text.startswith("/") and " " not in text:
                for name, what in names.items():
                    if name.startswith(text):
                        yield Completion(name, -len(text), display_meta=what.split(" — ")[-1])
                return
            word = text.rsplit(None, 1)[-1] if text and not text[-1].isspace() else ""
            if word.startswith("@"):
                for candidate in sorted(path_candidates(project, word[1:])):
                    yield Completion("@" + candidate, -len(word))

    return SlashCompleter()
