"""TurnKeys on a real pseudo-terminal: the mode it sets and restores, a lone Esc interrupting,
arrows and Alt-keys not interrupting, and the kept keys replayed to the next prompt."""

from __future__ import annotations

import asyncio
import os
import pty
import termios
from collections.abc import Iterator

import pytest
from prompt_toolkit.input.typeahead import get_typeahead
from prompt_toolkit.input.vt100 import Vt100Input
from prompt_toolkit.keys import Keys

from codingcode.tui.keys import ESC_WAIT_S, TurnKeys


@pytest.fixture
def terminal() -> Iterator[tuple[int, Vt100Input]]:
    master, slave = pty.openpty()
    stdin = os.fdopen(slave, "r")
    try:
        yield master, Vt100Input(stdin)
    finally:
        stdin.close()
        os.close(master)


async def _settle() -> None:
    await asyncio.sleep(ESC_WAIT_S * 4)


def test_mode_while_reading_and_restored(terminal: tuple[int, Vt100Input]) -> None:
    _master, term = terminal
    before = termios.tcgetattr(term.fileno())

    async def main() -> list[int]:
        keys = TurnKeys(lambda how: None, term)
        keys.start()
        during = termios.tcgetattr(term.fileno())
        keys.stop()
        return during

    during = asyncio.run(main())
    assert not during[3] & (termios.ECHO | termios.ICANON)  # typed keys not echoed, one by one
    assert during[3] & termios.ISIG  # Ctrl-C still a signal, Ctrl-Z still suspends
    assert not during[0] & termios.ICRNL  # Enter read as at the prompt
    assert termios.tcgetattr(term.fileno()) == before


def test_lone_esc_interrupts_and_typed_keys_go_to_the_next_prompt(
    terminal: tuple[int, Vt100Input],
) -> None:
    master, term = terminal
    calls: list[str] = []

    async def main() -> None:
        keys = TurnKeys(calls.append, term)
        keys.start()
        os.write(master, b"/ex")
        await _settle()
        os.write(master, b"\x1b[A")  # an arrow: not a request to stop
        await _settle()
        os.write(master, b"\x1bb")  # Alt-b: not one either
        await _settle()
        assert calls == []
        os.write(master, b"\x1b")  # the Esc key
        await _settle()
        assert calls == ["Esc"]
        os.write(master, b"it\r")
        await _settle()
        os.write(master, b"z")  # arrives as the turn ends: kept too
        keys.stop()
        os.write(master, b"\x1b[A")  # after the turn: not read by it
        await _settle()
        assert calls == ["Esc"]
        keys.release()
        assert keys.kept == []

    asyncio.run(main())
    replayed = [k.key for k in get_typeahead(term)]
    assert replayed == [
        *"/ex",
        Keys.Up,
        Keys.Escape,
        "b",
        *"it",
        Keys.ControlM,  # Enter typed during the turn is kept: the line is sent after it
        "z",
    ]


def test_paused_reads_nothing_and_keeps_what_it_had(terminal: tuple[int, Vt100Input]) -> None:
    master, term = terminal

    async def main() -> list[object]:
        keys = TurnKeys(lambda how: None, term)
        keys.start()
        os.write(master, b"y")
        await _settle()
        with keys.paused():
            os.write(master, b"n\r")  # typed at a question: the question's, not the turn's
            await _settle()
            kept_while_paused = [k.key for k in keys.kept]
            assert os.read(term.fileno(), 10) == b"n\n"
        keys.stop()
        return kept_while_paused

    assert asyncio.run(main()) == ["y"]


def test_nothing_when_not_a_terminal() -> None:
    read, write = os.pipe()
    try:
        with os.fdopen(read, "r") as stdin:
            term = Vt100Input(stdin)

            async def main() -> None:
                keys = TurnKeys(lambda how: None, term)
                keys.start()
                os.write(write, b"\x1b")
                await _settle()
                keys.stop()
                assert keys.kept == []

            asyncio.run(main())
    finally:
        os.close(write)
