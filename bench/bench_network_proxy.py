"""The sandbox's filtering proxy on loopback: added latency, throughput, connections held.

The proxy runs as in a session (its own event loop thread, one call's listener) with a
listening socket on the host standing in for the one the relay makes inside the sandbox
(the proxy code path is the same: it accepts on a socket it was handed). The name
``localhost`` is listed and resolved by the system resolver, as for a real command.

Reference, measured in the same run: the same client talking to the same server directly.

- latency: one small plain-HTTP request per new connection (absolute-form through the
  proxy, origin-form directly), median of interleaved runs; ratio proxy / direct;
- throughput: 64 MB pushed through a CONNECT tunnel to a sink, against directly; ratio;
- held: 200 CONNECT tunnels open at once, each then exchanging a ping with an echo server.

Targets: added latency under 5 ms per request on loopback, throughput at least a third of
direct, all 200 tunnels held and answering.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import socketserver
import statistics
import threading
import time
from collections.abc import Iterator

from _common import interleaved, verdict
from codingcode.sandbox.network.domains import DomainPolicy
from codingcode.sandbox.network.runtime import OpenCall, ProxyRuntime

SMALL = b"x" * 512


class _Threaded(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512


class _Http(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            data += chunk
        head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(SMALL)
        self.request.sendall(head + SMALL)


class _Sink(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        total = 0
        while True:
            chunk = self.request.recv(1 << 20)
            if not chunk:
                break
            total += len(chunk)
        self.request.sendall(str(total).encode())


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while True:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            self.request.sendall(chunk)


@contextlib.contextmanager
def serve(handler: type[socketserver.BaseRequestHandler]) -> Iterator[int]:
    server = _Threaded(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def proxy() -> Iterator[int]:
    runtime = ProxyRuntime()
    call: OpenCall = runtime.open_call(DomainPolicy(allowed=("localhost",)), "bench")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    port = listener.getsockname()[1]
    control = socket.socket(fileno=call.child_fd)
    socket.send_fds(control, [b"L"], [listener.fileno()])
    control.close()
    listener.close()
    try:
        yield port
    finally:
        call.finish()
        runtime.close()


def read_all(sock: socket.socket) -> bytes:
    data = b""
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            return data
        data += chunk


def request(port: int, raw: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(raw)
        return read_all(s)


def tunnel(proxy_port: int, port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", proxy_port), timeout=30)
    s.sendall(b"CONNECT localhost:%d HTTP/1.1\r\nHost: localhost\r\n\r\n" % port)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            raise OSError("the proxy closed the tunnel")
        head += chunk
    if not head.startswith(b"HTTP/1.1 200"):
        raise OSError(head.decode(errors="replace").splitlines()[0])
    return s


def push(sock: socket.socket, total: int) -> float:
    block = b"\0" * (1 << 20)
    start = time.perf_counter()
    sent = 0
    while sent < total:
        sock.sendall(block)
        sent += len(block)
    sock.shutdown(socket.SHUT_WR)
    answer = read_all(sock)
    elapsed = time.perf_counter() - start
    sock.close()
    assert int(answer) == total, answer
    return total / elapsed / 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--megabytes", type=int, default=64)
    parser.add_argument("--held", type=int, default=200)
    args = parser.parse_args()

    with (
        serve(_Http) as http_port,
        serve(_Sink) as sink_port,
        serve(_Echo) as echo_port,
        proxy() as proxy_port,
    ):
        via = b"GET http://localhost:%d/ HTTP/1.1\r\nHost: localhost\r\n\r\n" % http_port
        direct = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        assert request(proxy_port, via).endswith(SMALL)
        times = interleaved(
            {
                "direct": lambda: request(http_port, direct),
                "proxy": lambda: request(proxy_port, via),
            },
            runs=args.runs,
            warmup=5,
        )
        added_ms = (times["proxy"] - times["direct"]) * 1000
        ratio = times["proxy"] / times["direct"]
        print(
            f"latency: direct {times['direct'] * 1000:.2f} ms, proxy "
            f"{times['proxy'] * 1000:.2f} ms per request (new connection each); "
            f"ratio {ratio:.1f}x, added {added_ms:.2f} ms "
            f"[target < 5 ms added: {verdict(added_ms, 5.0)}]"
        )

        total = args.megabytes << 20
        rates: dict[str, list[float]] = {"direct": [], "proxy": []}
        for _ in range(3):
            rates["direct"].append(push(socket.create_connection(("127.0.0.1", sink_port)), total))
            rates["proxy"].append(push(tunnel(proxy_port, sink_port), total))
        d, p = statistics.median(rates["direct"]), statistics.median(rates["proxy"])
        print(
            f"throughput ({args.megabytes} MB): direct {d:.0f} MB/s, through a CONNECT "
            f"tunnel {p:.0f} MB/s; ratio {d / p:.1f}x slower "
            f"[target <= 3x: {verdict(d / p, 3.0)}]"
        )

        start = time.perf_counter()
        tunnels = [tunnel(proxy_port, echo_port) for _ in range(args.held)]
        answered = 0
        for i, s in enumerate(tunnels):
            s.sendall(b"ping %d" % i)
        for i, s in enumerate(tunnels):
            if s.recv(64) == b"ping %d" % i:
                answered += 1
        for s in tunnels:
            s.close()
        held_s = time.perf_counter() - start
        print(
            f"held: {answered}/{args.held} CONNECT tunnels open at once and answering "
            f"({held_s:.2f} s to open and ping all) "
            f"[{'ok' if answered == args.held else 'FAILED'}]"
        )


if __name__ == "__main__":
    main()
