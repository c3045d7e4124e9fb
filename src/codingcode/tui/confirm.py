"""The confirmation question on a plain terminal (``codingcode tool`` on a terminal): the
pipeline's :class:`~codingcode.approval.confirm.Confirmer` read from stdin."""

from __future__ import annotations

import sys
from typing import TextIO

from codingcode.approval.confirm import Answer, ConfirmRequest, Reply, offered, question_text


class TerminalConfirmer:
    """Asks on the terminal with plain lines (``codingcode tool`` on a terminal)."""

    def __init__(self, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self._in = stdin or sys.stdin
        self._out = stdout or sys.stderr

    @staticmethod
    def available() -> bool:
        return sys.stdin.isatty() and sys.stderr.isatty()

    async def confirm(self, request: ConfirmRequest) -> Reply:
        import anyio

        return await anyio.to_thread.run_sync(self._ask, request)

    def _ask(self, request: ConfirmRequest) -> Reply:
        out = self._out
        color = bool(getattr(out, "isatty", lambda: False)())
        out.write("\n" + question_text(request, color=color) + "\n")
        choices = {k: a for k, a, _ in offered(request)}
        out.write(f"Allow? [{'/'.join(choices)}] (default n) ")
        out.flush()
        reply = self._in.readline().strip().lower()
        words = {"yes": "y", "no": "n", "allow": "y", "deny": "n", "session": "s"}
        words |= {"always": "p", "never": "n"}
        key = words.get(reply, reply)
        if key not in choices:
            return Reply(Answer.DENY)
        answer = choices[key]
        if key == "t":
            out.write("Tell the model: ")
            out.flush()
            message = self._in.readline().strip()
            return Reply(Answer.DENY, message=message or None)
        if answer.grants and request.suggested_rule:
            out.write(f"Rule [{request.suggested_rule}] (Enter to keep, or type a narrower one): ")
            out.flush()
            edited = self._in.readline().strip()
            return Reply(answer, rule=edited or None)
        return Reply(answer)
