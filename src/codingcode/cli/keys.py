"""Keys read while a turn runs: Esc interrupts the model, typed-ahead text is kept.

Between prompts the terminal is in its normal (cooked) mode and nobody reads it, so Esc
would do nothing and what the user types ahead would be echoed over the model's output.
While a turn runs, :class:`TurnKeys` puts the terminal in cbreak mode (no echo, keys one by
one; Ctrl-C still raises SIGINT, which the turn's own handler catches) and reads it on the
event loop: a lone Esc calls ``on_escape``; printable keys are kept for the next prompt.
A question (approval) pauses it, so prompt_toolkit has the terminal to itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import termios
import tty
from collections.abc import Callable, Iterator
from typing import Any

#: An Esc not followed by more bytes within this time is the Esc key (not an arrow's prefix).
ESC_WAIT_S = 0.05


class TurnKeys:
    """Reads the terminal while a turn runs (does nothing when stdin is not a terminal)."""

    def __init__(self, on_escape: Callable[[], None]) -> None:
        self.on_escape = on_escape
        #: Printable text typed during the turn, offered as the next prompt's start.
        self.typed = ""
        self._fd: int | None = None
        self._saved: list[Any] | None = None
        self._pending: asyncio.TimerHandle | None = None

    def start(self) -> None:
        if self._fd is not None:
            return
        try:
            fd = sys.stdin.fileno()
            if not os.isatty(fd):
                return
            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd, termios.TCSANOW)
            asyncio.get_running_loop().add_reader(fd, self._readable)
        except (OSError, ValueError, termios.error, RuntimeError):
            self._restore()
            return
        self._fd = fd

    def stop(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(RuntimeError, ValueError):
            asyncio.get_running_loop().remove_reader(self._fd)
        self._cancel_pending()
        self._restore()
        self._fd = None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Give the terminal back (cooked) for a question, then read it again."""
        running = self._fd is not None
        self.stop()
        try:
            yield
        finally:
            if running:
                self.start()

    def _restore(self) -> None:
        if self._saved is not None:
            with contextlib.suppress(OSError, ValueError, termios.error):
                termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._saved)
        self._saved = None

    def _cancel_pending(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def _readable(self) -> None:
        assert self._fd is not None
        try:
            data = os.read(self._fd, 1024)
        except OSError:
            self.stop()
            return
        if not data:
            self.stop()  # end of input: nothing more to read
            return
        if self._pending is not None:
            self._cancel_pending()  # the Esc began a sequence (an arrow key, …)
            return
        if data == b"\x1b":
            self._pending = asyncio.get_running_loop().call_later(ESC_WAIT_S, self._escape)
            return
        if data.startswith(b"\x1b"):
            return  # a whole escape sequence: a cursor key, not a request to stop
        text = data.decode(errors="ignore")
        self.typed += "".join(c for c in text if c.isprintable())
        if "\x7f" in text:  # backspace edits what was typed ahead
            self.typed = self.typed[:-1]

    def _escape(self) -> None:
        self._pending = None
        self.on_escape()

    def take_typed(self) -> str:
        typed, self.typed = self.typed, ""
        return typed
