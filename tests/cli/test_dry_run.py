"""``run_dry``: a dry run's coroutine runs without an event loop when it never needs one, and
under ``anyio.run`` (from the start) the moment it does."""

from __future__ import annotations

import contextvars
import subprocess
import sys
from typing import Any

import anyio
import pytest

from codingcode.cli.dry_run import run_dry


class Runs:
    def __init__(self) -> None:
        self.count = 0


async def _plain(runs: Runs, x: int) -> int:
    runs.count += 1

    async def inner() -> int:
        return x * 2

    return await inner()


def test_a_coroutine_that_waits_on_nothing_runs_without_a_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_loop(*_: Any, **__: Any) -> None:
        raise AssertionError("anyio.run was called")

    monkeypatch.setattr(anyio, "run", no_loop)
    runs = Runs()
    assert run_dry(_plain, runs, 21) == 42
    assert runs.count == 1


def test_no_event_loop_is_imported_for_it() -> None:
    code = (
        "import sys\n"
        "from codingcode.cli.dry_run import run_dry\n"
        "async def f(): return 'done'\n"
        "print(run_dry(f), 'asyncio' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.split() == ["done", "False"]


async def _sleeps(runs: Runs) -> str:
    runs.count += 1
    await anyio.sleep(0.001)
    return "slept"


async def _threads_and_swallows(runs: Runs) -> str:
    runs.count += 1
    try:
        return await anyio.to_thread.run_sync(lambda: "threaded")
    except BaseException:
        return "swallowed"  # the attempt cannot count: it asked for the loop


async def _awaits_a_future(runs: Runs) -> str:
    import asyncio

    runs.count += 1
    await asyncio.sleep(0)
    return "awaited"


@pytest.mark.parametrize(
    ("fn", "expected"),
    [(_sleeps, "slept"), (_threads_and_swallows, "threaded"), (_awaits_a_future, "awaited")],
)
def test_a_coroutine_that_needs_the_loop_runs_again_under_anyio(fn: Any, expected: str) -> None:
    runs = Runs()
    assert run_dry(fn, runs) == expected
    assert runs.count == 2  # the dropped attempt, then the real run


async def _fails(runs: Runs) -> None:
    runs.count += 1
    raise ValueError("bad input")


def test_an_error_is_raised_as_anyio_would_once() -> None:
    runs = Runs()
    with pytest.raises(ValueError, match="bad input"):
        run_dry(_fails, runs)
    assert runs.count == 1


def test_the_attempt_leaves_no_trace() -> None:
    """After an attempt the current task is anyio's as before (a real run works)."""
    import sniffio

    runs = Runs()
    run_dry(_sleeps, runs)
    with pytest.raises(sniffio.AsyncLibraryNotFoundError):
        sniffio.current_async_library()
    assert anyio.run(_plain, runs, 1) == 2


_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="unset")


async def _sets_then_sleeps(seen: list[str]) -> str:
    seen.append(_VAR.get())
    _VAR.set("set by the attempt")
    await anyio.sleep(0.001)
    return "done"


def test_what_the_attempt_sets_does_not_outlive_it() -> None:
    """The attempt runs in a context of its own, as a task of anyio.run does: the real run
    starts from the caller's values, and the caller keeps them."""
    seen: list[str] = []
    assert run_dry(_sets_then_sleeps, seen) == "done"
    assert seen == ["unset", "unset"]
    assert _VAR.get() == "unset"
