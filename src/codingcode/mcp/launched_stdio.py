"""A stdio transport whose server process starts through a Launcher (the sandbox).

The SDK's ``stdio_client`` starts the command as given; a server whose entry says
``"sandbox": true`` must start the way every command does, through the sandbox's launcher
(which rewrites the command line and may hand the child descriptors, e.g. a seccomp
filter). This transport does that and otherwise behaves like the SDK's: newline-delimited
JSON-RPC on stdin/stdout, stderr to the given file, its own process group, and on exit
stdin closed, a grace period, then the whole group killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import anyio
import mcp_types as types
from anyio.streams.text import TextReceiveStream

from codingcode.process import Launcher

#: How long a server may take to exit after its stdin closed, and after SIGTERM.
_GRACE_S = 2.0


def _parse(line: str) -> Any:
    from mcp.shared.message import SessionMessage

    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def _wait_exit(proc: Any, limit_s: float) -> bool:
    with anyio.move_on_after(limit_s):
        await proc.wait()
    return proc.returncode is not None


@contextlib.asynccontextmanager
async def launched_stdio(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    launcher: Launcher,
    errlog: IO[str],
) -> AsyncIterator[tuple[Any, Any]]:
    plan = launcher.plan(list(argv), cwd=cwd, env=dict(env))
    try:
        proc = await anyio.open_process(
            plan.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            cwd=cwd,
            env=plan.env,
            start_new_session=True,
            pass_fds=plan.pass_fds,
        )
    finally:
        plan.close_fds()
    if plan.notice:
        errlog.write(plan.notice + "\n")
    read_send, read_recv = anyio.create_memory_object_stream[Any](0)
    write_send, write_recv = anyio.create_memory_object_stream[Any](0)

    async def reader() -> None:
        assert proc.stdout is not None
        buffer = ""
        async with read_send:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                async for chunk in TextReceiveStream(proc.stdout, errors="replace"):
                    lines = (buffer + chunk).split("\n")
                    buffer = lines.pop()
                    for line in lines:
                        if line.strip():
                            await read_send.send(_parse(line))

    async def writer() -> None:
        assert proc.stdin is not None
        async with write_recv:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await proc.stdin.send((data + "\n").encode())

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_recv, write_send
        finally:
            with anyio.CancelScope(shield=True):
                assert proc.stdin is not None
                with contextlib.suppress(OSError, anyio.BrokenResourceError):
                    await proc.stdin.aclose()
                if not await _wait_exit(proc, _GRACE_S):
                    _kill_group(proc.pid, signal.SIGTERM)
                    if not await _wait_exit(proc, _GRACE_S):
                        _kill_group(proc.pid, signal.SIGKILL)
                        await _wait_exit(proc, _GRACE_S)
                _kill_group(proc.pid, signal.SIGKILL)  # whatever the server left behind
                await write_send.aclose()
                await read_recv.aclose()
                tg.cancel_scope.cancel()
                with contextlib.suppress(OSError, anyio.BrokenResourceError):
                    await proc.aclose()
