"""Checkpoints: every change the agent makes to a project can be undone (docs/sessions.md)."""

from codingcode.checkpoints.git import CheckpointError
from codingcode.checkpoints.store import Checkpoint, CheckpointStore, UnknownCheckpointError

__all__ = ["Checkpoint", "CheckpointError", "CheckpointStore", "UnknownCheckpointError"]
