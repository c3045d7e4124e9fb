"""Custom slash commands (issue 17): ``/name`` from Markdown files, in the app and headless.

:class:`CommandRegistry` holds :class:`SlashCommand` entries by name — Markdown files
(:class:`MarkdownCommand`) and whatever another part registers (MCP prompts as
``/server:prompt``); :func:`prepare_command` runs a command's ``!`` lines and reads its ``@``
files through the approval pipeline.
"""

from codingcode.custom_commands.registry import (
    CommandPrompt,
    CommandRegistry,
    MarkdownCommand,
    SlashCommand,
    expand_arguments,
)
from codingcode.custom_commands.render import prepare_command
from codingcode.custom_commands.skills import commands_of

__all__ = [
    "CommandPrompt",
    "CommandRegistry",
    "MarkdownCommand",
    "SlashCommand",
    "commands_of",
    "expand_arguments",
    "prepare_command",
]
