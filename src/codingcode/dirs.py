"""Where codingcode keeps the user's config and its own state (no imports of its own: the
settings, trust and audit modules all start from here)."""

from __future__ import annotations

import os
from pathlib import Path

USER_CONFIG_ENV = "CODINGCODE_CONFIG_DIR"
USER_STATE_ENV = "CODINGCODE_STATE_DIR"
#: Claude Code's own variable for where its user files are (default ``~/.claude``).
CLAUDE_CONFIG_ENV = "CLAUDE_CONFIG_DIR"


def user_config_dir() -> Path:
    """The user's config dir (``$CODINGCODE_CONFIG_DIR`` overrides, for tests and CI)."""
    override = os.environ.get(USER_CONFIG_ENV)
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_config_dir("codingcode"))


def user_state_dir() -> Path:
    """Where codingcode keeps state of its own (audit log, trust records)."""
    override = os.environ.get(USER_STATE_ENV)
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_state_dir("codingcode"))


def claude_config_dir() -> Path:
    """Claude Code's user directory (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``): its
    ``settings.json`` and ``agents/`` are read beside codingcode's own."""
    override = os.environ.get(CLAUDE_CONFIG_ENV)
    if override:
        return Path(override)
    return Path.home() / ".claude"
