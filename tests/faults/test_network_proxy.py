"""The network proxy under faults: silent, malformed, oversized and abandoned clients, a
call that never hands over its socket, 20,000 events, 50 MB bodies, tunnels cut at the
end of their call. The proxy runs as in a session; a host-side listener stands in for the
one the relay makes inside the sandbox."""

from __future__ import annotations

import hashlib
import ipaddress
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from codingcode.sandbox.network import proxy as proxy_mod
from codingcode.sandbox.network.addresses import IPAddress
from codingcode.sandbox.network.domains import DomainPolicy
from codingcode.sandbox.network.proxy import CallChannel, ConnectionEvent, NetworkProxy
from codingcode.sandbox.network.runtime import OpenCall, ProxyRuntime
from tests.sandbox.network.server import LoggingServer


async def loopback(host: str, port: int) -> list[IPAddress]:
    return [ipaddress.ip_address("127.0.0.1")]


class Harness:
    def __init__(self, policy: DomainPolicy) -> None:
        self.runtime = ProxyRuntime(NetworkProxy(resolver=loopback, connect_timeout_s=3))
        self.call: OpenCall = self.runtime.open_call(policy, "fault")
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(256)
        self.port = listener.getsockname()[1]
        control = socket.socket(fileno=self.call.child_fd)
        socket.send_fds(control, [b"L"], [listener.fileno()])
        control.close()
        listener.close()

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def close(self) -> None:
        self.call.finish()
        self.runtime.close()


@pytest.fixture
def harness() -> Iterator[Any]:
    made: list[Harness] = []

    def make(**policy: Any) -> Harness:
        h = Harness(DomainPolicy(**policy))
        made.append(h)
        return h

    yield make
    for h in made:
        h.close()


def read_all(s: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except TimeoutError:
            return data
        if not chunk:
            return data
        data += chunk


def test_garbage_and_oversized_heads_get_400_and_the_proxy_goes_on(harness: Any) -> None:
    h = harness(allowed=("localhost",))
    for payload in (b"\x00\xff garbage\r\n\r\n", b"GET http://x/ HTTP/1.1\r\nA: " + b"a" * 70000):
        with h.connect() as s:
            s.sendall(payload)
            answer = read_all(s)
        assert answer.startswith(b"HTTP/1.1 400"), answer[:80]
    with LoggingServer() as srv, h.connect() as s:
        s.sendall(b"GET http://localhost:%d/after HTTP/1.1\r\nHost: x\r\n\r\n" % srv.port)
        assert b"200 OK" in read_all(s)


def test_silent_client_is_dropped_after_the_head_timeout(
    harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(proxy_mod, "HEAD_TIMEOUT_S", 0.5)
    h = harness(allowed=("localhost",))
    with h.connect() as s:
        start = time.monotonic()
        assert read_all(s) == b""
        assert time.monotonic() - start < 8


def test_abandoned_clients_do_not_block_others(harness: Any) -> None:
    h = harness(allowed=("localhost",))
    idle = [h.connect() for _ in range(50)]  # connected, never say anything
    try:
        with LoggingServer() as srv, h.connect() as s:
            s.sendall(b"GET http://localhost:%d/busy HTTP/1.1\r\nHost: x\r\n\r\n" % srv.port)
            assert b"200 OK" in read_all(s)
    finally:
        for s in idle:
            s.close()


def test_tunnels_are_cut_when_their_call_ends() -> None:
    h = Harness(DomainPolicy(allowed=("localhost",)))
    echo = socket.socket()
    echo.bind(("127.0.0.1", 0))
    echo.listen(8)
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(echo.accept()[0]), daemon=True).start()
    try:
        s = h.connect()
        s.sendall(b"CONNECT localhost:%d HTTP/1.1\r\nHost: x\r\n\r\n" % echo.getsockname()[1])
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
        h.call.finish()
        s.settimeout(5)
        assert s.recv(10) == b""  # the call ended: its tunnel is closed
        s.close()
    finally:
        h.runtime.close()
        echo.close()
        for a in accepted:
            a.close()


def test_a_call_that_never_hands_over_ends_with_its_process() -> None:
    runtime = ProxyRuntime(NetworkProxy(resolver=loopback))
    try:
        call = runtime.open_call(DomainPolicy(), "never")
        socket.close(call.child_fd)  # the sandboxed process died before the relay ran
        call.done.result(timeout=5)
        assert not call.channel.listening
        assert call.finish() == ""
    finally:
        runtime.close()


def test_twenty_thousand_events_stay_bounded() -> None:
    channel = CallChannel("many", DomainPolicy())
    verdict = DomainPolicy().check_name("x.test")
    for i in range(20_000):
        channel.record(ConnectionEvent("many", "GET", f"h{i}.test", 80, False, "no"), verdict)
    assert len(channel.events) == proxy_mod.MAX_EVENTS_PER_CALL
    assert len(channel.refused) == 20
    note = channel.note()
    assert "19980 more attempt(s)" in note and len(note) < 5000


def test_fifty_megabytes_are_streamed_through_plain_http(harness: Any) -> None:
    h = harness(allowed=("localhost",))
    received = hashlib.sha256()
    got = 0

    sink = socket.socket()
    sink.bind(("127.0.0.1", 0))
    sink.listen(1)

    def serve() -> None:
        nonlocal got
        conn, _ = sink.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            _, body = data.split(b"\r\n\r\n", 1)
            while True:
                received.update(body)
                got += len(body)
                if got >= 50 << 20:
                    break
                body = conn.recv(1 << 20)
                if not body:
                    break
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    payload = b"0123456789abcdef" * (1 << 16)  # 1 MiB
    sent = hashlib.sha256()
    with h.connect() as s:
        s.sendall(
            b"POST http://localhost:%d/up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
            % (sink.getsockname()[1], 50 << 20)
        )
        for _ in range(50):
            s.sendall(payload)
            sent.update(payload)
        answer = read_all(s)
    t.join(30)
    sink.close()
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok")
    assert got == 50 << 20 and received.hexdigest() == sent.hexdigest()


def test_a_hung_resolver_is_cut_at_the_connect_timeout() -> None:
    import anyio

    async def hangs(host: str, port: int) -> list[IPAddress]:
        await anyio.sleep(3600)
        return []

    runtime = ProxyRuntime(NetworkProxy(resolver=hangs, connect_timeout_s=0.5))
    call = runtime.open_call(DomainPolicy(allowed=("slow.test",)), "hung")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    control = socket.socket(fileno=call.child_fd)
    socket.send_fds(control, [b"L"], [listener.fileno()])
    control.close()
    try:
        with socket.create_connection(listener.getsockname(), timeout=10) as s:
            s.sendall(b"CONNECT slow.test:443 HTTP/1.1\r\nHost: slow.test\r\n\r\n")
            answer = read_all(s)
        assert answer.startswith(b"HTTP/1.1 502") and b"timed out" in answer
    finally:
        listener.close()
        call.finish()
        runtime.close()
