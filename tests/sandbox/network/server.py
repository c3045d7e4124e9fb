"""A loopback HTTP server (and UDP socket) that records what really reached it."""

from __future__ import annotations

import http.server
import socket
import threading
from dataclasses import dataclass
from types import TracebackType


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    host: str


class LoggingServer:
    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.connections = 0
        seen = self.requests
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                owner.connections += 1
                super().setup()

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                seen.append(Seen(self.command, self.path, self.headers.get("Host", "")))
                body = b"hello from the test server\n"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True

            do_GET = do_POST = do_HEAD = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.setblocking(False)
        self.udp_port = self.udp.getsockname()[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def udp_received(self) -> int:
        count = 0
        while True:
            try:
                self.udp.recv(65536)
            except BlockingIOError:
                return count
            count += 1

    def __enter__(self) -> LoggingServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.udp.close()
