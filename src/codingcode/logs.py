"""Library logs as one line each (an exception as its type and message), rate-limited.

Used by ``codingcode mcp`` (the server) and the MCP client so that a misbehaving peer never
prints a traceback: :func:`quiet_logging` routes the named loggers through
:class:`OneLineHandler`, at most :data:`LOG_BURST` lines per :data:`LOG_WINDOW_S` seconds.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import TextIO

LOG_BURST = 5
LOG_WINDOW_S = 10.0


class OneLineHandler(logging.Handler):
    """Each record as one line (an exception as its type and message), rate-limited."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(logging.WARNING)
        self.stream = stream
        self._window = 0.0
        self._count = 0
        self._dropped = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            now = time.monotonic()
            if now - self._window >= LOG_WINDOW_S:
                if self._dropped:
                    self._write(f"[{self._dropped} more log lines left out]")
                self._window, self._count, self._dropped = now, 0, 0
            self._count += 1
            if self._count > LOG_BURST:
                self._dropped += 1
                return
            text = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                text += f": {type(exc).__name__}: {exc}"
            self._write(f"codingcode MCP: {' '.join(text.split())[:300]}")
        except Exception:  # logging must never take the server down
            return

    def _write(self, line: str) -> None:
        stream = self.stream or sys.stderr
        stream.write(line + "\n")
        stream.flush()


_QUIET_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "asyncio", "mcp", "starlette")


def quiet_logging(
    stream: TextIO | None = None, names: tuple[str, ...] = _QUIET_LOGGERS
) -> Callable[[], None]:
    """Route the libraries' logs (``names``) through one rate-limited one-line handler;
    returns the function that puts the loggers back as they were."""
    handler = OneLineHandler(stream)
    saved: list[tuple[logging.Logger, list[logging.Handler], bool, int]] = []
    for name in names:
        log = logging.getLogger(name)
        saved.append((log, list(log.handlers), log.propagate, log.level))
        for old in list(log.handlers):
            log.removeHandler(old)
        log.addHandler(handler)
        log.propagate = False
        if log.level == logging.NOTSET or log.level < logging.WARNING:
            log.setLevel(logging.WARNING)

    def restore() -> None:
        for log, handlers, propagate, level in saved:
            log.removeHandler(handler)
            for h in handlers:
                log.addHandler(h)
            log.propagate = propagate
            log.setLevel(level)

    return restore
