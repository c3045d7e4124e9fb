"""``/name ARGS`` typed as a prompt: which command it is, and making it ready to send."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codingcode.custom_commands.registry import CommandPrompt, CommandRegistry, SlashCommand
from codingcode.custom_commands.render import Notify, prepare_command
from codingcode.custom_commands.skills import add_skills
from codingcode.errors import InvalidArgumentsError
from codingcode.skills.loader import load_skills

if TYPE_CHECKING:
    from codingcode.agent.session import AgentSession
    from codingcode.workspace import Workspace


def is_command_line(text: str) -> bool:
    """``/word …`` is a command; ``/usr/bin/x is broken`` (a path) is a prompt."""
    text = text.lstrip()
    if not text.startswith("/"):
        return False
    head = text.split(maxsplit=1)[0]
    return len(head) > 1 and "/" not in head[1:]


def is_mcp_prompt_name(name: str) -> bool:
    """``server:prompt`` (what ``/server:prompt`` names: an MCP server's prompt)."""
    server, sep, prompt = name.partition(":")
    return bool(sep and server and prompt)


def split_command_line(text: str) -> tuple[str, str]:
    """``/name rest…`` → (``name``, ``rest…``)."""
    parts = text.strip().split(maxsplit=1)
    return parts[0][1:], parts[1] if len(parts) > 1 else ""


@dataclass
class Invocation:
    """One use of a command: which, with what arguments, and the registry's notes."""

    command: SlashCommand
    arguments: str
    notes: list[str] = field(default_factory=list)

    @property
    def model(self) -> str | None:
        return getattr(self.command, "model", None)

    async def prepare(self, session: AgentSession, notify: Notify) -> CommandPrompt:
        return await prepare_command(
            self.command,
            self.arguments,
            runner=session.runner,
            state=session.state,
            notify=notify,
        )


def unknown_command(name: str, registry: CommandRegistry) -> InvalidArgumentsError:
    names = [c.name for c in registry.list()]
    close = difflib.get_close_matches(name, names, n=1)
    hint = f" Did you mean /{close[0]}?" if close else ""
    known = ", ".join(f"/{n}" for n in names[:30]) or "none"
    return InvalidArgumentsError(
        f"Unknown command /{name}.{hint} Custom commands and skills: {known} (Markdown "
        "files in .codingcode/commands/ or .claude/commands/, skills in .codingcode/skills/ "
        "or .claude/skills/; a prompt that starts with a path like /usr/… is sent as it is)."
    )


def names_file_of(note: str, name: str) -> bool:
    """Whether a loading note is about the file of command or skill ``name``."""
    return f"/{name}.md" in note or f"/{name}/SKILL.md" in note


def find_invocation(workspace: Workspace, text: str) -> Invocation | None:
    """The custom command or skill ``text`` invokes (None when it is an ordinary prompt);
    an unknown ``/name`` is an error naming the commands there are.

    ``workspace``: the front end's, built once for the session that then runs the
    invocation; its trust decision is the one used here (nothing is read on the side)."""
    if not is_command_line(text):
        return None
    name, arguments = split_command_line(text)
    registry = CommandRegistry.load(workspace.root, is_trusted=workspace.is_trusted)
    found = load_skills(workspace.root, is_trusted=workspace.is_trusted)
    add_skills(registry, found.skills.values())
    command = registry.get(name)
    if command is None and is_mcp_prompt_name(name):
        return None  # /server:prompt: the session's MCP servers answer it
    if command is None:
        error = unknown_command(name, registry)
        notes = [*registry.notes, *found.notes]
        why = [n for n in notes if "until you trust" in n or names_file_of(n, name)]
        if why:  # the likely reason: say it in the same breath
            error.message += f" ({'; '.join(why)})"
        raise error
    return Invocation(command, arguments, list(registry.notes))
