"""Skills: folders with a ``SKILL.md``, in the shape Claude Code users already write.

::

    .codingcode/skills/pdf/SKILL.md     (also .claude/skills/…, and <config dir>/skills/…)
    ---
    name: pdf
    description: Extract text and tables from PDF files. Use when the user mentions PDFs.
    allowed-tools: Read, Bash(python3 scripts/extract.py:*)     # optional
    ---
    # How to work with PDFs
    ...

Where they come from, first one of a name wins: the user's ``<config dir>/skills/`` (the
user's own, never shadowed by a repository), then the project's ``.codingcode/skills/`` and
``.claude/skills/`` (read, never written: compatibility with Claude Code). A project's
skills are instructions someone else may have written, so they load only once the user has
trusted them (``codingcode trust``; each ``SKILL.md`` is recorded by its content, like the
other grant-bearing files). Front matter is optional, as in Claude Code (the folder's name,
the first paragraph as the description; front matter that is not YAML is a warning, and the
skill loads without it). A skill that cannot be used — no description anywhere, a bad or
duplicate name, a file over :data:`MAX_SKILL_BYTES` — is one line in
:attr:`SkillSet.notes`; the others load.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codingcode.config import Scope, SettingsError, user_config_dir
from codingcode.skill_files import skill_files
from codingcode.skills.frontmatter import read_limited, split_front_matter, tool_list

#: A SKILL.md over this is refused (Claude Code advises under 500 lines; long material
#: belongs in the skill's other files, which the model reads when it needs them).
MAX_SKILL_BYTES = 256 * 1024
#: Claude Code's limits: a name of lowercase letters, digits and hyphens, at most 64
#: characters (underscores and capitals are accepted too); a description of at most 1024.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
MAX_DESCRIPTION = 1024
#: How many of a skill's other files are named when it is loaded.
MAX_LISTED_FILES = 50

#: A name in a skill's `arguments` list (`$name` in its instructions).
_ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    #: The instructions: given to the model only when it uses the skill.
    body: str
    path: Path
    scope: Scope
    #: ``allowed-tools`` as written (None: not given, no limit).
    allowed_tools: tuple[str, ...] | None = None
    #: False (``disable-model-invocation: true``): only the user starts it (``/name``); the
    #: model is not told of it and cannot load it.
    model_invocable: bool = True
    #: False (``user-invocable: false``): not a ``/name`` command; the model still uses it.
    user_invocable: bool = True
    #: ``argument-hint``, shown with ``/name`` (e.g. ``FILE [FOCUS]``).
    argument_hint: str = ""
    #: ``model``: the model for a prompt started with ``/name`` (None: the session's).
    model: str | None = None
    #: ``arguments``: names for the words typed after ``/name`` (``$issue`` for the first).
    argument_names: tuple[str, ...] = ()
    #: The ``name`` as written when it is not a slug ("Hook Development"); ``name`` is then
    #: its slug (``hook-development``), the ``/name`` to type.
    display_name: str = ""

    @property
    def directory(self) -> Path:
        return self.path.parent

    @property
    def source(self) -> str:
        return f"{self.scope} skill {self.path}"

    def files(self) -> list[str]:
        """The skill's other files (relative paths, at most :data:`MAX_LISTED_FILES`)."""
        found: list[str] = []
        for root, dirs, names in os.walk(self.directory):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for n in sorted(names):
                full = Path(root) / n
                if full != self.path:
                    found.append(str(full.relative_to(self.directory)))
                if len(found) >= MAX_LISTED_FILES:
                    return found
        return found


@dataclass
class SkillSet:
    skills: dict[str, Skill] = field(default_factory=dict)
    #: One line per skill that could not be used, and one for untrusted project skills.
    notes: list[str] = field(default_factory=list)


def skill_dirs(project: Path) -> list[tuple[Scope, Path]]:
    return [
        (Scope.USER, user_config_dir() / "skills"),
        (Scope.PROJECT, project / ".codingcode" / "skills"),
        (Scope.PROJECT, project / ".claude" / "skills"),
    ]


def parse_skill(path: Path, scope: Scope, data: bytes, warnings: list[str] | None = None) -> Skill:
    """One SKILL.md; a SettingsError (one line naming the file) when it cannot be used.

    As lenient as Claude Code: every front-matter key is optional (no front matter at all,
    or front matter that is not YAML, loads the skill without it — a line in ``warnings``
    for the latter); the name defaults to the folder's, the description to the first
    paragraph of the instructions."""
    what = "Skill"
    meta, body = split_front_matter(data, path, what, required=False, warnings=warnings)
    raw_name = meta.get("name", path.parent.name)
    name = str(raw_name).strip() if isinstance(raw_name, str | int) else ""
    display = ""
    if not NAME.match(name):
        # A display name ("Hook Development"): kept, with a slug for `/name`.
        slug = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-_")[:64].rstrip("-_")
        if not NAME.match(slug):
            raise SettingsError(
                f"Skill {path}: `name` {raw_name!r} must be 1-64 letters, digits, '-' or '_'."
            )
        display, name = name, slug
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        description = first_paragraph(body)
    if not description:
        raise SettingsError(
            f"Skill {path}: `description` is missing and the instructions have no paragraph "
            "to take it from; it says what the skill does and when to use it (the model "
            "sees only names and descriptions until it uses one)."
        )
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "…"
    allowed = tool_list(meta.get("allowed-tools"), path, what)
    if not body.strip():
        raise SettingsError(f"Skill {path}: the instructions (after the front matter) are empty.")
    hint = meta.get("argument-hint")
    model = meta.get("model")
    if isinstance(hint, list):  # `argument-hint: [file]` is a YAML list: shown as written
        hint = " ".join(f"[{v}]" for v in hint)
    for key, value in (("argument-hint", hint), ("model", model)):
        if value is not None and not isinstance(value, str):
            raise SettingsError(f"Skill {path}: `{key}` must be a string.")
    model = " ".join(model.split()) if isinstance(model, str) else ""
    # `arguments`: [issue, branch] or "issue branch"; what is no name is left out (Claude
    # Code reads the rest of the file all the same).
    names = meta.get("arguments")
    names = names.split() if isinstance(names, str) else names if isinstance(names, list) else []
    names = [n for n in names if isinstance(n, str) and _ARG_NAME.fullmatch(n)]
    return Skill(
        name,
        description,
        body.strip(),
        path,
        scope,
        allowed,
        model_invocable=not flag(meta, "disable-model-invocation", False, path),
        user_invocable=flag(meta, "user-invocable", True, path),
        argument_hint=" ".join(hint.split()) if isinstance(hint, str) else "",
        model=None if model in ("", "inherit") else model,
        display_name=display,
        argument_names=tuple(names),
    )


def first_paragraph(body: str) -> str:
    """The first paragraph of Markdown text (headings, fences and rules skipped): what
    Claude Code takes as a skill's description when its front matter gives none."""
    lines: list[str] = []
    fenced = False
    for raw in body.splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or line.startswith(("#", "---", "<!--")) or not line:
            if lines:
                break
            continue
        lines.append(line)
    return " ".join(" ".join(lines).split())


def flag(meta: dict[str, object], key: str, default: bool, path: Path) -> bool:
    """A true/false front-matter key (YAML's ``true``, or the plain line's text)."""
    value = meta.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):  # the plain line's text, as YAML 1.1 reads it
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise SettingsError(f"Skill {path}: `{key}` must be true or false, not {value!r}.")


def load_skills(
    project: Path,
    *,
    is_trusted: Callable[[Path, bytes], bool],
) -> SkillSet:
    """Every usable skill by name, and a line for each problem (see the module doc).

    ``is_trusted(path, data)`` decides for a project skill's exact bytes: the session's
    check (``Workspace.is_trusted``), so no trust records are read here (issue 19)."""
    result = SkillSet()
    untrusted: list[str] = []
    for scope, directory in skill_dirs(project):
        for path in skill_files(directory):
            try:
                data = read_limited(path, MAX_SKILL_BYTES, "Skill")
                # Checked against the very bytes parsed: no window between check and use.
                if scope is Scope.PROJECT and not is_trusted(path, data):
                    untrusted.append(path.parent.name)
                    continue
                skill = parse_skill(path, scope, data, result.notes)
            except SettingsError as exc:
                result.notes.append(exc.message)
                continue
            first = result.skills.get(skill.name)
            if first is not None:
                result.notes.append(
                    f"Skill {path} is ignored: the name {skill.name!r} is already used by "
                    f"{first.path}."
                )
                continue
            result.skills[skill.name] = skill
    if untrusted:
        shown = ", ".join(untrusted[:5]) + (
            f" and {len(untrusted) - 5} more" if len(untrusted) > 5 else ""
        )
        result.notes.append(
            f"{len(untrusted)} project skill{'s' if len(untrusted) != 1 else ''} "
            f"({shown}) not loaded until you trust this project (`codingcode trust`)."
        )
    return result
