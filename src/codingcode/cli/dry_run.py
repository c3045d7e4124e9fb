"""Running a dry run's coroutine without an event loop when it never needs one.

``codingcode check`` decides without running anything: the approval pipeline's coroutines
finish without waiting on anything, so starting asyncio (a third of the command's start-up)
is not needed. :func:`run_dry` drives the coroutine by hand; the moment it asks anyio for
its event loop (a thread, a cancel scope, a sleep, a subprocess: a hook, say) or waits on
anything, that attempt is dropped and the call runs again from the start under
``anyio.run``, as it always did. Only for code without side effects: the attempt may be
cut short anywhere.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: The async library name the attempt runs under (anyio looks its backend up by it).
_NAME = "codingcode-no-loop"


class _LoopNeeded(BaseException):
    """Raised into the coroutine when it asks for an event loop (a BaseException: no
    ``except Exception`` in the pipeline swallows it)."""


class _Asked:
    """Set when the attempt asked for a loop, whatever then caught the exception."""

    asked = False


class _NoLoopMeta(type):
    def __getattr__(cls, name: str) -> Any:
        _Asked.asked = True
        raise _LoopNeeded(name)


class _NoLoopBackend(metaclass=_NoLoopMeta):
    """anyio's backend while there is no loop: every use of it ends the attempt."""


def run_dry(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``anyio.run(fn, *args)``, without starting an event loop when ``fn`` never needs one."""
    done, value = _attempt(fn, *args)
    if done:
        return value  # type: ignore[no-any-return]
    import anyio

    return anyio.run(fn, *args)


def _attempt(fn: Callable[..., Awaitable[Any]], *args: Any) -> tuple[bool, Any]:
    """(True, the result) when ``fn`` ran to its end without a loop; (False, None) when it
    needed one (then nothing it did counts)."""
    try:
        import sniffio
        from anyio._core import _eventloop
    except ImportError:
        return False, None
    backends = getattr(_eventloop, "loaded_backends", None)
    if not isinstance(backends, dict):  # an anyio that looks its backends up otherwise
        return False, None
    backends[_NAME] = _NoLoopBackend
    _Asked.asked = False
    # In a context of its own, as anyio.run's task (nothing it sets outlives the attempt).
    context = contextvars.copy_context()
    context.run(sniffio.current_async_library_cvar.set, _NAME)
    coro = fn(*args)
    try:
        try:
            context.run(coro.send, None)  # type: ignore[attr-defined]
        except StopIteration as stop:
            return (not _Asked.asked), stop.value
        except _LoopNeeded:
            return False, None
        except BaseException:
            if _Asked.asked:  # an error that came of asking for the loop: try with one
                return False, None
            raise
        # It waits on something: a loop's job. (Its clean-up may ask for the loop too.)
        with contextlib.suppress(_LoopNeeded, Exception):
            context.run(coro.close)  # type: ignore[attr-defined]
        return False, None
    finally:
        backends.pop(_NAME, None)
