"""The proxy's home: an event loop on a thread of its own, owned by the sandbox service.

``SandboxService.plan()`` is synchronous and is used by every front end (the agent,
``codingcode tool``, the MCP server), each with its own event loop or none. So the proxy
does not borrow the caller's loop: an anyio blocking portal runs one loop on a thread for
the whole session, the calls' listeners are tasks on it, and ``close()`` ends them all.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from anyio.from_thread import BlockingPortal

from codingcode.sandbox.network.calls import Blocked as Blocked
from codingcode.sandbox.network.calls import call_blocks as call_blocks
from codingcode.sandbox.network.calls import current_call as current_call
from codingcode.sandbox.network.domains import DomainPolicy
from codingcode.sandbox.network.proxy import CallChannel, ConnectionEvent, NetworkProxy
from codingcode.sandbox.network.relay import PROXY_HOST, PROXY_PORT

if TYPE_CHECKING:
    from codingcode.sandbox.credentials.broker import CallCredentials

#: Receives each call's connection events once the call is over (the audit log).
EventSink = Callable[[Sequence[ConnectionEvent]], None]


_RELAY_BOOTSTRAP = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from codingcode.sandbox.network.relay import main; main(sys.argv)"
)


def proxy_env(*, localhost_through_proxy: bool) -> dict[str, str]:
    """The variables that point a command's HTTP clients at the proxy.

    ``NO_PROXY`` keeps the namespace's own loopback direct (a dev server the command starts
    itself), unless ``localhost`` is an allowed name, which then means the host's.
    """
    url = f"http://{PROXY_HOST}:{PROXY_PORT}"
    no_proxy = "" if localhost_through_proxy else "localhost,127.0.0.1,::1"
    env: dict[str, str] = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = url
    env["NO_PROXY"] = env["no_proxy"] = no_proxy
    return env


def relay_argv(control_fd: int, argv: Sequence[str]) -> list[str]:
    """``argv`` run through the relay (which execs it once the proxy's socket is handed over)."""
    package_parent = str(Path(__file__).resolve().parents[3])
    return [
        sys.executable,
        "-I",
        "-S",
        "-c",
        _RELAY_BOOTSTRAP,
        package_parent,
        str(control_fd),
        str(PROXY_PORT),
        "--",
        *argv,
    ]


@dataclass
class OpenCall:
    """One call's place in the proxy. ``child_fd`` goes to the sandboxed process."""

    runtime: ProxyRuntime
    channel: CallChannel
    child_fd: int
    done: Future[None]
    _finished: bool = field(default=False, repr=False)

    def finish(self, timeout_s: float = 5.0) -> str:
        """Close the call's listener and connections; its events go to the sink; returns the
        note for the tool result (what was blocked), "" when nothing was."""
        if self._finished:
            return ""
        self._finished = True
        self.runtime.stop_call(self.channel)
        with contextlib.suppress(Exception):
            self.done.result(timeout=timeout_s)
        self.channel.credentials = None  # the real values go with the call
        self.runtime.deliver(self.channel)
        sink = call_blocks.get()
        if sink is not None:
            for key, verdict in self.channel.refused.items():
                host, _, port = key.rpartition(":")
                sink.append(Blocked(host, int(port), verdict.reason, verdict.setting))
        return self.channel.note()


class ProxyRuntime:
    """The session's proxy thread (started on first use, ended by :meth:`close`)."""

    def __init__(self, proxy: NetworkProxy | None = None, sink: EventSink | None = None) -> None:
        self.proxy = proxy or NetworkProxy()
        self.sink = sink
        self._lock = threading.Lock()
        self._portal: BlockingPortal | None = None
        self._thread: threading.Thread | None = None

    def _ensure(self) -> BlockingPortal:
        with self._lock:
            if self._portal is None:
                self._portal, self._thread = _daemon_portal()
            return self._portal

    def open_call(
        self, policy: DomainPolicy, label: str, *, credentials: CallCredentials | None = None
    ) -> OpenCall:
        portal = self._ensure()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        channel = CallChannel(label, policy, credentials=credentials)
        done = portal.start_task_soon(self.proxy.run_call, ours, channel)
        return OpenCall(self, channel, theirs.detach(), done)

    def stop_call(self, channel: CallChannel) -> None:
        portal = self._portal
        if portal is None:
            return
        with contextlib.suppress(RuntimeError):
            portal.call(channel.stop)

    def deliver(self, channel: CallChannel) -> None:
        if self.sink is None or not channel.events:
            return
        try:
            self.sink(list(channel.events))
        except Exception as exc:  # the audit degrades, it never breaks a call
            print(f"codingcode: network audit records were lost: {exc}", file=sys.stderr)

    def running(self) -> bool:
        return self._portal is not None

    def close(self, timeout_s: float = 5.0) -> None:
        with self._lock:
            portal, thread = self._portal, self._thread
            self._portal = self._thread = None
        if portal is not None:
            # Open calls end with the session: their listeners and connections are cancelled.
            with contextlib.suppress(Exception):
                portal.start_task_soon(portal.stop, True).result(timeout=timeout_s)
        if thread is not None:
            thread.join(timeout=timeout_s)


def _daemon_portal() -> tuple[BlockingPortal, threading.Thread]:
    """A blocking portal whose event loop runs on a daemon thread.

    anyio's ``start_blocking_portal`` runs its loop on an executor thread that the
    interpreter joins at exit (and its context manager, if left to the garbage collector,
    waits on a loop that no longer runs), so a front end that never closed its sandbox
    would hang on exit. The proxy's connections belong to commands that die with
    codingcode anyway (``--die-with-parent``); ``close()`` still ends them cleanly.
    """
    import anyio

    ready: Future[BlockingPortal] = Future()

    async def main() -> None:
        async with BlockingPortal() as portal:
            ready.set_result(portal)
            await portal.sleep_until_stopped()

    def run() -> None:
        try:
            anyio.run(main)
        except BaseException as exc:  # the loop could not start: say so to the caller
            if not ready.done():
                ready.set_exception(exc)

    thread = threading.Thread(target=run, name="codingcode-network-proxy", daemon=True)
    thread.start()
    return ready.result(), thread


@contextlib.contextmanager
def running_proxy(proxy: NetworkProxy | None = None) -> Iterator[ProxyRuntime]:
    runtime = ProxyRuntime(proxy)
    try:
        yield runtime
    finally:
        runtime.close()
