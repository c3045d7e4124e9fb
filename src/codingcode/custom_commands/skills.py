"""Skills as the user's ``/name`` commands (issue 17), as in Claude Code.

A skill is also a slash command: ``/pdf report.pdf`` in the app or
``codingcode run "/pdf report.pdf"`` sends the skill's instructions (``$ARGUMENTS`` put in)
as the prompt, with its ``allowed-tools`` limit and its ``model``. A skill with
``disable-model-invocation: true`` is *only* this (the model is not told of it); one with
``user-invocable: false`` is not a command. When a skill and a Markdown command have the
same name the skill is used, as in Claude Code, and a note names the command left out —
except that a project's skill never shadows the user's own command (the command stays).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codingcode.config import Scope
from codingcode.custom_commands.registry import CommandPrompt, CommandRegistry, MarkdownCommand
from codingcode.skills.loader import Skill
from codingcode.skills.tools import skill_text


@dataclass(frozen=True)
class SkillCommand:
    """``/name`` for a skill."""

    skill: Skill

    @property
    def name(self) -> str:
        return self.skill.name

    @property
    def description(self) -> str:
        return self.skill.description

    @property
    def argument_hint(self) -> str:
        return self.skill.argument_hint

    @property
    def source(self) -> str:
        return self.skill.source

    @property
    def model(self) -> str | None:
        return self.skill.model

    async def prompt(self, arguments: str) -> CommandPrompt:
        asked = f" with: {arguments.strip()}" if arguments.strip() else ""
        text = (
            f"The user started the skill /{self.skill.name}{asked}. Carry out its "
            "instructions below.\n\n" + skill_text(self.skill, arguments.strip())
        )
        return CommandPrompt(text, self.skill.allowed_tools, self.skill.model)


def add_skills(registry: CommandRegistry, skills: Iterable[Skill]) -> None:
    """Register every user-invocable skill as ``/name``; a skill wins over a Markdown
    command of the same name (a note says so); a built-in or MCP entry is never replaced."""
    for skill in skills:
        if not skill.user_invocable:
            continue
        command = SkillCommand(skill)
        first = registry.get(skill.name)
        if first is None:
            registry.register(command)
        elif isinstance(first, MarkdownCommand) and not (
            first.scope is Scope.USER and skill.scope is Scope.PROJECT
        ):  # the user's own command is never shadowed by a repository's skill
            registry.notes.append(f"{first.source} is ignored: /{skill.name} is {skill.source}.")
            registry.register(command, replace=True)
        else:
            registry.register(command)  # taken: a note, the first stays


def skill_commands(registry: CommandRegistry) -> list[SkillCommand]:
    return [c for c in registry.list() if isinstance(c, SkillCommand)]


def skills_listing(skills: Iterable[Skill], notes: Iterable[str] = ()) -> str:
    """What ``/skills`` shows: each skill with its description, who may start it and the
    file it comes from; then the lines about skills that were not loaded."""
    listed = sorted(skills, key=lambda s: s.name)
    lines = [f"Skills ({len(listed)}):" if listed else "No skills."]
    for s in listed:
        if not s.model_invocable:
            who = f"you only: /{s.name}"
        elif not s.user_invocable:
            who = "the model only"
        else:
            who = f"/{s.name} or the model"
        hint = f" {s.argument_hint}" if s.argument_hint else ""
        shown = f"{s.name} ({s.display_name})" if s.display_name else s.name
        lines.append(f"  {shown}{hint} — {s.description}")
        lines.append(f"      {who}; {s.source}")
    lines += [f"  note: {n}" for n in notes]
    if not listed:
        lines.append(
            "  A skill is a folder with a SKILL.md in .codingcode/skills/, .claude/skills/ "
            "or your config dir's skills/."
        )
    return "\n".join(lines)


def commands_of(session: Any) -> CommandRegistry:
    """The session's command registry (``session.commands``), loaded on first use: the
    app's ``/name`` — Markdown commands and the session's skills — and whatever another
    part registers (``/server:prompt``) meet here.

    Project files are checked with the session's own trust decision (its runner's
    ``Workspace``); a session without one (a library user's bare runner) trusts no project
    command, and reads no trust records of its own (issue 19)."""
    registry = getattr(session, "commands", None)
    if not isinstance(registry, CommandRegistry):
        workspace = getattr(getattr(session, "runner", None), "workspace", None)
        registry = CommandRegistry.load(
            session.project,
            is_trusted=workspace.is_trusted if workspace is not None else _trust_none,
        )
        add_skills(registry, getattr(session, "skills", ()))
        session.commands = registry
    return registry


def _trust_none(path: Path, data: bytes) -> bool:
    return False
