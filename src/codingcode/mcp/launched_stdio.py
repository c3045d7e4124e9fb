"""The stdio transport of every stdio MCP server, started through a Launcher.

A server whose entry says ``"sandbox": true`` starts the way every command does, through
the sandbox's launcher (which rewrites the command line and may hand the child
descriptors, e.g. a seccomp filter); the others through :class:`DirectLauncher`. Either
way: newline-delimited JSON-RPC on stdin/stdout, stderr to the given file, its own process
group, and on exit stdin closed, a grace period, then the whole group killed.

We read stdout ourselves rather than through the SDK's ``stdio_client`` because a server's
stdout is untrusted input, and each of these must cost little and say one line at most:

* Lines are split on bytes, linearly: a 50 MB result costs one pass (the SDK's reader
  re-joins its buffer per chunk, quadratic in the line's length).
* A line over :data:`MAX_MESSAGE_BYTES` is not kept: its bytes are dropped as they arrive,
  and if it was the answer to a request (its ``id`` is near the start) that request fails
  at once with a message saying why, instead of waiting for its timeout.
* A line that is not JSON-RPC (a server printing a banner or a log line on stdout) is
  skipped; the first one is reported through ``on_noise`` (one line, naming the server's
  output), later ones only counted.
* Invalid UTF-8 and lone surrogates (``"\\udcff"`` in a JSON string, which the SDK's
  parser rejects so the answer is lost and the call times out) are replaced by U+FFFD.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import anyio
import mcp_types as types
from pydantic_core import from_json

from codingcode.process import Launcher

#: How long a server may take to exit after its stdin closed, and after SIGTERM.
_GRACE_S = 2.0
#: The largest JSON-RPC message (one stdout line) we accept from a server.
MAX_MESSAGE_BYTES = 128 * 1024 * 1024
#: Bytes asked of the pipe per read.
_READ_BYTES = 1 << 20
_SURROGATE = re.compile("[\ud800-\udfff]")
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


def _clean(value: Any) -> Any:
    """``value`` (from ``json.loads``) with every lone surrogate replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def parse_message(line: bytes | bytearray) -> Any:
    """One stdout line as a SessionMessage, or None if it is not a JSON-RPC message."""
    from mcp.shared.message import SessionMessage

    adapter = types.jsonrpc_message_adapter
    try:
        # Parsing to Python first is ~4x faster than validate_json on a large message
        # (which builds the value for each member of the message union it tries).
        return SessionMessage(adapter.validate_python(from_json(line), by_name=False))
    except ValueError:
        pass
    # The strict parser refuses invalid UTF-8 and lone surrogates; Python's json takes
    # both (after a replacing decode), and the strings are then cleaned of surrogates.
    try:
        value = _clean(json.loads(bytes(line).decode("utf-8", "replace")))
        return SessionMessage(adapter.validate_python(value, by_name=False))
    except (ValueError, RecursionError):
        return None


def _request_id(head: bytes) -> int | str | None:
    """The ``id`` near the start of a message we will not parse whole, if it has one."""
    match = _ID.search(head)
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, int | str) else None


def _too_large(head: bytes, size: int) -> Any:
    """An error answer standing in for an over-long answer to a request, or None."""
    from mcp.shared.message import SessionMessage

    rid = _request_id(head)
    if rid is None or b'"method"' in head[:200]:
        return None
    error = types.ErrorData(
        code=types.INTERNAL_ERROR,
        message=(
            f"the server's answer was {size:,}+ bytes, over the client's limit of "
            f"{MAX_MESSAGE_BYTES:,} bytes per message; it was dropped"
        ),
    )
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=rid, error=error))


def _blank(line: bytes) -> bool:
    return not line or line.isspace()  # no copy (strip() would copy a 50 MB line)


def _first_bytes(parts: list[bytes], n: int) -> bytes:
    taken: list[bytes] = []
    size = 0
    for part in parts:
        if size >= n:
            break
        taken.append(part[: n - size])
        size += len(taken[-1])
    return b"".join(taken)


class LineSplitter:
    """Splits a byte stream into lines in linear time, dropping lines over the cap.

    The pieces of a long line are kept in a list and joined once (no regrowing buffer).
    """

    def __init__(self, cap: int | None = None) -> None:
        self.cap = MAX_MESSAGE_BYTES if cap is None else cap
        self._parts: list[bytes] = []
        self._size = 0
        self._dropping = False
        self._head = b""

    def feed(self, chunk: bytes) -> list[bytes | tuple[bytes, int]]:
        """Complete lines in ``chunk``; an over-long line comes as ``(its head, its size)``."""
        out: list[bytes | tuple[bytes, int]] = []
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            end = len(chunk) if nl < 0 else nl
            piece = chunk[start:end] if start or end != len(chunk) else chunk
            if not self._dropping and self._size + len(piece) > self.cap:
                self._dropping = True
                self._head = _first_bytes([*self._parts, piece], 4096)
                self._parts = []
            self._size += len(piece)
            if not self._dropping and piece:
                self._parts.append(piece)
            if nl < 0:
                return out
            if self._dropping:
                out.append((self._head, self._size))
                self._dropping = False
                self._head = b""
            elif self._parts:
                parts, self._parts = self._parts, []
                line = parts[0] if len(parts) == 1 else b"".join(parts)
                del parts
                if not _blank(line):
                    out.append(line)
            self._size = 0
            start = nl + 1


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
    on_noise: Callable[[str], None] | None = None,
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
    except BaseException:
        plan.run_finish()
        raise
    finally:
        plan.close_fds()
    if plan.notice:
        errlog.write(plan.notice + "\n")
    read_send, read_recv = anyio.create_memory_object_stream[Any](0)
    write_send, write_recv = anyio.create_memory_object_stream[Any](0)
    noise = 0

    def noted(what: str) -> None:
        nonlocal noise
        noise += 1
        if noise == 1 and on_noise is not None:
            on_noise(what)

    async def reader() -> None:
        assert proc.stdout is not None
        splitter = LineSplitter()
        async with read_send:
            with contextlib.suppress(
                anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError
            ):
                while True:
                    chunk = await proc.stdout.receive(_READ_BYTES)
                    lines = splitter.feed(chunk)
                    del chunk
                    lines.reverse()
                    while lines:
                        line = lines.pop()  # dropped as soon as parsed: a 50 MB line
                        if isinstance(line, tuple):  # is not kept while it is handled
                            head, size = line
                            stand_in = _too_large(head, size)
                            noted(
                                f"a message of {size:,}+ bytes on stdout, over the limit of "
                                f"{MAX_MESSAGE_BYTES:,}; dropped"
                            )
                            if stand_in is not None:
                                await read_send.send(stand_in)
                            continue
                        message = parse_message(line)
                        if message is None:
                            shown = bytes(line[:80]).decode("utf-8", "replace")
                            noted(f"a line that is not JSON-RPC on stdout, ignored: {shown!r}")
                            continue
                        del line
                        await read_send.send(message)
                        del message

    async def writer() -> None:
        assert proc.stdin is not None
        async with write_recv:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await proc.stdin.send((data + "\n").encode("utf-8", "replace"))

    try:
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
    finally:
        if noise > 1:
            errlog.write(f"[{noise} lines on stdout were not JSON-RPC and were ignored]\n")
        note = plan.run_finish()
        if note:
            errlog.write(note + "\n")
