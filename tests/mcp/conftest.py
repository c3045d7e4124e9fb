from __future__ import annotations

import socket
from collections.abc import Callable

import anyio


async def eventually(condition: Callable[[], bool], limit_s: float = 10) -> None:
    """Wait for something another process does (a marker file, a re-registration)."""
    with anyio.fail_after(limit_s):
        while True:
            if condition():
                return
            await anyio.sleep(0.02)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_for_port(port: int, limit_s: float = 20) -> None:
    def listening() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    await eventually(listening, limit_s)
