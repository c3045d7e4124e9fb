"""The runner's side of checkpoints: one before every call that can change the project.

A failure of the store (a corrupt store, a read-only state dir, a full disk, no git) never
stops the agent: checkpoints switch off for the rest of the session and one line says so.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codingcode.checkpoints.git import CheckpointError
from codingcode.checkpoints.store import (
    MAX_AGE_DAYS,
    MAX_FILE_SIZE_MB,
    MAX_FILES,
    MAX_STORE_MB,
    Checkpoint,
    CheckpointStore,
)
from codingcode.config import Settings, SettingsError
from codingcode.tools.definition import ToolDefinition

if TYPE_CHECKING:
    from codingcode.workspace import Workspace

#: A call with these effects can change the project: it gets a checkpoint first.
MUTATING_EFFECTS = frozenset({"writes", "runs"})


def is_mutating(definition: ToolDefinition) -> bool:
    """Whether a call of this tool can change files (undeclared effects: unless read-only)."""
    if definition.effects is None:
        return not definition.annotations.read_only
    return bool(definition.effects & MUTATING_EFFECTS)


def _notice_to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class CheckpointRecorder:
    store: CheckpointStore
    notice: Callable[[str], None] = _notice_to_stderr
    enabled: bool = True
    taken: list[Checkpoint] = field(default_factory=list)

    def _off(self, error: CheckpointError) -> None:
        if self.enabled:
            self.enabled = False
            self.notice(f"codingcode: checkpoints are off for this session: {error.message}")

    async def before(
        self, definition: ToolDefinition, args: dict[str, Any], session: str, turn: int
    ) -> Checkpoint | None:
        if not self.enabled or not is_mutating(definition):
            return None
        summary = _summary(args)
        try:
            point = await anyio.to_thread.run_sync(
                lambda: self.store.checkpoint(
                    session=session, turn=turn, tool=definition.name, summary=summary
                )
            )
        except CheckpointError as exc:
            self._off(exc)
            return None
        except OSError as exc:
            self._off(CheckpointError(f"{exc.strerror or exc}"))
            return None
        self.taken.append(point)
        return point

    async def after(self, point: Checkpoint | None) -> None:
        if point is None or not self.enabled:
            return
        try:
            await anyio.to_thread.run_sync(self.store.record_after, point)
        except CheckpointError as exc:
            self._off(exc)
        except OSError as exc:
            self._off(CheckpointError(f"{exc.strerror or exc}"))


def _summary(args: dict[str, Any]) -> str:
    for key in ("command", "path"):
        value = args.get(key)
        if isinstance(value, str):
            return value.replace("\n", " ")[:200]
    return ", ".join(f"{k}={str(v)[:40]}" for k, v in list(args.items())[:3])


class CheckpointSettings(BaseModel):
    """The ``checkpoints`` section of the settings files."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    maxFileSizeMB: float = Field(default=MAX_FILE_SIZE_MB, gt=0)
    maxFiles: int = Field(default=MAX_FILES, gt=0)
    maxAgeDays: float = Field(default=MAX_AGE_DAYS, gt=0)
    maxStoreMB: float = Field(default=MAX_STORE_MB, gt=0)


def checkpoint_settings(settings: Settings) -> CheckpointSettings:
    """The merged ``checkpoints`` settings; a bad entry names its file and field."""
    merged: dict[str, Any] = {}
    for source, value in settings.sources("checkpoints"):
        try:
            CheckpointSettings.model_validate(value)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(x) for x in first["loc"])
            where = f"checkpoints.{where}" if where else "checkpoints"
            raise SettingsError(f"{source.path}: {where}: {first['msg']}.") from None
        merged.update(value)
    return CheckpointSettings.model_validate(merged)


def recorder_for(workspace: Workspace) -> CheckpointRecorder | None:
    """The recorder the workspace's ``checkpoints`` settings ask for (``None``: switched off)."""
    config = checkpoint_settings(workspace.settings)
    if not config.enabled:
        return None
    store = CheckpointStore(
        workspace.root,
        workspace.state_dir,
        max_file_size=int(config.maxFileSizeMB * 1024 * 1024),
        max_files=config.maxFiles,
        watch=True,  # a session's store learns what changed from inotify
    )
    return CheckpointRecorder(store)
