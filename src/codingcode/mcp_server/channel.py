"""The channel a tool call has back to the MCP client that made it (``ToolExecCtx.mcp``).

Logging follows the level the client set with ``logging/setLevel`` (per session; nothing is
sent until a client asks, as the spec allows); progress goes to the request's
``progressToken`` (nothing when the client gave none); sampling and elicitation are
server-to-client requests the client must have declared the capability for.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from codingcode.errors import InvalidArgumentsError, ToolFailureError

#: RFC 5424 severities, as MCP names them, least severe first.
LOG_LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


def level_rank(level: str) -> int:
    try:
        return LOG_LEVELS.index(level)
    except ValueError:
        raise InvalidArgumentsError(
            f"Unknown log level {level!r}; one of {', '.join(LOG_LEVELS)}."
        ) from None


@dataclass
class RequestChannel:
    """One ``tools/call``'s way back to its client (implements McpRequestChannel)."""

    request_ctx: Any
    #: The least severe level the client wants (None: it never called logging/setLevel).
    min_level: str | None = None
    #: Whether the tool reported progress itself (then the server's heartbeat stops).
    reported: bool = False

    @property
    def _session(self) -> Any:
        return self.request_ctx.session

    def _caps(self) -> Any:
        return getattr(self._session, "client_capabilities", None)

    async def log(self, level: str, data: Any) -> None:
        rank = level_rank(level)
        if self.min_level is None or rank < level_rank(self.min_level):
            return
        with warnings.catch_warnings():  # deprecated by 2026-07-28, not by our clients' 2025-11-25
            warnings.simplefilter("ignore")
            await self._session.send_log_message(
                level=level,  # checked by level_rank
                data=data,
                logger="codingcode",
                related_request_id=self.request_ctx.request_id,
            )

    async def progress(self, progress: float, total: float | None = None) -> None:
        self.reported = True
        await self.send_progress(progress, total)

    async def send_progress(self, progress: float, total: float | None) -> None:
        meta = self.request_ctx.meta  # a TypedDict (a dict) in mcp 2.x
        token = meta.get("progress_token") if isinstance(meta, dict) else None
        if token is None:
            return
        await self._session.send_progress_notification(
            progress_token=token,
            progress=progress,
            total=total,
            related_request_id=self.request_ctx.request_id,
        )

    async def sample(self, messages: list[dict[str, Any]], max_tokens: int) -> dict[str, Any]:
        caps = self._caps()
        if caps is None or caps.sampling is None:
            raise ToolFailureError("The MCP client did not declare sampling; cannot ask it.")
        try:
            parsed = [types.SamplingMessage.model_validate(m) for m in messages]
        except ValueError as exc:
            raise InvalidArgumentsError(f"Not MCP sampling messages: {exc}") from None
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(messages=parsed, max_tokens=max_tokens)
        )
        self._can_ask("sampling")
        try:
            result = await self._session.send_request(
                request, types.CreateMessageResult, metadata=_related(self.request_ctx)
            )
        except Exception as exc:  # the client's error, or its connection went
            raise ToolFailureError(
                f"The MCP client did not answer the sampling request: {exc}"
            ) from None
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    async def elicit(self, message: str, requested_schema: dict[str, Any]) -> dict[str, Any]:
        caps = self._caps()
        if caps is None or caps.elicitation is None:
            raise ToolFailureError("The MCP client did not declare elicitation; cannot ask it.")
        self._can_ask("elicitation")
        try:
            result = await self._session.elicit_form(
                message,
                requested_schema,  # the wire form, as given
                related_request_id=self.request_ctx.request_id,
            )
        except Exception as exc:
            raise ToolFailureError(
                f"The MCP client did not answer the elicitation: {exc}"
            ) from None
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    def _can_ask(self, what: str) -> None:
        if not getattr(self._session, "can_send_request", True):
            raise ToolFailureError(
                f"This MCP connection cannot carry a server-to-client {what} request "
                "(2026-07-28 protocol); use the handshake protocol (2025-11-25)."
            )

    def close_sse_stream(self) -> None:
        close = getattr(self.request_ctx, "close_sse_stream", None)
        if close is not None:
            close()


def _related(request_ctx: Any) -> Any:
    from mcp.shared.message import ServerMessageMetadata

    return ServerMessageMetadata(related_request_id=request_ctx.request_id)
