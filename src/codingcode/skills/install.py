"""Putting a project's skills into a session's tool service (called by ``open_session``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from codingcode.skills.loader import load_skills
from codingcode.skills.tools import SkillArgs, skill_tool, skills_prompt
from codingcode.tools.service import ToolService


def install_skills(
    project: Path,
    service: ToolService,
    is_trusted: Callable[[Path, bytes], bool] | None = None,
) -> tuple[str, list[str]]:
    """Register every usable skill as a deferred tool: (the system prompt's list of skills,
    the lines to show the user about skills that could not be loaded). ``is_trusted``: the
    session's trust decision for a project file's bytes (``Workspace.is_trusted``)."""
    found = load_skills(project, is_trusted=is_trusted)
    notes = list(found.notes)
    installed = []
    for skill in found.skills.values():
        definition = skill_tool(skill)
        if definition.name in service:
            existing = service.get(definition.name)
            if existing.parameters is not SkillArgs:  # a real tool of that name wins
                notes.append(
                    f"Skill {skill.path} is ignored: a tool named {definition.name} exists."
                )
                continue
        service.register(definition, replace=True)
        installed.append(skill)
    return skills_prompt(installed), notes
