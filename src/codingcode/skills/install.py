"""Putting a project's skills into a session's tool service (called by ``open_session``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codingcode.skills.loader import Skill, load_skills
from codingcode.skills.tools import SkillArgs, skill_tool, skills_prompt
from codingcode.tools.service import ToolService

if TYPE_CHECKING:
    from codingcode.workspace import Workspace


@dataclass
class InstalledSkills:
    #: The system prompt's list of skills (those the model may use).
    prompt: str = ""
    #: Lines to show the user about skills that could not be loaded.
    notes: list[str] = field(default_factory=list)
    #: Every skill loaded, the user-only ones (``disable-model-invocation``) too: the
    #: session's ``/name`` commands and ``/skills`` read these.
    skills: list[Skill] = field(default_factory=list)


def install_skills(workspace: Workspace, service: ToolService) -> InstalledSkills:
    """Register every skill of the workspace the model may use as a deferred tool (a project
    skill only as the session's trust decision allows: ``Workspace.is_trusted``).

    A skill with ``disable-model-invocation: true`` gets no tool and is not listed in the
    prompt: only the user starts it, with ``/name``."""
    found = load_skills(workspace.root, is_trusted=workspace.is_trusted)
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
