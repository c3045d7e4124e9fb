"""Skills as deferred tools: ``tool_search`` finds them, calling one loads its body.

Each skill becomes a deferred tool ``skill_<name>`` whose description is the skill's
description, so the existing search index (names, summaries, BM25) finds skills like any
other deferred tool, and ``select:skill_<name>`` loads one by name. Until then the model sees
only the names and descriptions, listed in the system prompt (:func:`skills_prompt`).
Calling the tool returns the instructions (``SKILL.md``'s body), the skill's folder and its
files; a skill with ``allowed-tools`` limits the session's calls to those tools until the
prompt ends (:mod:`codingcode.skills.limits`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from codingcode.skills.limits import SKILL_PREFIX, ToolLimit
from codingcode.skills.loader import Skill
from codingcode.skills.substitutions import expand_skill_body
from codingcode.tools.definition import (
    BUILTIN,
    ToolAnnotations,
    ToolDefinition,
    ToolExecCtx,
    clean_schema,
)

#: At most this many skills are listed by name in the system prompt; the rest are found
#: through tool_search (the listing must stay small with 20,000 skills).
MAX_PROMPT_SKILLS = 100
#: Each listed description is cut here (the search still sees all of it).
PROMPT_DESCRIPTION = 200


class SkillArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    arguments: str = Field(
        default="",
        max_length=10_000,
        description="Optional: what the skill is applied to (replaces $ARGUMENTS in it).",
    )


#: Every skill tool has the same schema: computed once, not per skill (20,000 skills).
_SCHEMA: dict[str, Any] = clean_schema(SkillArgs.model_json_schema())


def tool_name(skill: Skill) -> str:
    return f"{SKILL_PREFIX}{skill.name}"


def skill_text(skill: Skill, arguments: str = "", session_id: str = "") -> str:
    """What the model gets when it uses ``skill``: its instructions with the arguments put
    in (:mod:`codingcode.skills.substitutions`)."""
    body = expand_skill_body(
        skill.body,
        arguments,
        directory=skill.directory,
        session_id=session_id,
        names=skill.argument_names,
    )
    lines = [
        f"Skill {skill.name!r} is loaded. Follow its instructions for the task at hand.",
        f"Base directory for this skill: {skill.directory}",
    ]
    files = skill.files()
    if files:
        lines.append(
            "Its files (read them with read_file when the instructions point to them): "
            + ", ".join(files)
        )
    if skill.allowed_tools is not None:
        lines.append(
            "While this skill is active (until your final answer) only these tools may be "
            f"used: {', '.join(skill.allowed_tools) or '(none)'}."
        )
    return "\n".join(lines) + f"\n\n<skill-instructions>\n{body}\n</skill-instructions>"


def skill_tool(skill: Skill) -> ToolDefinition:
    async def execute(args: SkillArgs, ctx: ToolExecCtx) -> str:
        if skill.allowed_tools is not None:
            ctx.state.limits.append(
                ToolLimit.build(f"skill {skill.name}", skill.allowed_tools, ctx.project_path)
            )
        return skill_text(skill, args.arguments, ctx.session_id)

    return ToolDefinition(
        name=tool_name(skill),
        description=(
            f"Skill: {skill.description} Call it to load the skill's instructions before "
            "doing the task."
        ),
        short_description=f"Skill: {skill.description[:110]}",
        parameters=SkillArgs,
        json_schema=_SCHEMA,
        execute=execute,
        deferred=True,
        annotations=ToolAnnotations(read_only=True, idempotent=True),
        arg_roles={"arguments": "text"},
        # It returns text read when the session started: nothing outside the session.
        effects=frozenset(),
        origin=BUILTIN,  # made by codingcode: the read-only layer knows it
    )


def skills_prompt(skills: Iterable[Skill]) -> str:
    """The system prompt's list of skills: names and descriptions only."""
    listed = list(skills)
    if not listed:
        return ""
    lines = [
        "Skills (instructions for particular tasks; only their names and descriptions are "
        "shown here). When a task matches one, load it with tool_search "
        f"(query 'select:{SKILL_PREFIX}NAME', or keywords) and call {SKILL_PREFIX}NAME to "
        "read its instructions before you start:"
    ]
    for s in listed[:MAX_PROMPT_SKILLS]:
        text = s.description
        if len(text) > PROMPT_DESCRIPTION:
            text = text[: PROMPT_DESCRIPTION - 1] + "…"
        lines.append(f"- {s.name}: {text}")
    if len(listed) > MAX_PROMPT_SKILLS:
        lines.append(
            f"- … and {len(listed) - MAX_PROMPT_SKILLS} more skills: find them with tool_search."
        )
    return "\n".join(lines)
