"""The permission modes (SPEC M1–M4). A leaf module: the CLI reads it without importing the rest."""

from __future__ import annotations

from typing import Literal

PermissionMode = Literal["default", "acceptEdits", "plan", "bypass"]
PERMISSION_MODES: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan", "bypass")
