"""The system prompt: who the agent is, where it runs, and the project's own instructions.

Order (documented in docs/agent.md, "What the model is told"):

1. the base prompt (what codingcode is and how it should work);
2. the environment: today's date, OS, shell, project root, git branch and whether the tree
   is dirty, the permission mode and what it means, the sandbox backend and whether commands
   reach the network, and how a cut tool output is read in full;
3. project instructions: the user's own ``~/.claude/CLAUDE.md`` and ``AGENTS.md`` and
   ``CLAUDE.md`` in the config dir, then from the repository root down to the project root,
   in each directory ``AGENTS.md``, ``CLAUDE.md`` and ``CLAUDE.local.md`` — each file once,
   also when one imports another. Later (more specific) files come last and win where they
   disagree;
4. text appended by the ``appendSystemPrompt`` setting, then by ``--append-system-prompt``.

``@path`` imports inside an instruction file are followed: relative to the importing file,
at most :data:`MAX_IMPORT_DEPTH` deep, only inside the repository (the user's file: inside
the config dir or the project), and only where the approval rules let ``read_file`` read the
file without asking (an ``@.env`` import is not read unasked: rule R9 asks).
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codingcode.workspace import Workspace

INSTRUCTION_NAMES = ("AGENTS.md", "CLAUDE.md")
#: In a project directory, also Claude Code's personal (git-ignored) instructions.
PROJECT_INSTRUCTION_NAMES = (*INSTRUCTION_NAMES, "CLAUDE.local.md")
MAX_IMPORT_DEPTH = 4
#: One instruction file is cut after this many characters; all of them after the total.
MAX_FILE_CHARS = 64_000
MAX_TOTAL_CHARS = 200_000
GIT_TIMEOUT_S = 3.0

BASE_PROMPT = """You are codingcode, a coding agent working in the project at {project}.
Use the tools to read, search, change and run the code; prefer small, verifiable steps.
Tool calls that can run independently may be requested together; they run in parallel.
Some calls need the user's approval and may be denied: then adapt, do not insist.
When the task is done, answer with a short summary of what you did and found."""

MODE_MEANINGS = {
    "default": "calls that change files or run commands may need the user's approval; "
    "a denied call is final for that call — adapt instead of retrying it.",
    "acceptEdits": "file edits inside the project pass without asking; other calls that "
    "change things may still need approval.",
    "plan": "read-only. Do not change files or run commands that change anything: "
    "investigate with the read-only tools, then present a plan for the user to approve.",
    "bypass": "approval is skipped for everything no rule decides; the preset safety rules "
    "still deny dangerous calls. Be careful.",
}

#: Decides whether an import may be read: (absolute path) -> None if yes, else the reason.
ImportCheck = Callable[[Path], "str | None"]


@dataclass
class Instruction:
    path: Path
    text: str
    #: "user" or "project".
    scope: str
    notes: list[str] = field(default_factory=list)


@dataclass
class Environment:
    date: str
    os: str
    shell: str
    project: Path
    git_branch: str | None
    git_dirty: bool | None
    mode: str
    sandbox: str
    network: bool
    spill_dir: Path | None = None
    tool_output_limit: int | None = None

    def render(self) -> str:
        lines = [
            "# Environment",
            f"- Today's date: {self.date}",
            f"- OS: {self.os}; shell for execute_command: {self.shell}",
            f"- Project root (the working directory): {self.project}",
        ]
        if self.git_branch is None:
            lines.append("- Git: not a git repository")
        else:
            state = {True: "uncommitted changes", False: "clean", None: "state unknown"}
            lines.append(f"- Git branch: {self.git_branch} ({state[self.git_dirty]})")
        meaning = MODE_MEANINGS.get(self.mode, "")
        lines.append(f"- Permission mode: {self.mode} — {meaning}")
        lines.append(f"- Sandbox: commands run in {self.sandbox}.")
        if self.network:
            lines.append("- Network: commands may reach the network.")
        else:
            lines.append(
                "- Network: commands have NO network access (downloads, package installs, "
                "git fetch fail). Do not retry them; use what is installed, or tell the user."
            )
        if self.tool_output_limit is not None:
            where = f" under {self.spill_dir}" if self.spill_dir is not None else ""
            lines.append(
                f"- A tool output longer than {self.tool_output_limit} characters is cut: you "
                f"see its head and tail and the path of a file{where} holding all of it; read "
                "that file with read_file (offset/limit) or search it with search_code."
            )
        return "\n".join(lines)


#: Outside the sandbox, git must not run what the repository's own configuration names.
_NO_PROGRAMS = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")


def git_facts(project: Path) -> tuple[str | None, bool | None]:
    """(branch, dirty) of the repository ``project`` is in; (None, None) outside one.

    These git calls run in codingcode itself, not in the sandbox: a hostile repository's
    ``.git/config`` (``core.fsmonitor``, a ``filter.*.clean`` driver, ...) would otherwise run
    its program unsandboxed before the first prompt. The fsmonitor and hooks are switched
    off, submodules are not entered, and a repository whose own configuration names any
    program git may run gets no ``status`` (dirty unknown)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *_NO_PROGRAMS, "-C", str(project), *args],
                capture_output=True,
                text=True,
                timeout=GIT_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    branch = git("rev-parse", "--abbrev-ref", "HEAD")
    if branch is None:
        # A fresh repository has no HEAD commit yet; ask for the symbolic ref.
        branch = git("symbolic-ref", "--short", "HEAD")
        if branch is None:
            return None, None
    if _repository_runs_programs(git("config", "--list", "--show-scope", "--name-only")):
        return branch.strip() or "(detached)", None
    status = git("status", "--porcelain", "--untracked-files=normal", "--ignore-submodules=all")
    return branch.strip() or "(detached)", None if status is None else bool(status.strip())


def _repository_runs_programs(listing: str | None) -> bool:
    """Whether the repository's own configuration (local, worktree and what they include; not
    the user's, nor our own ``-c``) names a program git runs."""
    from codingcode.sandbox.new_repos import EXECUTING_KEYS

    if listing is None:
        return True
    for line in listing.splitlines():
        scope, _, name = line.partition("\t")
        if scope in ("local", "worktree") and EXECUTING_KEYS.match(name.lower()):
            return True
    return False


def describe_sandbox(launcher: object) -> tuple[str, bool]:
    """(what commands run in, whether they reach the network) for the system prompt."""
    from codingcode.sandbox.policy import Network
    from codingcode.sandbox.service import SandboxService

    if not isinstance(launcher, SandboxService):
        return "no sandbox (direct processes)", True
    network = launcher.policy.network is Network.ALLOW
    try:
        backend = launcher.backend()
    except Exception as exc:  # no sandbox available: commands will be refused
        return f"no available sandbox — commands are refused ({exc})", network
    name = getattr(backend, "name", "a sandbox")
    if name == "none":
        return "NO sandbox (the settings turned it off)", True
    limited = ""
    if launcher.policy.network is Network.LIMITED and name == "bubblewrap":
        # Limited network (issue 16): only the listed names, through codingcode's proxy.
        allowed = launcher.policy.domains.allowed
        shown = ", ".join(allowed[:20]) + (" ..." if len(allowed) > 20 else "")
        limited = (
            f"; network ONLY to these domains, through codingcode's proxy: {shown or 'none'} "
            "(a blocked name is reported in the result: ask the user to allow it, do not "
            "work around it)"
        )
        network = True
    return (
        f"the {name} sandbox: writes only inside the project and a private /tmp, "
        f"secrets masked, no privilege gain{limited}",
        network,
    )


def repository_root(project: Path) -> Path:
    """The nearest ancestor (or ``project``) holding ``.git``; ``project`` if there is none."""
    for d in (project, *project.parents):
        if (d / ".git").exists():
            return d
    return project


def _pick(directory: Path, names: tuple[str, ...] = INSTRUCTION_NAMES) -> list[Path]:
    """Every instruction file of ``directory``, in order (``AGENTS.md``, ``CLAUDE.md``,
    ``CLAUDE.local.md``): each is read once, also when one imports another."""
    return [directory / name for name in names if (directory / name).is_file()]


_CODE_FENCE = re.compile(r"^\s*(```|~~~)")
_IMPORT = re.compile(r"(?:(?<=\s)|^)@([^\s`'\"<>|]+)")


def _import_targets(text: str) -> list[str]:
    """The ``@path`` imports of a file, outside code fences and inline code spans."""
    found: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _CODE_FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        plain = re.sub(r"`[^`]*`", "", line)
        for m in _IMPORT.finditer(plain):
            target = m.group(1).rstrip(".,;:!?)]}")
            if target:
                found.append(target)
    return found


def _read_text(path: Path, limit: int) -> str:
    with path.open("rb") as f:
        data = f.read(limit + 1)
    text = data[:limit].decode("utf-8", errors="replace")
    if len(data) > limit:
        text += f"\n[... {path.name} cut at {limit} bytes]"
    return text


def load_instructions(
    workspace: Workspace, *, check: ImportCheck | None = None
) -> list[Instruction]:
    """The instruction files of ``workspace`` in prompt order, imports followed (see module
    doc): the user's (Claude Code's, then those in the workspace's config dir), then the
    project's."""
    project, user_dir = workspace.root, workspace.config_dir  # (the root is resolved)
    repo = repository_root(project)
    chain = [d for d in (project, *project.parents) if d == repo or repo in d.parents]
    chain.reverse()  # repository root first, the project last
    from codingcode.dirs import claude_config_dir

    found: list[tuple[Path, str, Path]] = []
    claude_dir = claude_config_dir()
    for directory in (claude_dir, user_dir):  # Claude Code's own user file, then ours
        if directory.is_dir():
            names = ("CLAUDE.md",) if directory == claude_dir else INSTRUCTION_NAMES
            found += [(f, "user", directory) for f in _pick(directory, names)]
    for d in chain:
        found += [(f, "project", repo) for f in _pick(d, PROJECT_INSTRUCTION_NAMES)]
    budget = [MAX_TOTAL_CHARS]
    seen: set[Path] = set()
    out: list[Instruction] = []
    for path, scope, base in found:
        roots = [base.resolve(), project] if scope == "user" else [repo]
        item = _load_one(path, scope, roots, check, seen, budget, depth=0)
        if item is not None:
            out.append(item)
    return out


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def _load_one(
    path: Path,
    scope: str,
    roots: list[Path],
    check: ImportCheck | None,
    seen: set[Path],
    budget: list[int],
    depth: int,
) -> Instruction | None:
    try:
        real = path.resolve()
        if real in seen or budget[0] <= 0:
            return None
        seen.add(real)
        text = _read_text(real, min(MAX_FILE_CHARS, budget[0]))
    except OSError as exc:
        return Instruction(path, f"[{path} could not be read: {exc.strerror}]", scope)
    budget[0] -= len(text)
    item = Instruction(path, text, scope)
    parts = [text]
    for target in _import_targets(text):
        shown = f"@{target}"
        if depth + 1 > MAX_IMPORT_DEPTH:
            item.notes.append(f"{shown} not imported: imports nest at most {MAX_IMPORT_DEPTH} deep")
            continue
        raw = Path(os.path.expanduser(target)) if scope == "user" else Path(target)
        candidate = raw if raw.is_absolute() else path.parent / raw
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):
            continue
        if not resolved.is_file():
            continue  # not a path (an @mention, an e-mail, ...): left as text
        if resolved in seen:
            continue
        if not _inside(resolved, roots):
            item.notes.append(f"{shown} not imported: it is outside the project")
            continue
        refusal = check(resolved) if check is not None else None
        if refusal is not None:
            item.notes.append(f"{shown} not imported: {refusal}")
            continue
        sub = _load_one(resolved, scope, roots, check, seen, budget, depth + 1)
        if sub is not None:
            parts.append(f"\n--- imported from {shown} ---\n{sub.text}")
            item.notes.extend(sub.notes)
    item.text = "\n".join(parts)
    return item


def render_instructions(items: list[Instruction]) -> str:
    if not items:
        return ""
    blocks = [
        "# Project instructions",
        "Follow these instructions from the user and the project (later, more specific files "
        "take precedence where they disagree).",
    ]
    for item in items:
        label = "user instructions" if item.scope == "user" else "project instructions"
        blocks.append(f"## {item.path} ({label})\n{item.text.strip()}")
        blocks.extend(f"[{n}]" for n in item.notes)
    return "\n\n".join(blocks)


def environment(
    project: Path,
    *,
    mode: str,
    launcher: object,
    spill_dir: Path | None = None,
    tool_output_limit: int | None = None,
    today: datetime.date | None = None,
) -> Environment:
    branch, dirty = git_facts(project)
    sandbox, network = describe_sandbox(launcher)
    system = platform.system()
    os_name = f"{system} {platform.release()}" if system else "unknown"
    return Environment(
        date=(today or datetime.date.today()).isoformat(),
        os=os_name,
        shell="bash",
        project=project,
        git_branch=branch,
        git_dirty=dirty,
        mode=mode,
        sandbox=sandbox,
        network=network,
        spill_dir=spill_dir,
        tool_output_limit=tool_output_limit,
    )


def build_system_prompt(
    base: str,
    env: Environment,
    instructions: list[Instruction],
    appended: list[str],
) -> str:
    parts = [base.strip(), env.render()]
    rendered = render_instructions(instructions)
    if rendered:
        parts.append(rendered)
    parts.extend(a.strip() for a in appended if a and a.strip())
    return "\n\n".join(parts)
