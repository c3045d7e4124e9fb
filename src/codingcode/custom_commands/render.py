"""Making a slash command ready to send: its limit, its ``!`` commands, its ``@`` files.

Everything a command's text makes happen goes through the session's approval pipeline,
exactly like the model's own calls: each ``!`cmd``` is an ``execute_command`` call (so a
headless run denies what would need asking, the sandbox contains what runs, the audit log
records it), each ``@path`` a ``read_file`` call. The command's ``allowed-tools`` limit is
set first, so the ``!`` commands must fit it too; it stays for the whole prompt.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from codingcode.custom_commands.registry import CommandPrompt, SlashCommand
from codingcode.errors import AgentError
from codingcode.skills.limits import ToolLimit

if TYPE_CHECKING:
    from codingcode.runner import ToolRunner
    from codingcode.tools.definition import SessionState

#: ``!`git status``` in a command's text (Claude Code's form).
BANG = re.compile(r"!`([^`\n]+)`")
#: ``@path`` of an existing file (at the start or after white space).
MENTION = re.compile(r"(?:(?<=\s)|^)@([^\s'\"`]+)")
MAX_BANG_COMMANDS = 20
MAX_ATTACHED_FILES = 10
#: Each ``!`` command's output is cut here (the command's prompt must stay a prompt).
MAX_BANG_OUTPUT = 20_000

Notify = Callable[[str], None]


def mentioned_files(text: str, project: Path) -> list[str]:
    """``@path`` mentions of existing files (relative to the project, or absolute)."""
    found: list[str] = []
    for m in MENTION.finditer(text):
        target = m.group(1).rstrip(".,;:!?)]}")
        path = Path(target).expanduser()
        full = path if path.is_absolute() else project / path
        try:
            is_file = full.is_file()
        except OSError:
            is_file = False
        if target and is_file and target not in found:
            found.append(target)
    return found


_CLEAN = "Exit code: 0\n--- stdout ---\n"


def plain_output(result: str) -> str:
    """A command that succeeded and printed only to stdout: just that output, as Claude
    Code puts it in; anything else (a failure, stderr, a sandbox note) stays whole."""
    if result.startswith(_CLEAN) and "\n--- stderr ---\n" not in result:
        return result[len(_CLEAN) :]
    if result == "Exit code: 0\n(no output)":
        return ""
    return result


async def prepare_command(
    command: SlashCommand,
    arguments: str,
    *,
    runner: ToolRunner,
    state: SessionState,
    notify: Notify,
) -> CommandPrompt:
    """The command's prompt with its ``!`` outputs and ``@`` files in; its limit set on
    ``state`` (the session's, cleared when the prompt ends)."""
    prompt = await command.prompt(arguments)
    label = f"/{command.name}"
    if prompt.allowed_tools is not None:
        state.limits.append(
            ToolLimit.build(f"command {label}", prompt.allowed_tools, runner.project_path)
        )
    ctx = runner.context(state=state)
    text = prompt.text.replace("${CLAUDE_SESSION_ID}", runner.session_id)

    matches = list(BANG.finditer(text))
    if len(matches) > MAX_BANG_COMMANDS:
        notify(f"{label}: only the first {MAX_BANG_COMMANDS} !`…` commands run.")
    outputs: dict[int, str] = {}
    for m in matches[:MAX_BANG_COMMANDS]:
        line = m.group(1).strip()
        try:
            out = await runner.run("execute_command", {"command": line}, ctx)
        except AgentError as exc:
            notify(f"{label}: !`{line}` did not run: {exc.message}")
            out = f"(not run: {exc.message})"
        out = plain_output(out)
        if len(out) > MAX_BANG_OUTPUT:
            out = out[:MAX_BANG_OUTPUT] + f"\n… ({len(out) - MAX_BANG_OUTPUT} characters cut)"
        outputs[m.start()] = out.rstrip("\n")

    def put(m: re.Match[str]) -> str:
        return outputs.get(m.start(), m.group(0))

    text = BANG.sub(put, text).strip()

    blocks: list[str] = []
    for target in mentioned_files(prompt.text, runner.project_path)[:MAX_ATTACHED_FILES]:
        try:
            content = await runner.run("read_file", {"path": target}, ctx)
        except AgentError as exc:
            notify(f"{label}: @{target} not attached: {exc.message}")
            continue
        blocks.append(f'<file path="{target}">\n{content}\n</file>')
    if blocks:
        text += "\n\nAttached files:\n" + "\n".join(blocks)
    return replace(prompt, text=text)
