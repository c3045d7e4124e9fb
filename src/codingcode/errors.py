"""The one error type a tool call can fail with, and its kinds.

Every expected failure of a tool call is an :class:`AgentError`. Its message is written
for two readers at once: the model, which must be able to correct its next call from it,
and the user, who sees it in the terminal. Unexpected exceptions are bugs; the service
wraps them as ``tool_failure`` so a single broken tool never takes the session down.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorKind(StrEnum):
    INVALID_ARGUMENTS = "invalid_arguments"
    NOT_FOUND = "not_found"
    DENIED = "denied"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    TOOL_FAILURE = "tool_failure"


class AgentError(Exception):
    """An expected failure of a tool call, with a message for the model and the user."""

    kind: ErrorKind = ErrorKind.TOOL_FAILURE

    def __init__(self, message: str, *, kind: ErrorKind | None = None) -> None:
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind.value}: {self.message!r})"


class InvalidArgumentsError(AgentError):
    kind = ErrorKind.INVALID_ARGUMENTS


class NotFoundError(AgentError):
    kind = ErrorKind.NOT_FOUND


class UnknownToolError(NotFoundError):
    """No tool of that name: bad input to whoever asked, not a failed call."""


class DeniedError(AgentError):
    kind = ErrorKind.DENIED


class ToolTimeoutError(AgentError):
    kind = ErrorKind.TIMEOUT


class CancelledError(AgentError):
    """The call was cancelled (by the user or the signal) before it finished."""

    kind = ErrorKind.CANCELLED


class ToolFailureError(AgentError):
    kind = ErrorKind.TOOL_FAILURE
