"""Masked credentials: what TLS termination costs on loopback, against a plain tunnel.

Three processes, as in real use: curl (the command), the proxy (as in a session: its own
event loop thread, one call's listener handed a socket on the host, as the relay hands it
one inside the sandbox) and a loopback HTTPS server in a process of its own, with its own
certificates, standing for two names the test resolver maps to 127.0.0.1:
``intercepted.test`` (a masked credential names it: the proxy terminates TLS, checks the
server's certificate, replaces the placeholder in the request with the real value, scans
the response for an echoed real value) and ``tunnelled.test`` (no credential: a CONNECT
tunnel, as today). The same requests go to each, interleaved, in the same run.

- latency: small GETs with the placeholder in ``Authorization`` on a kept-alive connection
  (curl's ``time_total`` of each after the connection's first); added = intercepted −
  tunnelled, medians;
- throughput: a 100 MB download through each; ratio intercepted / tunnelled;
- a 1 GiB upload through the intercepted host, a placeholder in every MiB (each replaced):
  how much the proxy's process's peak memory grows (the body is streamed).

Targets: added latency per intercepted request ≤ 2 ms; throughput ratio ≥ 0.8; the
upload's memory growth well under its size (< 64 MB).
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import ipaddress
import multiprocessing
import socket
import ssl
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path

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

    def do_GET(self) -> None:
        if self.path == "/check":
            real = self.headers.get("Authorization", "") == f"Bearer {REAL}"
            self.send_response(200 if real else 403)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
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

    def do_PUT(self) -> None:
        left = int(self.headers["Content-Length"])
        real = 0
        tail = b""
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 20))
            if not chunk:
                break
            real += (tail + chunk).count(REAL.encode())
            tail = chunk[-len(REAL) + 1 :]
            left -= len(chunk)
        body = str(real).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _serve(ca: SessionCA, conn: Connection) -> None:
    """The server, in a process of its own (the client is curl: three processes, as real)."""

    def pick(sock: ssl.SSLObject | ssl.SSLSocket, name: str | None, _: object) -> None:
        sock.context = ca.server_context(name or NAMES[0])

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def get_request(self) -> tuple[socket.socket, object]:
            sock, addr = self.socket.accept()
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            ctx = ca.server_context(NAMES[0])
            ctx.sni_callback = pick
            return ctx.wrap_socket(sock, server_side=True), addr

    server = Server(("127.0.0.1", 0), _Handler)
    conn.send(server.server_address[1])
    server.serve_forever()


@contextlib.contextmanager
def https_server(ca: SessionCA) -> Iterator[int]:
    ours, theirs = multiprocessing.get_context("fork").Pipe()
    proc = multiprocessing.get_context("fork").Process(
        target=_serve, args=(ca, theirs), daemon=True
    )
    proc.start()
    try:
        yield ours.recv()
    finally:
        proc.kill()
        proc.join()


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

    def upload(self, total: int) -> int:
        """PUT ``total`` bytes with the placeholder at the end of each MiB; the server says
        how many real values it received."""
        block = b"\0" * ((1 << 20) - len(PLACEHOLDER)) + PLACEHOLDER.encode()
        self.sock.sendall(
            f"PUT /up HTTP/1.1\r\nHost: {self.host}\r\nContent-Length: {total}\r\n\r\n".encode()
        )
        sent = 0
        while sent < total:
            self.sock.sendall(block)
            sent += len(block)
        length = 0
        while True:
            line = self.file.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return int(self.file.read(length))

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def peak_rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def curl(proxy_port: int, ca: Path, url: str, count: int = 1) -> list[tuple[float, int, int]]:
    """(seconds, bytes, status) of ``count`` GETs of ``url`` on one kept-alive connection."""
    cmd = ["curl", "-sS", "--proxy", f"http://127.0.0.1:{proxy_port}", "--cacert", str(ca)]
    cmd += [
        "-H",
        f"Authorization: Bearer {PLACEHOLDER}",
        "-w",
        "%{time_total} %{size_download} %{http_code}\\n",
    ]
    for _ in range(count):
        cmd += ["-o", "/dev/null", url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()]
    return [(float(a), int(b), int(c)) for a, b, c in rows]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=30)
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--upload-mib", type=int, default=1024)
    args = parser.parse_args()
    server_ca = SessionCA()
    with (
        https_server(server_ca) as port,
        proxy(server_ca) as (proxy_port, net),
        tempfile.TemporaryDirectory() as tmp,
    ):
        cas = {"intercepted": Path(tmp) / "session.pem", "tunnelled": Path(tmp) / "server.pem"}
        cas["intercepted"].write_bytes(net.ca().cert_pem)  # public certificates only
        cas["tunnelled"].write_bytes(server_ca.cert_pem)
        url = {k: f"https://{k}.test:{port}" for k in cas}
        # The server answers /check with 200 only for the real value.
        assert curl(proxy_port, cas["intercepted"], url["intercepted"] + "/check")[0][2] == 200
        assert curl(proxy_port, cas["tunnelled"], url["tunnelled"] + "/check")[0][2] == 403
        times: dict[str, list[float]] = {k: [] for k in cas}
        for _ in range(args.rounds):
            for name in cas:
                rows = curl(proxy_port, cas[name], url[name] + "/", args.per_round + 1)
                times[name] += [t for t, _, _ in rows[1:]]  # after the connection's first
        t, i = statistics.median(times["tunnelled"]), statistics.median(times["intercepted"])
        added = (i - t) * 1000
        print(
            f"latency per request (curl, kept-alive): tunnelled {t * 1000:.3f} ms, intercepted "
            f"{i * 1000:.3f} ms; added {added:.3f} ms [target <= 2 ms: "
            f"{'ok' if added <= 2.0 else 'OVER TARGET'}]"
        )
        total = args.megabytes * 1000 * 1000
        rates: dict[str, list[float]] = {k: [] for k in cas}
        for _ in range(3):
            for name in cas:
                start = time.perf_counter()
                ((_, size, status),) = curl(proxy_port, cas[name], f"{url[name]}/big/{total}")
                assert size == total and status == 200, (name, size, status)
                rates[name].append(total / (time.perf_counter() - start) / 1e6)
        t, i = statistics.median(rates["tunnelled"]), statistics.median(rates["intercepted"])
        print(
            f"download ({args.megabytes} MB, curl): tunnelled {t:.0f} MB/s, intercepted "
            f"{i:.0f} MB/s; ratio {i / t:.2f} [target >= 0.8: "
            f"{'ok' if i / t >= 0.8 else 'UNDER TARGET'}]"
        )
        inter = Client(
            proxy_port,
            "intercepted.test",
            port,
            ssl.create_default_context(cadata=net.ca().cert_pem.decode()),
        )
        reset_peak()
        before = peak_rss_mb()
        start = time.perf_counter()
        injected = inter.upload(args.upload_mib << 20)
        elapsed = time.perf_counter() - start
        grown = peak_rss_mb() - before
        inter.close()
        assert injected == args.upload_mib, injected
        print(
            f"upload ({args.upload_mib} MiB, a placeholder in every MiB) through the intercepted "
            f"host: {args.upload_mib / elapsed:.0f} MiB/s, all {injected} replaced; peak memory "
            f"of the proxy's process grew {grown:.0f} MB [target: streamed, < 64 MB: "
            f"{'ok' if grown < 64 else 'OVER TARGET'}]"
        )


if __name__ == "__main__":
    main()
