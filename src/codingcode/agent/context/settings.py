"""The agent's own settings keys (validated here, so an error names the file and the key).

- ``appendSystemPrompt`` (string): text appended to the system prompt (before
  ``--append-system-prompt``'s). Every file's value is used, in settings order.
- ``contextWindow`` (integer, tokens): the model's context window, overriding the table in
  :mod:`codingcode.agent.context.tokens`.
- ``compactThreshold`` (number 0.3-0.95, default 0.8): compact the conversation once a
  request would use this share of the context window.
- ``toolOutputLimit`` (integer, characters, default 30000): longer tool outputs are saved
  to a file and the model gets a preview and the path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codingcode.config import SettingsError

if TYPE_CHECKING:
    from codingcode.workspace import Workspace

DEFAULT_TOOL_OUTPUT_LIMIT = 30_000
MIN_TOOL_OUTPUT_LIMIT = 1_000
DEFAULT_COMPACT_THRESHOLD = 0.8


@dataclass
class AgentSettings:
    append_system_prompt: list[str] = field(default_factory=list)
    context_window: int | None = None
    compact_threshold: float = DEFAULT_COMPACT_THRESHOLD
    tool_output_limit: int = DEFAULT_TOOL_OUTPUT_LIMIT


def load_agent_settings(workspace: Workspace) -> AgentSettings:
    """The agent's own settings keys, from the session's settings files."""
    settings = workspace.settings
    out = AgentSettings()
    for f, value in settings.sources("appendSystemPrompt"):
        if not isinstance(value, str):
            raise SettingsError(f"Settings file {f.path}: `appendSystemPrompt` must be a string.")
        out.append_system_prompt.append(value)
    for f, value in settings.sources("contextWindow"):
        if isinstance(value, bool) or not isinstance(value, int) or not 1_000 <= value <= 10**8:
            raise SettingsError(
                f"Settings file {f.path}: `contextWindow` must be a whole number of tokens "
                "between 1000 and 100000000."
            )
        out.context_window = value
    for f, value in settings.sources("compactThreshold"):
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not 0.3 <= value <= 0.95
        ):
            raise SettingsError(
                f"Settings file {f.path}: `compactThreshold` must be a number from 0.3 to 0.95 "
                "(the share of the context window at which the conversation is compacted)."
            )
        out.compact_threshold = float(value)
    for f, value in settings.sources("toolOutputLimit"):
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not MIN_TOOL_OUTPUT_LIMIT <= value <= 10**7
        ):
            raise SettingsError(
                f"Settings file {f.path}: `toolOutputLimit` must be a whole number of "
                f"characters between {MIN_TOOL_OUTPUT_LIMIT} and 10000000."
            )
        out.tool_output_limit = value
    return out
