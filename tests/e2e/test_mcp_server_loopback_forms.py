"""Ground truth, with real HTTP requests to the real `codingcode mcp --http`: however the
loopback address it is bound to is written — 127/8, the numeric IPv4 forms, a trailing dot,
``[::1]`` however spelled, IPv4-mapped, ``localhost`` variants — it needs no token and the
Host/Origin check stands (a rebinding page is refused, the machine's own forms served);
with ``--token`` the token is required on every one of them too."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]
CODINGCODE = str(Path(sys.executable).parent / "codingcode")
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream"}

#: (--http HOST, where to connect, Host header forms that name this machine)
FORMS = [
    ("127.0.0.9", "127.0.0.9", ["127.0.0.9", "2130706441", "0x7f.9"]),
    ("127.255.255.254", "127.255.255.254", ["127.255.255.254"]),
    ("2130706433", "127.0.0.1", ["2130706433", "127.0.0.1", "0x7f000001", "127.1"]),
    ("0x7f000001", "127.0.0.1", ["0x7f000001", "127.0.0.1."]),
    ("127.1", "127.0.0.1", ["127.1", "0177.0.0.1"]),
    ("127.0.0.1.", "127.0.0.1", ["127.0.0.1.", "127.0.0.1"]),
    ("[::1]", "[::1]", ["[::1]", "[0:0:0:0:0:0:0:1]"]),
    ("[0:0:0:0:0:0:0:1]", "[::1]", ["[::1]"]),
    ("[::ffff:127.0.0.1]", "127.0.0.1", ["[::ffff:127.0.0.1]", "[::ffff:7f00:1]"]),
    ("localhost", "127.0.0.1", ["localhost", "LOCALHOST", "localhost."]),
    ("localhost.", "127.0.0.1", ["localhost", "127.0.0.1"]),
]
#: A new connection per request: no race with the server closing an idle keep-alive one.
FRESH = httpx.Limits(max_keepalive_connections=0)
EVIL = ["evil.example", "127.0.0.1.evil.example", "2130706433.evil.example", "0.0.0.0", "0"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
    }
    env.pop("CODINGCODE_MCP_TOKEN", None)
    return env


@asynccontextmanager
async def _serve(project: Path, env: dict[str, str], *args: str) -> AsyncIterator[tuple[int, str]]:
    cmd = [CODINGCODE, "mcp", "--project", str(project), "--http", *args]
    async with await anyio.open_process(cmd, env=env, stderr=subprocess.PIPE) as proc:
        try:
            assert proc.stderr is not None
            seen = b""
            with anyio.fail_after(60):
                while b"/mcp\n" not in seen:
                    chunk = await proc.stderr.receive()
                    seen += chunk
            text = seen.decode()
            port = int(text.split("/mcp")[0].rsplit(":", 1)[1])
            yield port, text
        finally:
            proc.terminate()


@pytest.mark.parametrize(("bind", "connect", "own"), FORMS, ids=[f[0] for f in FORMS])
async def test_every_loopback_form_keeps_the_host_and_origin_check(
    bind: str, connect: str, own: list[str], project: Path, tmp_path: Path
) -> None:
    async with _serve(project, _env(tmp_path), f"{bind}:0") as (port, said):
        assert "bearer token" not in said  # loopback: no token needed ...
        url = f"http://{connect}:{port}/mcp"
        async with httpx.AsyncClient(limits=FRESH) as http:
            # ... so the Host/Origin check is what stands between it and a web page.
            for name in EVIL:
                evil = await http.post(url, json=INIT, headers={**ACCEPT, "host": f"{name}:{port}"})
                assert evil.status_code == 421, (name, evil.status_code)
                page = await http.post(
                    url, json=INIT, headers={**ACCEPT, "origin": f"http://{name}:{port}"}
                )
                assert page.status_code == 403, (name, page.status_code)
            for name in own:
                ok = await http.post(
                    url,
                    json=INIT,
                    headers={**ACCEPT, "host": f"{name}:{port}", "origin": f"http://{name}:{port}"},
                )
                assert ok.status_code == 200, (name, ok.status_code, ok.text)
            other_port = await http.post(
                url, json=INIT, headers={**ACCEPT, "host": f"{own[0]}:{port + 1}"}
            )
            assert other_port.status_code == 421


@pytest.mark.parametrize("bind", ["127.0.0.9", "2130706433", "[::1]", "localhost."])
async def test_a_given_token_is_required_on_loopback_too(
    bind: str, project: Path, tmp_path: Path
) -> None:
    async with _serve(project, _env(tmp_path), f"{bind}:0", "--token", "s3cret") as (port, _):
        connect = "[::1]" if ":" in bind else ("127.0.0.9" if bind == "127.0.0.9" else "127.0.0.1")
        url = f"http://{connect}:{port}/mcp"
        async with httpx.AsyncClient(limits=FRESH) as http:
            missing = await http.post(url, json=INIT, headers=ACCEPT)
            wrong = await http.post(url, json=INIT, headers={**ACCEPT, "authorization": "Bearer x"})
            right = await http.post(
                url, json=INIT, headers={**ACCEPT, "authorization": "Bearer s3cret"}
            )
            # the Host check still stands with a token
            evil = await http.post(
                url,
                json=INIT,
                headers={
                    **ACCEPT,
                    "authorization": "Bearer s3cret",
                    "host": f"evil.example:{port}",
                },
            )
    assert (missing.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert evil.status_code == 421


@pytest.mark.parametrize("header", ["host: evil.example", "origin: http://evil.example"])
async def test_a_refused_request_gets_its_answer_not_a_reset(
    header: str, project: Path, tmp_path: Path
) -> None:
    """The refusal reaches the client: the server reads the body it was sent before closing
    (a socket closed over unread data resets the connection, and the answer can be lost)."""
    async with _serve(project, _env(tmp_path), "127.0.0.1:0") as (port, _):
        body = b"x" * 200_000
        host = header if header.startswith("host") else f"host: 127.0.0.1:{port}"
        extra = "" if header.startswith("host") else f"{header}:{port}\r\n"
        head = (
            f"POST /mcp HTTP/1.1\r\n{host}\r\n{extra}content-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        ).encode()
        async with await anyio.connect_tcp("127.0.0.1", port) as conn:
            await conn.send(head + body)
            answer = b""
            with anyio.fail_after(10):
                try:
                    while True:
                        answer += await conn.receive()
                except anyio.EndOfStream:
                    pass
        assert answer.startswith((b"HTTP/1.1 421 ", b"HTTP/1.1 403 ")), answer[:80]
