"""Custom slash commands: Markdown files that become ``/name`` (issue 17).

::

    .codingcode/commands/review.md      (also .claude/commands/, and <config dir>/commands/)
    ---
    description: Review a file for bugs
    argument-hint: FILE [FOCUS]
    allowed-tools: Read, Bash(git diff:*)
    model: anthropic:claude-sonnet-4-5
    ---
    Review @$1 with a focus on $2. Recent changes: !`git diff HEAD -- $1`
    All arguments: $ARGUMENTS

The file's stem is the name (``/review``); sub-folders group files but do not change the
name, as in Claude Code. ``$ARGUMENTS`` is everything after the name, ``$1``, ``$2`` … the
words of it (shell quoting respected); a body that names neither gets ``ARGUMENTS: …``
appended. ``!`cmd``` runs ``cmd`` through the approval pipeline and puts its output in its
place; ``@path`` attaches that file (read through the pipeline too). Both happen in
:mod:`codingcode.custom_commands.render`, so this module stays pure: a registry of named prompt
templates other front ends can use (the MCP server serves them as prompts; the MCP client
adds ``/server:prompt`` entries through :meth:`CommandRegistry.register`).

Where they come from, first one of a name wins: the user's ``<config dir>/commands/``, then
the project's ``.codingcode/commands/`` and ``.claude/commands/``. A project's commands
load only once the user trusted them (``codingcode trust``), like its skills.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from codingcode.config import Scope, SettingsError, user_config_dir
from codingcode.skills.frontmatter import read_limited, split_front_matter, tool_list
from codingcode.skills.substitutions import split_words

#: A command file over this is refused (it is a prompt, not a document).
MAX_COMMAND_BYTES = 128 * 1024
#: A command name: what follows the ``/`` (``server:prompt`` for MCP prompts).
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")
_POSITIONAL = re.compile(r"\$(\d+)")


@dataclass(frozen=True)
class CommandPrompt:
    """A command made ready to send: the prompt, and what it asks of the session."""

    text: str
    #: ``allowed-tools``: a limit on the model's calls for this prompt (None: no limit).
    allowed_tools: tuple[str, ...] | None = None
    #: ``model``: the model for this prompt (``PROVIDER:MODEL``), None for the session's.
    model: str | None = None


@runtime_checkable
class SlashCommand(Protocol):
    """What the registry holds: a named prompt template (a Markdown file, an MCP prompt)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def argument_hint(self) -> str: ...

    @property
    def source(self) -> str: ...

    async def prompt(self, arguments: str) -> CommandPrompt:
        """The prompt for ``arguments`` (before ``!`` lines and ``@`` files are resolved)."""
        ...


def expand_arguments(body: str, arguments: str) -> str:
    """``$ARGUMENTS`` and ``$1`` … replaced (a missing position is empty); a body naming
    neither gets the arguments appended, so they are never lost."""
    arguments = arguments.strip()
    words = split_words(arguments)
    uses = "$ARGUMENTS" in body or _POSITIONAL.search(body) is not None
    text = body.replace("$ARGUMENTS", arguments)

    def positional(m: re.Match[str]) -> str:
        i = int(m.group(1))
        return words[i - 1] if 1 <= i <= len(words) else ""

    text = _POSITIONAL.sub(positional, text)
    if arguments and not uses:
        text = text.rstrip("\n") + f"\n\nARGUMENTS: {arguments}"
    return text


@dataclass(frozen=True)
class MarkdownCommand:
    """A command from a Markdown file (Claude Code's format)."""

    name: str
    description: str
    body: str
    path: Path
    scope: Scope
    argument_hint: str = ""
    allowed_tools: tuple[str, ...] | None = None
    model: str | None = None
    #: The sub-folder it sits in ("" at the top), shown with the description.
    namespace: str = ""

    @property
    def source(self) -> str:
        return f"{self.scope} command {self.path}"

    def expand(self, arguments: str) -> str:
        """The body with the arguments put in (no ``!`` commands run, no files read)."""
        return expand_arguments(self.body, arguments)

    async def prompt(self, arguments: str) -> CommandPrompt:
        return CommandPrompt(self.expand(arguments), self.allowed_tools, self.model)


def parse_command(
    path: Path, scope: Scope, data: bytes, root: Path, warnings: list[str] | None = None
) -> MarkdownCommand:
    """One command file. With ``warnings``, front matter that is not valid YAML loads the
    command without it (as Claude Code does) and says so there."""
    what = "Command"
    meta, body = split_front_matter(data, path, what, required=False, warnings=warnings)
    name = path.stem
    if not NAME.match(name):
        # `Meal Prep & Plan.md`: its slug is the `/name` to type (as skills' display names)
        name = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-_.")[:100]
    if not NAME.match(name):
        raise SettingsError(
            f"Command {path}: the file name must make a command name of letters, digits, "
            "'-', '_' or '.'."
        )
    if not body.strip():
        raise SettingsError(f"Command {path}: the prompt (the file's text) is empty.")
    strings: dict[str, str] = {}
    for key in ("description", "argument-hint", "model"):
        value = meta.get(key)
        if key == "argument-hint" and isinstance(value, list):
            # `argument-hint: [file]` is a YAML list: shown as written
            value = " ".join(f"[{v}]" for v in value)
        if value is not None and not isinstance(value, str | int | float):
            raise SettingsError(f"Command {path}: `{key}` must be a string.")
        strings[key] = " ".join(str(value).split()) if value is not None else ""
    description = strings["description"]
    if not description:  # Claude Code shows the first line of the prompt
        description = body.strip().splitlines()[0][:100]
    namespace = str(path.parent.relative_to(root)) if path.parent != root else ""
    model = strings["model"] or None
    return MarkdownCommand(
        name=name,
        description=description,
        body=body,
        path=path,
        scope=scope,
        argument_hint=strings["argument-hint"],
        allowed_tools=tool_list(meta.get("allowed-tools"), path, what),
        model=None if model == "inherit" else model,
        namespace="" if namespace == "." else namespace,
    )


def command_dirs(project: Path) -> list[tuple[Scope, Path]]:
    return [
        (Scope.USER, user_config_dir() / "commands"),
        (Scope.PROJECT, project / ".codingcode" / "commands"),
        (Scope.PROJECT, project / ".claude" / "commands"),
    ]


def command_files(directory: Path) -> list[Path]:
    """Every ``*.md`` under ``directory`` (sub-folders too, hidden ones skipped), sorted."""
    found: list[Path] = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(root) / n for n in sorted(names) if n.endswith(".md")]
    return found


@dataclass
class CommandRegistry:
    """Slash commands by name (without the ``/``); a name is used once, first come."""

    commands: dict[str, SlashCommand] = field(default_factory=dict)
    #: One line per file that could not be used (and one for untrusted project commands).
    notes: list[str] = field(default_factory=list)

    def register(self, command: SlashCommand, *, replace: bool = False) -> bool:
        """Add ``command``; False (and a note) when its name is taken and not ``replace``."""
        first = self.commands.get(command.name)
        if first is not None and not replace:
            self.notes.append(
                f"{command.source} is ignored: /{command.name} is already {first.source}."
            )
            return False
        self.commands[command.name] = command
        return True

    def unregister(self, name: str) -> None:
        self.commands.pop(name, None)

    def get(self, name: str) -> SlashCommand | None:
        return self.commands.get(name.removeprefix("/"))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.removeprefix("/") in self.commands

    def list(self) -> list[SlashCommand]:
        return sorted(self.commands.values(), key=lambda c: c.name)

    @classmethod
    def load(
        cls,
        project: Path,
        *,
        is_trusted: Callable[[Path, bytes], bool],
    ) -> CommandRegistry:
        """The Markdown commands of the user and of ``project`` (see the module doc).
        ``is_trusted``: the session's check of a project file's bytes
        (``Workspace.is_trusted``); no trust records are read here (issue 19)."""
        registry = cls()
        untrusted: list[str] = []
        for scope, directory in command_dirs(project):
            for path in command_files(directory):
                try:
                    data = read_limited(path, MAX_COMMAND_BYTES, "Command")
                    if scope is Scope.PROJECT and not is_trusted(path, data):
                        untrusted.append(f"/{path.stem}")
                        continue
                    command = parse_command(path, scope, data, directory, registry.notes)
                except SettingsError as exc:
                    registry.notes.append(exc.message)
                    continue
                registry.register(command)
        if untrusted:
            shown = ", ".join(untrusted[:5])
            more = f" and {len(untrusted) - 5} more" if len(untrusted) > 5 else ""
            registry.notes.append(
                f"{len(untrusted)} project command{'s' if len(untrusted) != 1 else ''} "
                f"({shown}{more}) not loaded until you trust this project (`codingcode trust`)."
            )
        return registry
