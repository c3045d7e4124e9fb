from __future__ import annotations

import os
import random
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process


async def eventually(condition: Callable[[], bool], limit_s: float = 10) -> None:
    """Wait for something another process does (a marker file, a re-registration)."""
    with anyio.fail_after(limit_s):
        while True:
            if condition():
                return
            await anyio.sleep(0.02)


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A loopback port that is free now, for a server that must be told its port before it
    binds (it cannot report a port 0 bind). It is drawn below the kernel's ephemeral range,
    so no connection made meanwhile, by any process, is given it; another test may still
    draw it, so a server started on it is waited for with ``wait_for_port(port, proc)``,
    which notices when the port is someone else's, and started again on another port."""
    start = _ephemeral_start()
    if start >= 12_000:
        for _ in range(100):
            port = random.randrange(start - 10_000, start)
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # local_address is HEXIP:HEXPORT; state 0A is LISTEN; field 9 is the inode
            if (
                len(fields) > 9
                and fields[3] == "0A"
                and int(fields[1].rsplit(":", 1)[1], 16) == port
            ):
                inodes.add(fields[9])
    return inodes


def listens_on(pid: int, port: int) -> bool:
    """Whether process ``pid`` itself holds a listening socket on ``port``."""
    sockets = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    if not sockets:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in sockets:
                return True
        except OSError:
            continue
    return False


def started_listening(proc: subprocess.Popen[bytes], port: int, limit_s: float = 60) -> bool:
    """Wait until ``proc`` itself listens on ``port`` (True), or has exited (False: the port
    was taken meanwhile; start it again on another)."""
    deadline = time.monotonic() + limit_s
    while not listens_on(proc.pid, port):
        if proc.poll() is not None:
            return False
        if time.monotonic() > deadline:
            raise TimeoutError(f"the server did not listen on {port} within {limit_s} s")
        time.sleep(0.02)
    return True


class PortTaken(Exception):
    """The server exited before it listened (its port was taken meanwhile)."""


async def wait_for_port(port: int, limit_s: float = 20, proc: Process | None = None) -> None:
    """Wait until ``port`` is listened on; given ``proc``, until ``proc`` itself listens on it
    (not another test's server that took the port), raising PortTaken if ``proc`` exits."""
    if proc is None:

        def listening() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        await eventually(listening, limit_s)
        return
    with anyio.fail_after(limit_s):
        while not listens_on(proc.pid, port):
            if proc.returncode is not None:
                raise PortTaken(f"the server exited ({proc.returncode}) before listening on {port}")
            await anyio.sleep(0.02)


@asynccontextmanager
async def serving(
    command: Callable[[int], Sequence[str]],
    env: Callable[[int], Mapping[str, str]] | None = None,
    attempts: int = 5,
    limit_s: float = 60,  # a hang guard: a loaded machine starts Node slowly
    **kwargs: Any,
) -> AsyncIterator[tuple[Process, int]]:
    """Start ``command(port)`` on a free port and wait until it listens there; start it again
    on another port if the port was taken meanwhile. Terminated on leaving."""
    for attempt in range(attempts):
        port = free_port()
        proc = await anyio.open_process(
            list(command(port)), env=None if env is None else dict(env(port)), **kwargs
        )
        async with proc:
            try:
                try:
                    await wait_for_port(port, limit_s, proc=proc)
                except PortTaken:
                    if attempt + 1 == attempts:
                        raise
                    continue
                yield proc, port
                return
            finally:
                if proc.returncode is None:
                    proc.terminate()
    raise AssertionError("unreachable")
