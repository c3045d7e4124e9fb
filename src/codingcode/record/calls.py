"""The runner's record step: one call's outcome, written when its ``with`` block ends."""

from __future__ import annotations

import re
import time
from types import TracebackType
from typing import TYPE_CHECKING

from codingcode.approval.pipeline import ToolCall
from codingcode.errors import AgentError, DeniedError, ErrorKind

if TYPE_CHECKING:
    from codingcode.approval.pipeline import Decision
    from codingcode.record.audit import AuditLog, Outcome


_EXIT_LINE = re.compile(r"^Exit code: (-?\d+)$")


def reported_exit_code(text: str) -> int | None:
    """The exit code a command tool reports in its result's header (``Exit code: N``).

    Only the lines before the command's own output (``--- stdout ---``) count, so output
    that prints such a line is never mistaken for it.
    """
    for line in text[:4096].splitlines()[:8]:
        if line.startswith("--- "):
            return None
        match = _EXIT_LINE.match(line)
        if match:
            return int(match.group(1))
    return None


class CallTracker:
    """Records one call's outcome when its ``with`` block ends (the runner's record step).

    Inside the block the runner sets :attr:`decision`, calls :meth:`started` just before the
    tool executes and :meth:`finished` with its result. The block's end records ``ran``,
    ``denied`` (a decision that was not allow), ``cancelled`` or ``failed``; an exception
    passes on unchanged. With no log (``None``) it records nothing.
    """

    def __init__(self, log: AuditLog | None, call: ToolCall, reports_exit_code: bool) -> None:
        self.log = log
        self.call = call
        self.reports_exit_code = reports_exit_code
        self.decision: Decision | None = None
        self._start: float | None = None
        self._result: str | None = None

    def __enter__(self) -> CallTracker:
        return self

    def started(self) -> None:
        self._start = time.monotonic()

    def finished(self, result: str) -> None:
        self._result = result

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.log is None:
            return
        duration = None if self._start is None else time.monotonic() - self._start
        if exc is None and self._result is not None:
            self.log.record_outcome(
                self.call,
                self.decision,
                "ran",
                exit_code=reported_exit_code(self._result) if self.reports_exit_code else None,
                duration_s=duration,
                result_bytes=len(self._result.encode("utf-8", "surrogatepass")),
            )
            return
        if exc is None:
            return  # nothing ran and nothing failed (a caller that stopped early)
        if self._start is None and self.decision is not None and not self.decision.allowed:
            outcome: Outcome = "denied"
        elif _is_cancellation(exc):
            outcome = "cancelled"  # while it ran, or while it was being decided (a question)
        elif self._start is None and self.decision is None and isinstance(exc, DeniedError):
            outcome = "denied"  # refused before any decision (a layer said no by raising)
        else:
            outcome = "failed"
        size = None
        if isinstance(exc, AgentError):
            size = len(exc.message.encode("utf-8", "surrogatepass"))
        self.log.record_outcome(
            self.call,
            self.decision,
            outcome,
            error=exc,
            exit_code=_error_exit_code(exc) if self.reports_exit_code else None,
            duration_s=duration,
            result_bytes=size,
        )


def _is_cancellation(exc: BaseException) -> bool:
    import anyio

    if isinstance(exc, AgentError):
        return exc.kind is ErrorKind.CANCELLED
    return isinstance(exc, (KeyboardInterrupt, anyio.get_cancelled_exc_class()))


def _error_exit_code(exc: BaseException) -> int | None:
    return reported_exit_code(exc.message) if isinstance(exc, AgentError) else None
