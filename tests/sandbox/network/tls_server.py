"""A loopback HTTPS server with its own certificate standing for real hosts (github.com,
registry.npmjs.org), made by a test CA. It records what really reached it (the
``Authorization`` headers and bodies) and serves a bare repository through ``git
http-backend`` (smart HTTP), after checking the token, as GitHub would."""

from __future__ import annotations

import base64
import datetime
import http.server
import os
import ssl
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass
class UpstreamCA:
    """A CA and one leaf for ``names`` (PEM files under ``directory``)."""

    directory: Path
    names: tuple[str, ...]
    ca_pem: Path = field(init=False)
    cert: Path = field(init=False)
    key: Path = field(init=False)

    def __post_init__(self) -> None:
        now = datetime.datetime.now(datetime.UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test upstream CA")])
        ca = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        leaf = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, self.names[0])]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(
                x509.SubjectAlternativeName([x509.DNSName(n) for n in self.names]),
                critical=False,
            )
            .sign(ca_key, hashes.SHA256())
        )
        self.directory.mkdir(parents=True, exist_ok=True)
        self.ca_pem = self.directory / "ca.pem"
        self.ca_pem.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        self.cert = self.directory / "leaf.pem"
        self.cert.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
        self.key = self.directory / "leaf.key"
        self.key.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )

    def client_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca_pem))
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx


@dataclass
class Received:
    method: str
    path: str
    host: str
    authorization: str
    body: bytes


class TLSServer:
    """HTTPS on 127.0.0.1: ``/git/<repo>`` is smart HTTP (needs Basic ``user:token``),
    ``/big/<n>`` streams n bytes, anything else answers ``ok`` and is recorded."""

    def __init__(self, ca: UpstreamCA, *, token: str = "", git_root: Path | None = None) -> None:
        self.received: list[Received] = []
        self.token = token
        self.git_root = git_root
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    parts = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return b"".join(parts)
                        parts.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _send(
                self, status: int, body: bytes, headers: dict[str, str] | None = None
            ) -> None:
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _answer(self) -> None:
                body = self._body()
                auth = self.headers.get("Authorization", "")
                owner.received.append(
                    Received(self.command, self.path, self.headers.get("Host", ""), auth, body)
                )
                if self.path.startswith("/git/"):
                    self._git(auth, body)
                elif self.path.startswith("/big/"):
                    n = int(self.path.split("/")[2])
                    self.send_response(200)
                    self.send_header("Content-Length", str(n))
                    self.end_headers()
                    block = b"x" * (1 << 20)
                    while n > 0:
                        self.wfile.write(block[: min(n, len(block))])
                        n -= len(block)
                elif self.path.startswith("/echo"):
                    self._send(200, auth.encode(), {"X-Echo": auth})
                else:
                    self._send(200, b"ok\n")

            def _git(self, auth: str, body: bytes) -> None:
                expected = ""
                if auth.startswith("Basic "):
                    expected = base64.b64decode(auth[6:]).decode(errors="replace")
                if not expected.endswith(":" + owner.token):
                    self._send(401, b"auth needed\n", {"WWW-Authenticate": 'Basic realm="git"'})
                    return
                path, _, query = self.path[4:].partition("?")
                env = {
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "GIT_PROJECT_ROOT": str(owner.git_root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "PATH_INFO": path,
                    "QUERY_STRING": query,
                    "REQUEST_METHOD": self.command,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "REMOTE_USER": expected.split(":")[0],
                    "REMOTE_ADDR": "127.0.0.1",
                    "CONTENT_LENGTH": str(len(body)),
                }
                if self.headers.get("Content-Encoding"):
                    env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
                if self.headers.get("Git-Protocol"):
                    env["HTTP_GIT_PROTOCOL"] = self.headers["Git-Protocol"]
                proc = subprocess.run(
                    ["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60
                )
                head, _, out = proc.stdout.partition(b"\r\n\r\n")
                status = 200
                headers: dict[str, str] = {}
                for line in head.decode(errors="replace").splitlines():
                    k, _, v = line.partition(":")
                    if k.lower() == "status":
                        status = int(v.strip().split()[0])
                    elif k:
                        headers[k] = v.strip()
                self._send(status, out, headers)

            do_GET = do_POST = do_PUT = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(ca.cert), str(ca.key))
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> TLSServer:
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
