"""``resources/subscribe``: who watches which resource, and the poll that tells them.

A project file's state is its (inode, size, mtime); a plugin resource's is a hash of what
its ``read`` returns. :meth:`Subscriptions.check` compares each subscribed resource with the
state it had and sends ``notifications/resources/updated`` to the subscriber's connection
when it differs; :meth:`Subscriptions.watch` does that every :data:`POLL_S` seconds for as
long as the server runs. At most :data:`MAX_PER_SESSION` subscriptions per session; a
session's go when it ends; one whose connection is gone is dropped at the next check.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from codingcode.errors import InvalidArgumentsError

POLL_S = 2.0
MAX_PER_SESSION = 256

#: How a subscribed resource's current state is found (None: it is gone).
Probe = Callable[[str], Awaitable[Any]]


def file_state(path: str) -> Any:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def contents_state(contents: list[dict[str, Any]] | None) -> Any:
    if contents is None:
        return None
    text = json.dumps(contents, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class _Watch:
    session: Any
    state: Any


@dataclass
class Subscriptions:
    probe: Probe
    #: session key -> uri -> what it was when last told
    by_session: dict[str, dict[str, _Watch]] = field(default_factory=dict)

    async def subscribe(self, key: str, session: Any, uri: str) -> None:
        watched = self.by_session.setdefault(key, {})
        if uri not in watched and len(watched) >= MAX_PER_SESSION:
            raise InvalidArgumentsError(
                f"At most {MAX_PER_SESSION} subscriptions per session; unsubscribe some first."
            )
        watched[uri] = _Watch(session, await self.probe(uri))

    def unsubscribe(self, key: str, uri: str) -> None:
        watched = self.by_session.get(key)
        if watched is not None:
            watched.pop(uri, None)
            if not watched:
                del self.by_session[key]

    def end_session(self, key: str) -> None:
        self.by_session.pop(key, None)

    async def check(self) -> int:
        """One pass: tell each subscriber whose resource changed; returns how many were told."""
        told = 0
        for key, watched in list(self.by_session.items()):
            for uri, watch in list(watched.items()):
                try:
                    state = await self.probe(uri)
                except Exception:  # a broken plugin resource: no news this time
                    continue
                if state == watch.state:
                    continue
                watch.state = state
                try:
                    await watch.session.send_resource_updated(uri)
                    told += 1
                except Exception:  # the connection is gone: so is its subscription
                    self.unsubscribe(key, uri)
        return told

    async def watch(self) -> None:
        import anyio

        while True:
            await anyio.sleep(POLL_S)
            await self.check()
