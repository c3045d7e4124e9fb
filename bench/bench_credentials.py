"""Masked credentials: what TLS termination costs on loopback, against a plain tunnel.

The proxy runs as in a session (its own event loop thread, one call's listener handed a
socket on the host, as the relay hands it one inside the sandbox). A loopback HTTPS server
with its own certificate stands for two names the test resolver maps to 127.0.0.1:
``intercepted.test`` (a masked credential names it: the proxy terminates TLS, checks the
server's certificate, replaces the placeholder in the request with the real value, scans
the response for an echoed real value) and ``tunnelled.test`` (no credential: a CONNECT
tunnel, as today). The same client makes the same requests to each, in the same run.

- latency: one small GET with the placeholder in its ``Authorization`` header on a kept-alive
  connection, median of interleaved runs; added = intercepted − tunnelled;
  also the first request of a new connection (two TLS handshakes instead of one);
- throughput: a 100 MB download through each; ratio intercepted / tunnelled.

Targets: added latency per intercepted request ≤ 2 ms; throughput ratio ≥ 0.8.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import ipaddress
import socket
import ssl
import statistics
import threading
import time
from collections.abc import Iterator
from typing import ClassVar

from _common import interleaved
from codingcode.sandbox.credentials.broker import CallCredentials, Secret
from codingcode.sandbox.network.addresses import IPAddress
from codingcode.sandbox.network.domains import DomainPolicy
from codingcode.sandbox.network.proxy import NetworkProxy
from codingcode.sandbox.network.runtime import OpenCall, ProxyRuntime
from codingcode.sandbox.network.tls import SessionCA

REAL = "ghp_" + "R" * 36
PLACEHOLDER = "ghp_" + "p" * 36
NAMES = ("intercepted.test", "tunnelled.test")
SMALL = b"x" * 512


async def resolver(host: str, port: int) -> list[IPAddress]:
    if host in NAMES:
        return [ipaddress.ip_address("127.0.0.1")]
    raise OSError(f"{host}: no such name")


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Handler.seen.append(self.headers.get("Authorization", ""))
        if self.path.startswith("/big/"):
            n = int(self.path.split("/")[2])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            block = b"\0" * (1 << 20)
            while n > 0:
                self.wfile.write(block[: min(n, len(block))])
                n -= len(block)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(SMALL)))
        self.end_headers()
        self.wfile.write(SMALL)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def https_server(ca: SessionCA) -> Iterator[int]:
    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def get_request(self) -> tuple[socket.socket, object]:
            sock, addr = self.socket.accept()
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return ca.server_context("intercepted.test").wrap_socket(sock, server_side=True), addr

    server = Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def proxy(upstream_ca: SessionCA) -> Iterator[tuple[int, NetworkProxy]]:
    upstream = ssl.create_default_context(cadata=upstream_ca.cert_pem.decode())
    upstream.check_hostname = False  # one leaf stands for both names
    net = NetworkProxy(resolver=resolver, upstream_context=upstream)
    runtime = ProxyRuntime(net)
    creds = CallCredentials(
        secrets=[Secret("GITHUB_TOKEN", PLACEHOLDER, REAL, ("intercepted.test",))],
        tls_terminate=True,
    )
    call: OpenCall = runtime.open_call(
        DomainPolicy(allowed=NAMES, allow_local=True), "bench", credentials=creds
    )
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    port = listener.getsockname()[1]
    control = socket.socket(fileno=call.child_fd)
    socket.send_fds(control, [b"L"], [listener.fileno()])
    control.close()
    listener.close()
    try:
        yield port, net
    finally:
        call.finish()
        runtime.close()


class Client:
    """A kept-alive HTTPS connection through the proxy's CONNECT."""

    def __init__(self, proxy_port: int, host: str, port: int, ctx: ssl.SSLContext) -> None:
        raw = socket.create_connection(("127.0.0.1", proxy_port), timeout=60)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        raw.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += raw.recv(1)
        assert head.startswith(b"HTTP/1.1 200"), head
        self.sock = ctx.wrap_socket(raw, server_hostname=host)
        self.file = self.sock.makefile("rb")
        self.host = f"{host}:{port}"

    def get(self, path: str) -> int:
        self.sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n"
            f"Authorization: Bearer {PLACEHOLDER}\r\n\r\n".encode()
        )
        length = 0
        while True:
            line = self.file.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        got = 0
        while got < length:
            chunk = self.file.read1(min(1 << 20, length - got))
            if not chunk:
                break
            got += len(chunk)
        return got

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--megabytes", type=int, default=100)
    args = parser.parse_args()
    server_ca = SessionCA()
    with https_server(server_ca) as port, proxy(server_ca) as (proxy_port, net):
        session = ssl.create_default_context(cadata=net.ca().cert_pem.decode())
        direct = ssl.create_default_context(cadata=server_ca.cert_pem.decode())
        direct.check_hostname = False
        inter = Client(proxy_port, "intercepted.test", port, session)
        tunnel = Client(proxy_port, "tunnelled.test", port, direct)
        _Handler.seen.clear()
        inter.get("/")
        tunnel.get("/")
        assert _Handler.seen == [f"Bearer {REAL}", f"Bearer {PLACEHOLDER}"], "no injection"
        times = interleaved(
            {"tunnelled": lambda: tunnel.get("/"), "intercepted": lambda: inter.get("/")},
            runs=args.runs,
            warmup=10,
        )
        added = (times["intercepted"] - times["tunnelled"]) * 1000
        print(
            f"latency per request (kept-alive): tunnelled {times['tunnelled'] * 1000:.3f} ms, "
            f"intercepted {times['intercepted'] * 1000:.3f} ms; added {added:.3f} ms "
            f"[target <= 2 ms: {'ok' if added <= 2.0 else 'OVER TARGET'}]"
        )

        def fresh(host: str, ctx: ssl.SSLContext) -> None:
            c = Client(proxy_port, host, port, ctx)
            c.get("/")
            c.close()

        first = interleaved(
            {
                "tunnelled": lambda: fresh("tunnelled.test", direct),
                "intercepted": lambda: fresh("intercepted.test", session),
            },
            runs=max(20, args.runs // 10),
            warmup=2,
        )
        print(
            f"first request of a new connection: tunnelled {first['tunnelled'] * 1000:.2f} ms, "
            f"intercepted {first['intercepted'] * 1000:.2f} ms (a second TLS handshake; "
            "informational)"
        )

        total = args.megabytes * 1000 * 1000
        rates: dict[str, list[float]] = {"tunnelled": [], "intercepted": []}
        for _ in range(3):
            for name, client in (("tunnelled", tunnel), ("intercepted", inter)):
                start = time.perf_counter()
                got = client.get(f"/big/{total}")
                elapsed = time.perf_counter() - start
                assert got == total, (name, got)
                rates[name].append(total / elapsed / 1e6)
        t, i = statistics.median(rates["tunnelled"]), statistics.median(rates["intercepted"])
        print(
            f"download ({args.megabytes} MB): tunnelled {t:.0f} MB/s, intercepted {i:.0f} MB/s; "
            f"ratio {i / t:.2f} [target >= 0.8: {'ok' if i / t >= 0.8 else 'UNDER TARGET'}]"
        )
        inter.close()
        tunnel.close()


if __name__ == "__main__":
    main()
