"""Putting a project's skills into a session's tool service (called by ``open_session``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codingcode.skills.loader import Skill, load_skills
from codingcode.skills.tools import SkillArgs, skill_tool, skills_prompt
from codingcode.tools.service import ToolService


@dataclass
class InstalledSkills:
    #: The system prompt's list of skills (those the model may use).
    prompt: str = ""
    #: Lines to show the user about skills that could not be loaded.
    notes: list[str] = field(default_factory=list)
    #: Every skill loaded, the user-only ones (``disable-model-invocation``) too: the
    #: session's ``/name`` commands and ``/skills`` read these.
    skills: list[Skill] = field(default_factory=list)


def install_skills(
    project: Path,
    service: ToolService,
    is_trusted: Callable[[Path, bytes], bool],
) -> InstalledSkills:
    """Register every skill the model may use as a deferred tool. ``is_trusted``: the
    session's trust decision for a project file's bytes (``Workspace.is_trusted``).

    A skill with ``disable-model-invocation: true`` gets no tool and is not listed in the
    prompt: only the user starts it, with ``/name``."""
    found = load_skills(project, is_trusted=is_trusted)
    result = InstalledSkills(notes=list(found.notes), skills=list(found.skills.values()))
    installed = []
    for skill in found.skills.values():
        if not skill.model_invocable:
            continue
        definition = skill_tool(skill)
        if definition.name in service:
            existing = service.get(definition.name)
            if existing.parameters is not SkillArgs:  # a real tool of that name wins
                result.notes.append(
                    f"Skill {skill.path} is ignored: a tool named {definition.name} exists."
                )
                continue
        service.register(definition, replace=True)
        installed.append(skill)
    result.prompt = skills_prompt(installed)
    return result
