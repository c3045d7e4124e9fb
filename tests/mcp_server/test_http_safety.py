"""Loopback in every form, the Host/Origin check, and the one-line log handler."""

from __future__ import annotations

import io
import ipaddress
import logging
import socket
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codingcode.logs import LOG_BURST, OneLineHandler
from codingcode.mcp_server import http_safety
from codingcode.mcp_server.http_safety import (
    host_allowed,
    ip_literal,
    is_loopback,
    origin_allowed,
    rebinding_guard,
)
from codingcode.mcp_server.server import resolve_token

LOOPBACK = [
    "127.0.0.1",
    "127.0.0.1.",
    "2130706433",
    "0x7f000001",
    "0x7f.0.0.1",
    "0177.0.0.1",
    "127.1",
    "[::1]",
    "::1%lo",
    "127.0.0.2",
    "127.255.255.254",
    "::1",
    "0:0:0:0:0:0:0:1",
    "[0:0:0:0:0:0:0:1]",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "localhost",
    "LOCALHOST.",
]
NOT_LOOPBACK = [
    "0.0.0.0",
    "0",
    "::",
    "::ffff:10.0.0.1",
    "192.168.1.2",
    "10.0.0.1",
    "fe80::1",
    "::127.0.0.1",
    "64:ff9b::7f00:1",
    "3232235778",  # 192.168.1.2 as a number
    "0xa000001",
]


@pytest.mark.parametrize("host", LOOPBACK)
def test_every_loopback_form(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", NOT_LOOPBACK)
def test_not_loopback(host: str) -> None:
    assert not is_loopback(host)


@given(st.integers(0, 2**32 - 1), st.sampled_from(["{:d}", "0x{:x}", "0X{:08X}", "0{:o}"]))
def test_numeric_ipv4_forms_mean_their_address(value: int, form: str) -> None:
    """Every way of writing an IPv4 address as one number is read as that address, so
    exactly the 127/8 ones are loopback."""
    text = form.format(value)
    assert ip_literal(text) == ipaddress.IPv4Address(value)
    assert is_loopback(text, resolve=False) == (value >> 24 == 127)


@given(st.text(alphabet="0123456789abcdefxX.: []%lo-", max_size=24))
def test_ip_literal_never_fails_and_agrees_with_a_strict_parse(text: str) -> None:
    ip = ip_literal(text)
    if ip is not None and ip.version == 4 and text.count(".") == 3 and text[0].isdigit():
        parts = text.removesuffix(".").split(".")
        if all(p.isdigit() and (p == "0" or not p.startswith("0")) for p in parts):
            assert str(ip) == text.removesuffix(".")


def test_names_are_loopback_only_if_every_address_is(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {
        "dev.test": ["127.0.1.1"],
        "dual.test": ["127.0.0.1", "192.0.2.7"],
        "v6.test": ["::1", "::ffff:127.0.0.1"],
    }

    def fake(host: str, *a: Any, **k: Any) -> list[Any]:
        if host not in answers:
            raise socket.gaierror("no such name")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in answers[host]]

    monkeypatch.setattr(http_safety.socket, "getaddrinfo", fake)
    assert is_loopback("dev.test") and is_loopback("v6.test")
    assert not is_loopback("dual.test")  # one public address: it is reachable from outside
    assert not is_loopback("nowhere.test")
    assert resolve_token("dual.test", None)[1]  # so it needs a token (one is made up)
    assert resolve_token("dev.test", None) == (None, False)


def test_host_header_forms() -> None:
    port = 8765
    for host in ["127.0.0.1", "127.0.0.2", "localhost", "LocalHost."]:
        assert host_allowed(f"{host}:{port}", port)
    for host in ["[::1]", "[0:0:0:0:0:0:0:1]", "[::ffff:127.0.0.1]", "[::1%25lo]"]:
        assert host_allowed(f"{host}:{port}", port)
    # Numbers a browser (WHATWG URL) and inet_aton read as 127.x: never a DNS name, so
    # never a rebinding page's; accepted like the dotted form.
    for host in ["2130706433", "0x7f000001", "0x7f.1", "0177.0.0.1", "127.1", "127.0.0.1."]:
        assert host_allowed(f"{host}:{port}", port), host
    assert host_allowed("myname:8765", port, "myname")
    refused = [
        "evil.example:8765",  # DNS rebinding: the attacker's name
        "127.0.0.1:8766",  # another port
        "127.0.0.1",  # port 80
        "127.0.0.1.evil.example:8765",
        "localhost.evil.example:8765",
        "[::ffff:10.0.0.1]:8765",
        "0.0.0.0:8765",
        "2130706433.evil.example:8765",
        "0x7f000001.evil.example:8765",
        "[::127.0.0.1]:8765",  # IPv4-compatible, not loopback
        "[64:ff9b::7f00:1]:8765",  # NAT64: goes to a gateway
        "0:8765",  # 0.0.0.0: reaches this machine from a page ("0.0.0.0 day"), refused
        "0x0:8765",
        "[::1:8765",
        "",
        "::1:8765",
    ]
    for header in refused:
        assert not host_allowed(header, port), header
    assert not host_allowed("myname:8765", port)  # a name is only the bound one


def test_origin_forms() -> None:
    assert origin_allowed("http://127.0.0.1:9000", 9000)
    assert origin_allowed("http://[::1]:9000", 9000)
    assert origin_allowed("http://localhost:9000", 9000)
    for origin in [
        "http://evil.example:9000",
        "null",
        "http://127.0.0.1:9001",
        "file://",
        "http://127.0.0.1.evil.example:9000",
        "http://[::1",
    ]:
        assert not origin_allowed(origin, 9000), origin


@given(st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z]{2,5}){1,2}", fullmatch=True))
def test_no_public_looking_name_passes(name: str) -> None:
    if name.rstrip(".").lower() == "localhost":
        return
    assert not host_allowed(f"{name}:8000", 8000)
    assert not origin_allowed(f"http://{name}:8000", 8000)


@pytest.mark.anyio
async def test_rebinding_guard_answers_421_and_403() -> None:
    calls: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        calls.append(scope["path"])

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    received: list[int] = []

    async def receive() -> dict[str, Any]:  # a two-part body: both parts are read first
        received.append(len(received))
        return {"type": "http.request", "body": b"{}", "more_body": len(received) % 2 == 1}

    guarded = rebinding_guard(app, 7000)

    def scope(*headers: tuple[bytes, bytes]) -> dict[str, Any]:
        return {"type": "http", "path": "/mcp", "headers": list(headers)}

    await guarded(scope((b"host", b"evil.example:7000")), receive, send)
    await guarded(
        scope((b"host", b"127.0.0.1:7000"), (b"origin", b"http://evil.example:7000")), receive, send
    )
    await guarded(scope(), receive, send)  # no Host at all
    assert calls == []
    assert [m["status"] for m in sent if "status" in m] == [421, 403, 421]
    assert len(received) == 6
    # A client waiting for "100 Continue" is refused without being asked for its body.
    await guarded(
        scope((b"host", b"evil.example:7000"), (b"expect", b"100-Continue")), receive, send
    )
    assert [m["status"] for m in sent if "status" in m][-1] == 421
    assert len(received) == 6
    await guarded(
        scope((b"host", b"[::1]:7000"), (b"origin", b"http://localhost:7000")), receive, send
    )
    assert calls == ["/mcp"]


def test_one_line_handler_no_traceback_and_rate_limited() -> None:
    out = io.StringIO()
    log = logging.getLogger("codingcode.test.oneline")
    log.propagate = False
    handler = OneLineHandler(out)
    log.addHandler(handler)
    try:
        for i in range(200):
            try:
                raise OSError(24, "Too many open files")
            except OSError:
                log.exception("accept failed\nsecond line %d", i)
    finally:
        log.removeHandler(handler)
    lines = out.getvalue().splitlines()
    assert len(lines) == LOG_BURST
    assert all("Traceback" not in ln for ln in lines)
    assert (
        lines[0]
        == "codingcode MCP: accept failed second line 0: OSError: [Errno 24] Too many open files"
    )
