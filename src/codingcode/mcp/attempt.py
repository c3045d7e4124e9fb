"""One run of an MCP server, from start to exit: its state, and how its failure is told.

:class:`~codingcode.mcp.connection.ServerConnection` starts a new :class:`Attempt` each
time the server is (re)started; what went wrong is said in one line, with the last lines
the server wrote on its stderr.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import IO, Any

import anyio

_STDERR_TAIL_LINES = 8


class ServerState(StrEnum):
    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"
    SKIPPED = "skipped"
    #: An HTTP server that wants an OAuth login nobody did (``codingcode mcp login NAME``).
    NEEDS_LOGIN = "needs login"


@dataclass
class Attempt:
    """One run of a server: from start to exit."""

    ready: anyio.Event = field(default_factory=anyio.Event)
    ended: anyio.Event = field(default_factory=anyio.Event)
    stop: anyio.Event = field(default_factory=anyio.Event)
    refresh: anyio.Event = field(default_factory=anyio.Event)
    client: Any = None
    error: str | None = None
    scope: anyio.CancelScope | None = None


def innermost(exc: BaseException) -> BaseException:
    """The one real error inside nested single-member exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def describe_failure(exc: BaseException, command: str) -> str:
    """Why a server did not start (``command``: how its entry starts it), in one line."""
    exc = innermost(exc)
    if isinstance(exc, FileNotFoundError):
        return f"could not start {exc.filename or command!r}: command not found"
    if isinstance(exc, OSError):
        return f"could not start: {exc.strerror or exc}"
    from mcp import MCPError

    if isinstance(exc, MCPError):
        return f"the server answered the handshake with an error: {exc}"
    return f"it failed to start: {type(exc).__name__}: {exc}"


def stderr_tail(errlog: IO[str]) -> str:
    """`` (its stderr ends: ...)`` with the last lines the server wrote, or ""."""
    try:
        errlog.flush()
        errlog.seek(0)
        lines = [ln for ln in errlog.read()[-4000:].splitlines() if ln.strip()]
    except (OSError, ValueError):
        return ""
    if not lines:
        return ""
    return " (its stderr ends: " + " | ".join(lines[-_STDERR_TAIL_LINES:]) + ")"
