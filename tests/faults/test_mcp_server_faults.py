"""`codingcode mcp --http` under hostile connections: idle floods, slow requests, bad
requests. It keeps serving real clients, frees what each connection held, and logs one
line at most per record, rate-limited, never a traceback."""

from __future__ import annotations

import io
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, redirect_stderr
from pathlib import Path

import anyio
import httpx
import pytest

from codingcode.mcp_server import server as server_module
from codingcode.mcp_server.server import McpToolServer, build_tool_server, serve_http
from mcp import Client
from tests.mcp.conftest import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
CODINGCODE = str(Path(sys.executable).parent / "codingcode")
INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"probe","version":"0"}}}'
)


def _post(port: int, host: str = "127.0.0.1") -> bytes:
    return (
        b"POST /mcp HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
        % (host.encode(), port, len(INIT), INIT)
    )


def _closed_by_peer(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1024) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


@asynccontextmanager
async def _serving(
    project: Path,
    read_timeout_s: float,
    max_connections: int,
    server: McpToolServer | None = None,
) -> AsyncIterator[tuple[int, io.StringIO]]:
    server = server or build_tool_server(project, mode="bypass")
    urls: list[str] = []
    announced = anyio.Event()

    def announce(url: str) -> None:
        urls.append(url)
        announced.set()

    err = io.StringIO()
    async with anyio.create_task_group() as tg:
        with redirect_stderr(err):
            tg.start_soon(
                lambda: serve_http(
                    server,
                    "127.0.0.1",
                    0,
                    None,
                    announce=announce,
                    read_timeout_s=read_timeout_s,
                    max_connections=max_connections,
                )
            )
            with anyio.fail_after(20):
                await announced.wait()
            port = int(urls[0].rsplit(":", 1)[1].split("/")[0])
            try:
                yield port, err
            finally:
                tg.cancel_scope.cancel()


async def test_idle_and_slow_connections_are_closed_after_the_read_timeout(
    project: Path,
) -> None:
    async with _serving(project, read_timeout_s=0.5, max_connections=50) as (port, err):
        idle = socket.create_connection(("127.0.0.1", port))
        partial = socket.create_connection(("127.0.0.1", port))
        partial.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % port)  # never ends
        slow_body = socket.create_connection(("127.0.0.1", port))
        slow_body.sendall(_post(port)[:-10])  # headers whole, body short by 10 bytes
        # Refused (not this machine's name): its body is read before the answer, and it
        # never comes whole; the deadline still closes it.
        refused_slow = socket.create_connection(("127.0.0.1", port))
        refused_slow.sendall(_post(port, host="evil.example")[:-10])
        for sock in (idle, partial, slow_body, refused_slow):
            assert await anyio.to_thread.run_sync(_closed_by_peer, sock, 15)
            sock.close()
        # A whole request is answered (its connection is not cut by the deadline).
        ok = socket.create_connection(("127.0.0.1", port))
        ok.sendall(_post(port))
        ok.settimeout(15)
        assert (await anyio.to_thread.run_sync(ok.recv, 100)).startswith(b"HTTP/1.1 200")
        ok.close()
        assert "Traceback" not in err.getvalue()


async def test_a_flood_of_idle_connections_does_not_lock_out_a_real_client(
    project: Path,
) -> None:
    (project / "notes.txt").write_text("hello\n")
    async with _serving(project, read_timeout_s=30, max_connections=16) as (port, err):
        flood = await anyio.to_thread.run_sync(
            lambda: [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
        )
        try:
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as client:
                result = await client.call_tool("read_file", {"path": "notes.txt"})
                assert not result.is_error
            # At the cap, the oldest idle connections were closed to make room.
            assert await anyio.to_thread.run_sync(_closed_by_peer, flood[0], 10)
        finally:
            for sock in flood:
                sock.close()
        assert "Traceback" not in err.getvalue()


async def test_bad_requests_log_a_few_lines_not_tracebacks(project: Path) -> None:
    async with _serving(project, read_timeout_s=5, max_connections=50) as (port, err):

        def hammer() -> None:
            for _ in range(100):
                with socket.create_connection(("127.0.0.1", port)) as sock:
                    sock.sendall(b"GARBAGE \x00\xff\r\n\r\n")
                    sock.settimeout(5)
                    sock.recv(200)

        await anyio.to_thread.run_sync(hammer)
        async with httpx.AsyncClient() as http:  # still serving
            answer = await http.post(
                f"http://127.0.0.1:{port}/mcp",
                content=INIT,
                headers={
                    "content-type": "application/json",
                    "accept": "application/json, text/event-stream",
                },
            )
        assert answer.status_code == 200
    text = err.getvalue()
    assert "Traceback" not in text
    assert len(text.splitlines()) <= 10, text


def test_the_real_command_survives_1100_idle_connections(project: Path, tmp_path: Path) -> None:
    """Ground truth: the command itself, with a 1,024-descriptor limit, against 1,100 idle
    connections (more than it has descriptors): it stays up, answers, and stays quiet."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    env = {
        **os.environ,
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
    }
    errfile = tmp_path / "server.err"
    with errfile.open("wb") as err:
        proc = subprocess.Popen(
            [CODINGCODE, "mcp", "--project", str(project), "--http", "127.0.0.1:0"],
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=env,
            preexec_fn=limit,
        )
    try:
        deadline = time.monotonic() + 30
        while b"/mcp" not in errfile.read_bytes():
            assert time.monotonic() < deadline and proc.poll() is None, errfile.read_text()
            time.sleep(0.05)
        port = int(errfile.read_text().split("/mcp")[0].rsplit(":", 1)[1])
        flood = []
        for _ in range(1100):
            try:
                flood.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                break
        time.sleep(1)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as real:
            real.sendall(_post(port))
            real.settimeout(10)
            assert real.recv(100).startswith(b"HTTP/1.1 200")
        time.sleep(1)
        for sock in flood:
            sock.close()
        assert proc.poll() is None
        text = errfile.read_text()
        assert "Traceback" not in text
        assert len(text) < 2000, text[:2000]
    finally:
        proc.terminate()
        proc.wait(10)


async def test_session_state_is_freed_when_the_session_ends(project: Path) -> None:
    server = build_tool_server(project, mode="bypass")
    plan = {"plan": [{"step": "look around", "status": "pending"}]}
    async with _serving(project, read_timeout_s=10, max_connections=50, server=server) as (
        port,
        _,
    ):
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(3):
            async with Client(url, mode="legacy") as client:
                assert not (await client.call_tool("todo_write", plan)).is_error
                assert len(server.states) == 1  # this session's todo list
            # The client closed its session (DELETE): its state went with it.
            await eventually(lambda: not server.states)


def test_idle_session_state_is_freed(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = build_tool_server(project, mode="bypass")
    now = [1000.0]
    monkeypatch.setattr(server_module.time, "monotonic", lambda: now[0])
    server.session_state("a")
    now[0] += server_module.SESSION_IDLE_S / 2
    server.session_state("b")
    now[0] += server_module.SESSION_IDLE_S / 2 + 1
    server.session_state("c")  # "a" idled out; "b" has not yet
    assert set(server.states) == {"b", "c"}
    for i in range(server_module.MAX_SESSIONS + 50):  # never more than the cap
        server.session_state(f"s{i}")
    assert len(server.states) <= server_module.MAX_SESSIONS
