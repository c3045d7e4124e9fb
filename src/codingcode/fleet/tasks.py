"""The task file: one JSON object a line (``codingcode fleet run TASKS.jsonl``).

A line that cannot be used (not JSON, a missing or unknown field, a duplicate id) is one
clear problem naming its line; the other tasks go on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from codingcode.errors import AgentError, ErrorKind


class FleetError(AgentError):
    """A fleet that cannot start or go on: bad task file, out dir in use, no engine."""

    kind = ErrorKind.INVALID_ARGUMENTS


#: A task id names its folder ``DIR/tasks/ID``: a plain file name.
_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"


class TaskSpec(BaseModel):
    """One task: a prompt for a headless session in a fresh copy of a project."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=_ID)
    prompt: str = Field(min_length=1)
    #: A local directory (copied; a git work tree is copied as it is, changes and all).
    project: str | None = None
    #: A git URL or path, cloned and checked out at ``ref`` (default: its HEAD).
    repo: str | None = None
    ref: str | None = None
    model: str | None = None
    mode: Literal["default", "acceptEdits", "plan", "bypass"] = "acceptEdits"
    allowed_tools: list[str] = Field(default_factory=list)
    max_turns: int | None = Field(default=None, ge=1, le=500)
    timeout_s: float | None = Field(default=None, gt=0)
    #: Merged over the user's settings for this task's session.
    settings: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_source(self) -> TaskSpec:
        if (self.project is None) == (self.repo is None):
            raise ValueError("give either `project` (a directory) or `repo` (and `ref`)")
        if self.ref is not None and self.repo is None:
            raise ValueError("`ref` goes with `repo`")
        return self

    def resolved(self, base: Path) -> TaskSpec:
        """Relative ``project``/``repo`` paths made absolute against the task file's folder
        (a remote node gets absolute paths; a URL stays as it is)."""
        update: dict[str, str] = {}
        if self.project is not None:
            update["project"] = str((base / Path(self.project).expanduser()).resolve())
        if self.repo is not None and not _is_url(self.repo):
            update["repo"] = str((base / Path(self.repo).expanduser()).resolve())
        return self.model_copy(update=update) if update else self


def _is_url(text: str) -> bool:
    return bool(re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text)) or bool(
        re.match(r"^[^/\s]+@[^/\s]+:", text)  # git@host:path
    )


@dataclass
class TaskFile:
    tasks: list[TaskSpec] = field(default_factory=list)
    #: One line per line that cannot be used: ``TASKS.jsonl:LINE: what is wrong``.
    problems: list[str] = field(default_factory=list)


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        if err["type"] == "missing":
            parts.append(f"missing field `{where}`")
        elif err["type"] == "extra_forbidden":
            parts.append(f"unknown field `{where}`")
        else:
            message = str(err["msg"]).removeprefix("Value error, ")
            parts.append(f"`{where}`: {message}" if where else message)
    return "; ".join(parts)


def parse_tasks(text: str, name: str, base: Path) -> TaskFile:
    out = TaskFile()
    seen: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{name}:{lineno}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            out.problems.append(f"{where}: not JSON ({exc.msg}, column {exc.colno})")
            continue
        if not isinstance(data, dict):
            out.problems.append(f"{where}: a task is a JSON object")
            continue
        try:
            task = TaskSpec.model_validate(data)
        except ValidationError as exc:
            label = f" (task {data['id']!r})" if isinstance(data.get("id"), str) else ""
            out.problems.append(f"{where}{label}: {_explain(exc)}")
            continue
        if task.id in seen:
            out.problems.append(
                f"{where}: duplicate id {task.id!r} (first on line {seen[task.id]}); skipped"
            )
            continue
        seen[task.id] = lineno
        out.tasks.append(task.resolved(base))
    return out


def load_tasks(path: Path) -> TaskFile:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FleetError(f"no task file {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise FleetError(f"cannot read {path}: {reason}") from None
    return parse_tasks(text, path.name, path.resolve().parent)
