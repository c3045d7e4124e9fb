"""Cancellation a caller can request and a running tool can watch."""

from __future__ import annotations

from typing import Any

import anyio


class CancelSignal:
    """A one-way cancellation flag a caller sets and a running tool watches.

    It plays the part of an ``AbortSignal``: the agent sets it on Ctrl-C, and a tool that
    runs a process waits on it beside the process so the whole tree dies promptly. Creating
    one needs no event loop, so it can be made anywhere and handed down.
    """

    def __init__(self) -> None:
        self._set = False
        self._waiters: list[anyio.Event] = []
        self.reason = ""

    def set(self, reason: str = "cancelled") -> None:
        if self._set:
            return
        self._set = True
        self.reason = reason
        for waiter in self._waiters:
            waiter.set()
        self._waiters.clear()

    def is_set(self) -> bool:
        return self._set

    async def wait(self) -> None:
        if self._set:
            return
        event = anyio.Event()
        self._waiters.append(event)
        await event.wait()


def first_error(group: BaseExceptionGroup[Any]) -> BaseException:
    """The exception a task group failed with (a KeyboardInterrupt or the first error)."""
    leaves: list[BaseException] = []

    def walk(g: BaseExceptionGroup[Any]) -> None:
        for e in g.exceptions:
            if isinstance(e, BaseExceptionGroup):
                walk(e)
            else:
                leaves.append(e)

    walk(group)
    for e in leaves:
        if isinstance(e, KeyboardInterrupt):
            return e
    return leaves[0] if leaves else group
