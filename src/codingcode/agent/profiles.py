"""Sub-agent profiles: the built-in ones and ``.codingcode/agents/NAME.md`` files (SPEC T11).

A profile file is Markdown with YAML front matter::

    ---
    name: reviewer
    description: Reviews a change for bugs and missing tests.
    tools: [read_file, search_code, search_files]   # names or globs; omit for every tool
    model: anthropic:claude-sonnet-4-5               # omit (or "inherit") for the parent's
    ---
    You are a careful reviewer. ...

Profiles come from three places, later ones replacing earlier ones of the same name: the
built-ins, the user's ``<config dir>/agents/`` and the project's ``.codingcode/agents/``.
Each keeps its scope and file, because a project's profile is a file someone else may
have written: the trust logic decides whether its tool grants apply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from codingcode.config import Scope, SettingsError, user_config_dir
from codingcode.tools.resolver import AgentProfile

if TYPE_CHECKING:
    from codingcode.workspace import Workspace

#: What an explorer may do: look, never change.
READ_ONLY_TOOLS = (
    "read_file",
    "search_code",
    "search_files",
    "fetch_url",
    "web_search",
    "tool_search",
)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class AgentSpec:
    """A sub-agent kind: what it is for, what it may use, how it is told to behave."""

    name: str
    description: str
    system_prompt: str
    #: Tool names or globs the agent may use; None means every tool of the session.
    tools: tuple[str, ...] | None = None
    #: ``PROVIDER:MODEL``, or None to use the parent's model.
    model: str | None = None
    #: None for a built-in profile.
    scope: Scope | None = None
    path: Path | None = None
    #: Set when an untrusted project profile's tool grant was narrowed (says what and how).
    ignored: str = ""

    def profile(self) -> AgentProfile:
        return AgentProfile(
            name=self.name, tools=self.tools, description=self.description, model=self.model
        )

    @property
    def origin(self) -> str:
        return "built-in" if self.path is None else f"{self.scope} profile {self.path}"


BUILTIN_AGENTS = (
    AgentSpec(
        name="general",
        description="A general-purpose agent for multi-step tasks: research, edits, commands.",
        system_prompt=(
            "You are a sub-agent handling one delegated task. Work autonomously with your "
            "tools, then answer with a concise report of what you found or did; that report "
            "is all the delegating agent will see."
        ),
    ),
    AgentSpec(
        name="explore",
        description="A read-only explorer: finds files, reads code, answers questions about it.",
        system_prompt=(
            "You are a read-only exploration sub-agent. Search and read the code to answer the "
            "question you were given; you cannot change anything. Answer with the facts found, "
            "citing file paths and line numbers."
        ),
        tools=READ_ONLY_TOOLS,
    ),
)


class _FrontMatter(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str | None = None
    description: str = Field(default="")
    tools: list[str] | None = None
    model: str | None = None

    @field_validator("name", "description", "model", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        # `name: 2024` or `description: Yes` are YAML numbers and booleans: their text
        return str(value) if isinstance(value, int | float | bool) else value

    @field_validator("tools", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        # Claude Code's files write `tools: Read, Grep` (or `Read Grep`, as skills'
        # allowed-tools): split on commas and spaces outside parentheses.
        if isinstance(value, str):
            from codingcode.approval.rules.syntax import split_rule_list

            return split_rule_list([value])
        return value


def parse_profile(path: Path, scope: Scope, data: bytes | None = None) -> AgentSpec:
    import yaml

    try:
        text = (data if data is not None else path.read_bytes()).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"Cannot read agent profile {path}: {exc}.") from None
    meta: Any = {}
    body = text
    if text.startswith("---"):
        parts = re.split(r"^---[ \t]*$", text, maxsplit=2, flags=re.MULTILINE)
        if len(parts) < 3:
            raise SettingsError(
                f"Agent profile {path}: the YAML front matter starting with --- is not closed "
                "by a --- line."
            )
        try:
            meta = yaml.safe_load(parts[1]) or {}
        except yaml.YAMLError as exc:
            raise SettingsError(f"Agent profile {path}: invalid YAML front matter: {exc}") from None
        body = parts[2]
    if not isinstance(meta, dict):
        raise SettingsError(f"Agent profile {path}: the front matter must be a YAML mapping.")
    try:
        fm = _FrontMatter.model_validate(meta)
    except ValidationError as exc:
        problems = "; ".join(
            f"`{'.'.join(str(p) for p in e['loc'])}`: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        raise SettingsError(f"Agent profile {path}: {problems}.") from None
    name = (fm.name or path.stem).strip()
    if not _NAME.match(name):
        # Claude Code takes any name ("Code Reviewer"): its slug is the name one dispatches
        name = agent_slug(name) or agent_slug(path.stem)
    if not _NAME.match(name):
        raise SettingsError(
            f"Agent profile {path}: `name` {fm.name!r} gives no usable name (letters, digits, "
            "'-', '_' or '.')."
        )
    model = fm.model.strip() if fm.model else None
    if model in ("", "inherit"):
        model = None
    prompt = body.strip()
    if not prompt:
        raise SettingsError(f"Agent profile {path}: the body (the system prompt) is empty.")
    return AgentSpec(
        name=name,
        description=fm.description.strip() or f"The {name} agent.",
        system_prompt=prompt,
        tools=our_tool_names(tuple(fm.tools)) if fm.tools is not None else None,
        model=model,
        scope=scope,
        path=path,
    )


def agent_slug(name: str) -> str:
    """``Code Reviewer`` → ``code-reviewer``: what a display name is dispatched as."""
    return re.sub(r"[^a-z0-9_.]+", "-", name.strip().lower()).strip("-_.")[:64]


def profile_files(directory: Path) -> list[Path]:
    """Every ``*.md`` under ``directory``, sub-folders too (hidden ones skipped), as Claude
    Code reads ``.claude/agents/team/builder.md``; sorted."""
    import os

    found: list[Path] = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(root) / n for n in sorted(names) if n.endswith(".md")]
    return found


def untrusted_view(spec: AgentSpec) -> AgentSpec:
    """An untrusted project profile keeps its prompt but not its tool grant (issue 7).

    Its tools are narrowed to the read-only ones (those it lists, or all of them when it
    lists none), so a cloned repository cannot hand a sub-agent tools of its choosing.
    """
    allowed: tuple[str, ...] = READ_ONLY_TOOLS
    if spec.tools is not None:
        from codingcode.tools.resolver import name_matches

        allowed = tuple(t for t in READ_ONLY_TOOLS if name_matches(t, spec.tools))
    if spec.tools is not None and set(spec.tools) <= set(allowed):
        return spec  # it asked for nothing beyond reading: nothing to ignore
    return AgentSpec(
        name=spec.name,
        description=spec.description,
        system_prompt=spec.system_prompt,
        tools=allowed,
        model=spec.model,
        scope=spec.scope,
        path=spec.path,
        ignored=(
            f"the tools of sub-agent profile {spec.path} are limited to read-only tools until "
            "you trust this project (`codingcode trust`)"
        ),
    )


def profile_dirs(project: Path) -> list[tuple[Scope, Path]]:
    """Where profiles are read, in order (a later one replaces an earlier one of the same
    name): Claude Code's folder of each level before ours."""
    from codingcode.dirs import claude_config_dir

    return [
        (Scope.USER, claude_config_dir() / "agents"),
        (Scope.USER, user_config_dir() / "agents"),
        (Scope.PROJECT, project / ".claude" / "agents"),
        (Scope.PROJECT, project / ".codingcode" / "agents"),
    ]


def our_tool_names(entries: tuple[str, ...]) -> tuple[str, ...]:
    """An agent's ``tools`` in our names: Claude Code's (``Read, Write, Edit, Bash``,
    ``mcp__github``) translated, ours and globs as they are."""
    from codingcode.tools.claude_names import translate_rule

    out: list[str] = []
    for entry in entries:
        for rule in translate_rule(entry):
            out.append(rule.partition("(")[0].strip())
    return tuple(dict.fromkeys(out))


#: The problems of the profile files last read, one line each, by project: a bad file is
#: skipped, never breaking the rest (shown by ``/agents`` and when a session starts).
SKIPPED: dict[Path, list[str]] = {}


def load_agents(workspace: Workspace) -> dict[str, AgentSpec]:
    """Every profile of the session's project by name: built-ins, then the user's, then the
    project's (Claude Code's folder, then ours, at each level).

    A project profile whose file the user has not trusted keeps only read-only tools
    (``Workspace.is_trusted`` of the very bytes parsed). A file that cannot be read as a
    profile is skipped, with one line in ``SKIPPED[project]``.
    """
    is_trusted = workspace.is_trusted
    agents = {a.name: a for a in BUILTIN_AGENTS}
    skipped = SKIPPED.setdefault(workspace.root, [])
    skipped.clear()
    for scope, directory in profile_dirs(workspace.root):
        if not directory.is_dir():
            continue
        for path in profile_files(directory):
            try:
                data = path.read_bytes()
                spec = parse_profile(path, scope, data)
            except (OSError, SettingsError) as exc:
                message = exc.message if isinstance(exc, SettingsError) else f"{path}: {exc}"
                line = " ".join(message.split())  # one line, whatever YAML said
                skipped.append(f"codingcode: skipped {line[:400]}")
                continue
            # Checked against the very bytes parsed: no window between check and use.
            if scope is Scope.PROJECT and not is_trusted(path, data):
                spec = untrusted_view(spec)
            agents[spec.name] = spec
    return agents
