"""Keys read while a turn runs: Esc interrupts the model, keys typed ahead are kept.

Between prompts nobody reads the terminal, so Esc would do nothing and what the user types
ahead would be echoed over the model's output. While a turn runs, :class:`TurnKeys` puts the
terminal in a raw-like mode (no echo, keys one by one, Enter read as ``\\r`` as at the prompt;
signals stay on, so Ctrl-C still raises SIGINT for the turn's own handler and Ctrl-Z still
suspends) and reads it through prompt_toolkit's own input, the object and parser the prompt
itself uses:

- a lone Esc calls ``on_interrupt("Esc")`` (an Esc followed at once by more bytes is an arrow
  or an Alt-key, not a request to stop);
- every other key is kept, in order, and :meth:`TurnKeys.release` hands them to the next
  prompt as prompt_toolkit type-ahead, so they act exactly as if typed there: text,
  Backspace, arrows, and Enter (a line typed and entered during the turn is sent when the
  turn ends, as a shell does with type-ahead).

A question (approval) pauses the reading and gives the terminal back; the kept keys are never
fed to a question (a "y" typed ahead must not answer one), only to the next prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import termios
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.key_binding import KeyPress

#: How long the parser may hold a lone Esc byte before it is the Esc key (an arrow key's
#: bytes arrive together; prompt_toolkit's own prompt waits the same way).
ESC_WAIT_S = 0.1
#: At most this many keys are kept for the next prompt (a huge paste is cut, not hoarded).
MAX_KEPT = 100_000


def turn_mode(attrs: list[Any]) -> list[Any]:
    """The terminal mode while a turn runs: ``attrs`` without echo, line editing and CR→NL."""
    mode = [*attrs[:6], list(attrs[6])]
    mode[3] &= ~(termios.ECHO | termios.ICANON | termios.IEXTEN)
    mode[0] &= ~(termios.ICRNL | termios.INLCR | termios.IGNCR)
    mode[6][termios.VMIN] = 1
    mode[6][termios.VTIME] = 0
    return mode


class TurnKeys:
    """Reads the terminal while a turn runs (does nothing when stdin is not a terminal)."""

    def __init__(self, on_interrupt: Callable[[str], None], input: Input | None = None) -> None:
        self.on_interrupt = on_interrupt
        self._input = input
        #: Keys typed during the turn, for the next prompt (see :meth:`release`).
        self.kept: list[KeyPress] = []
        self._reading: contextlib.ExitStack | None = None
        self._saved: list[Any] | None = None
        self._flush: asyncio.TimerHandle | None = None

    def start(self) -> None:
        if self._reading is not None:
            return
        stack = contextlib.ExitStack()
        try:
            if self._input is None:
                if not os.isatty(sys.stdin.fileno()):
                    return
                from prompt_toolkit.application.current import get_app_session

                self._input = get_app_session().input  # the prompt's own input and parser
            fd = self._input.fileno()
            if not os.isatty(fd):
                return
            self._saved = termios.tcgetattr(fd)
            stack.callback(self._restore, fd)
            termios.tcsetattr(fd, termios.TCSANOW, turn_mode(self._saved))
            stack.enter_context(self._input.attach(self._ready))
        except (OSError, ValueError, termios.error, EOFError, RuntimeError):
            stack.close()
            return
        self._reading = stack

    def stop(self) -> None:
        if self._reading is None or self._input is None:
            return
        self._cancel_flush()
        # What arrived since the last read, and a held Esc byte: kept or dropped, never lost
        # to the next reader half-parsed.
        with contextlib.suppress(OSError, ValueError):
            self._take([*self._input.read_keys(), *self._input.flush_keys()], interrupt=False)
        reading, self._reading = self._reading, None
        reading.close()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Give the terminal back for a question, then read it again."""
        running = self._reading is not None
        self.stop()
        try:
            yield
        finally:
            if running:
                self.start()

    def release(self) -> None:
        """Hand the kept keys to the next prompt; call it right before that prompt."""
        kept, self.kept = self.kept, []
        if kept and self._input is not None:
            from prompt_toolkit.input.typeahead import store_typeahead

            store_typeahead(self._input, kept)

    def _restore(self, fd: int) -> None:
        if self._saved is not None:
            with contextlib.suppress(OSError, ValueError, termios.error):
                termios.tcsetattr(fd, termios.TCSANOW, self._saved)
        self._saved = None

    def _cancel_flush(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None

    def _ready(self) -> None:
        if self._reading is None or self._input is None:
            return
        keys = self._input.read_keys()
        if self._input.closed:  # end of input: nothing more to read
            self.stop()
            return
        self._take(keys)
        # A lone Esc byte stays in the parser (it may begin an arrow key): flush it soon.
        self._cancel_flush()
        self._flush = asyncio.get_running_loop().call_later(ESC_WAIT_S, self._flush_keys)

    def _flush_keys(self) -> None:
        self._flush = None
        if self._reading is not None and self._input is not None:
            self._take(self._input.flush_keys())

    def _take(self, keys: list[KeyPress], *, interrupt: bool = True) -> None:
        from prompt_toolkit.keys import Keys

        stop: str | None = None
        for i, key in enumerate(keys):
            if key.key == Keys.Escape and (i + 1 == len(keys) or keys[i + 1].key == Keys.Escape):
                stop = "Esc"  # a lone Esc (an Esc before more keys is an Alt-key: kept)
            elif key.key == Keys.ControlC:
                stop = "Ctrl-C"  # only a key when the terminal sends no signal
            elif key.key in (Keys.CPRResponse, Keys.Ignore):
                pass  # a late answer to an earlier prompt's cursor query: not the user's
            elif len(self.kept) < MAX_KEPT:
                self.kept.append(key)
        if stop is not None and interrupt:
            self.on_interrupt(stop)
