"""What a connected MCP server asks of us, and tells us: elicitation, log messages, the
roots we announce (the project, nothing else), and notifications (tools changed, a
subscribed resource updated). Handed to the SDK ``Client`` by
:class:`~codingcode.mcp.connection.ServerConnection`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types

from codingcode.mcp.attempt import Attempt
from codingcode.mcp.config import McpServerConfig

#: At most this many updated resource URIs are remembered per server.
MAX_UPDATED = 10_000


class ServerRequests:
    """The callbacks of one server's session."""

    def __init__(self, config: McpServerConfig, project: Path, updated: set[str]) -> None:
        self.config = config
        self.name = config.name
        self.project = project
        #: Resource URIs the server said changed (shared with the connection).
        self.updated = updated

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        from codingcode.mcp.interaction import current

        policy = self.config.entry.elicitation
        if policy == "decline" or not isinstance(params, types.ElicitRequestFormParams):
            return types.ElicitResult(action="decline")  # URL mode: we open no server's page
        schema = dict(params.requested_schema)
        return await current().elicit(self.name, params.message, schema, policy)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        from codingcode.mcp.interaction import current

        current().log(self.name, str(params.level), params.logger, params.data)

    async def roots(self, context: Any) -> types.ListRootsResult:
        """The roots we announce: the project, nothing else."""
        root = types.Root(uri=self.project.resolve().as_uri(), name=self.project.name)  # type: ignore[arg-type]
        return types.ListRootsResult(roots=[root])

    def message_handler(self, attempt: Attempt) -> Callable[[Any], Awaitable[None]]:
        """Notifications: tools/list_changed asks the attempt's refresher to re-list (no
        request runs inside the handler); resources/updated is remembered."""

        async def handle(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                attempt.refresh.set()
            elif (
                isinstance(message, types.ResourceUpdatedNotification)
                and len(self.updated) < MAX_UPDATED
            ):
                self.updated.add(str(message.params.uri))
            await anyio.lowlevel.checkpoint()

        return handle
