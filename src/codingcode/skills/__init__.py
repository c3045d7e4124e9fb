"""Skills (issue 17): folders with a ``SKILL.md``, found by ``tool_search`` and loaded on use.

:mod:`~codingcode.skills.loader` finds and parses them, :mod:`~codingcode.skills.tools` turns
each into a deferred tool, :mod:`~codingcode.skills.limits` keeps ``allowed-tools`` a limit
(never a grant). :mod:`~codingcode.skills.frontmatter` and
:mod:`~codingcode.tools.claude_names` are shared with custom slash commands.
"""

from codingcode.skills.limits import ToolLimit, check_limits
from codingcode.skills.loader import Skill, SkillSet, load_skills
from codingcode.skills.tools import skill_tool, skills_prompt

__all__ = [
    "Skill",
    "SkillSet",
    "ToolLimit",
    "check_limits",
    "load_skills",
    "skill_tool",
    "skills_prompt",
]
