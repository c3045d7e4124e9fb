"""One function runs a tool call for everyone: validate → approve → execute.

The CLI's ``codingcode tool``, the agent loop, sub-agents and the MCP server all run calls
through :class:`ToolRunner`, so there is exactly one path from "the model asked" to "the
tool ran", and every guard sits on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codingcode.tools.definition import ToolExecCtx
from codingcode.tools.service import ToolService

PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypass")


@dataclass
class ToolRunner:
    service: ToolService
    project_path: Path
    mode: str = "default"
    session_id: str = "default"
    launcher: Any = None
    _turn: int = field(default=0, init=False)

    def context(self, **overrides: Any) -> ToolExecCtx:
        values: dict[str, Any] = {
            "project_path": self.project_path,
            "session_id": self.session_id,
            "turn_id": self._turn,
            "launcher": self.launcher,
        }
        values.update(overrides)
        return ToolExecCtx(**values)

    async def run(self, name: str, args: Any, ctx: ToolExecCtx | None = None) -> str:
        """Validate, then execute one call; raises AgentError on every expected failure."""
        ctx = ctx or self.context()
        definition, model = self.service.validate(name, args)
        return await self.service.execute(definition, model, ctx)


def build_runner(
    project: Path,
    *,
    mode: str = "default",
    session_id: str = "default",
    service: ToolService | None = None,
) -> ToolRunner:
    """The runner every front end uses for a project: its settings, approval and sandbox."""
    return ToolRunner(service or ToolService.default(), project, mode=mode, session_id=session_id)
