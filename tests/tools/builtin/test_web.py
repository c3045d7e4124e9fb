"""fetch_url and web_search against real local HTTP servers."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest

from codingcode.cancel import CancelSignal
from codingcode.errors import (
    CancelledError,
    DeniedError,
    InvalidArgumentsError,
    ToolFailureError,
)
from codingcode.tools import ToolExecCtx, ToolService
from codingcode.tools.builtin.web import address_problem, host_allowed

pytestmark = pytest.mark.anyio


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    #: Stream the body in this many chunks with a pause (to test cutting and cancelling).
    hang: float = 0.0


Route = Callable[["Request"], Reply]


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


class LocalServer:
    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[Request] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("content-length") or 0)
                req = Request(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length) if length else b"",
                )
                outer.requests.append(req)
                route = outer.routes.get(parts.path)
                reply = route(req) if route else Reply(404, b"not here")
                self.send_response(reply.status)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                if reply.hang:
                    self.send_header("Content-Length", str(len(reply.body) * 100))
                    self.end_headers()
                    self.wfile.write(reply.body)
                    self.wfile.flush()
                    import time

                    time.sleep(reply.hang)
                    return
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = _handle
            do_POST = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[LocalServer]:
    s = LocalServer()
    yield s
    s.close()


@pytest.fixture(autouse=True)
def isolated_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "user-config"))
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "user-state"))
    monkeypatch.delenv("CODINGCODE_TRUST_ALL", raising=False)


def write_settings(project: Path, web: dict[str, Any], *, trust: bool = True) -> None:
    """Write the project's settings; trusted by the user unless ``trust=False``."""
    from codingcode.trust import TrustStore

    (project / ".codingcode").mkdir(exist_ok=True)
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"web": web}))
    if trust:
        TrustStore().trust(project)


@pytest.fixture
def local_allowed(project: Path) -> None:
    write_settings(project, {"fetch": {"allow_private_hosts": ["127.0.0.1"]}})


def html(body: str) -> Reply:
    return Reply(body=body.encode(), headers={"Content-Type": "text/html; charset=utf-8"})


# -- fetch_url --------------------------------------------------------------------------
async def test_html_becomes_markdown(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx, local_allowed: None
) -> None:
    server.routes["/page"] = lambda r: html(
        "<html><head><title>T</title><style>body{color:red}</style>"
        "<script>var secret = 1;</script></head><body><h1>Hello</h1>"
        "<p>Some <b>bold</b> text and a <a href='/x'>link</a>.</p>"
        "<ul><li>one</li><li>two</li></ul></body></html>"
    )
    out = await service.call("fetch_url", {"url": server.url("/page")}, ctx)
    assert "# Hello" in out
    assert "**bold**" in out
    assert "[link](/x)" in out
    assert "* one" in out or "- one" in out
    assert "var secret" not in out and "color:red" not in out
    assert "converted to Markdown" in out


async def test_json_pretty_printed(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx, local_allowed: None
) -> None:
    server.routes["/api"] = lambda r: Reply(
        body=b'{"a":1,"b":[1,2]}', headers={"Content-Type": "application/json"}
    )
    out = await service.call("fetch_url", {"url": server.url("/api")}, ctx)
    assert '{\n  "a": 1,\n  "b": [\n    1,\n    2\n  ]\n}' in out


async def test_cut_at_max_length_says_so(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx, local_allowed: None
) -> None:
    server.routes["/long"] = lambda r: Reply(
        body=b"x" * 5000, headers={"Content-Type": "text/plain"}
    )
    out = await service.call("fetch_url", {"url": server.url("/long"), "max_length": 100}, ctx)
    body = out.split("\n\n", 1)[1]
    assert body.startswith("x" * 100 + "\n")
    assert "x" * 101 not in out
    # Plain text: reading stopped right after max_length characters, and it says so.
    assert "Cut: showing the first 100 characters; the response is longer (4.9 KB in all)" in out
    assert "max_length (at most 500000)" in out


async def test_html_and_json_are_read_whole_then_cut(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx, local_allowed: None
) -> None:
    server.routes["/page"] = lambda r: html("<p>" + "word " * 2000 + "</p>")
    out = await service.call("fetch_url", {"url": server.url("/page"), "max_length": 50}, ctx)
    assert "Cut: showing the first 50 of 9999 characters" in out
    big = json.dumps({"items": list(range(500))}).encode()
    server.routes["/big.json"] = lambda r: Reply(
        body=big, headers={"Content-Type": "application/json"}
    )
    out = await service.call("fetch_url", {"url": server.url("/big.json"), "max_length": 40}, ctx)
    assert "pretty-printed" in out and '{\n  "items": [\n    0,' in out
    assert "Cut: showing the first 40 of" in out


async def test_unknown_charset_and_cut_utf8(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx, local_allowed: None
) -> None:
    server.routes["/odd"] = lambda r: Reply(
        body="héllo".encode(), headers={"Content-Type": "text/plain; charset=x-unknown-9"}
    )
    assert (await service.call("fetch_url", {"url": server.url("/odd")}, ctx)).endswith("héllo")
    server.routes["/utf8"] = lambda r: Reply(
        body=("é" * 100).encode(), headers={"Content-Type": "text/plain; charset=utf-8"}
    )
    out = await service.call("fetch_url", {"url": server.url("/utf8"), "max_length": 3}, ctx)
    assert out.split("\n\n")[1] == "ééé"


async def test_max_length_bounds(service: ToolService, ctx: ToolExecCtx) -> None:
    with pytest.raises(InvalidArgumentsError, match="max_length"):
        await service.call("fetch_url", {"url": "http://example.com", "max_length": 500_001}, ctx)
    schema = service.get("fetch_url").input_schema()
    assert schema["properties"]["max_length"]["default"] == 100_000
    assert schema["properties"]["max_length"]["maximum"] == 500_000


async def test_binary_refused_with_type_and_size(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx, local_allowed: None
) -> None:
    server.routes["/img"] = lambda r: Reply(
        body=b"\x89PNG" + b"\0" * 2044, headers={"Content-Type": "image/png"}
    )
    with pytest.raises(InvalidArgumentsError, match=r"binary content \(image/png, 2.0 KB\)"):
        await service.call("fetch_url", {"url": server.url("/img")}, ctx)


async def test_redirects_followed_and_limited(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx, local_allowed: None
) -> None:
    server.routes["/a"] = lambda r: Reply(302, headers={"Location": "/b"})
    server.routes["/b"] = lambda r: Reply(301, headers={"Location": server.url("/final")})
    server.routes["/final"] = lambda r: Reply(body=b"done", headers={"Content-Type": "text/plain"})
    out = await service.call("fetch_url", {"url": server.url("/a")}, ctx)
    assert out.startswith(f"URL: {server.url('/final')}")
    assert "Redirected 2 time(s)" in out and out.endswith("done")

    server.routes["/loop"] = lambda r: Reply(302, headers={"Location": "/loop"})
    with pytest.raises(ToolFailureError, match="Too many redirects"):
        await service.call("fetch_url", {"url": server.url("/loop")}, ctx)


async def test_http_error_status(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx, local_allowed: None
) -> None:
    with pytest.raises(ToolFailureError, match="HTTP 404"):
        await service.call("fetch_url", {"url": server.url("/missing")}, ctx)


async def test_loopback_refused_without_settings(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx
) -> None:
    server.routes["/p"] = lambda r: Reply(body=b"secret", headers={"Content-Type": "text/plain"})
    with pytest.raises(DeniedError, match="loopback address.*allow_private_hosts"):
        await service.call("fetch_url", {"url": server.url("/p")}, ctx)
    with pytest.raises(DeniedError, match="loopback"):
        await service.call("fetch_url", {"url": f"http://localhost:{server.port}/p"}, ctx)
    assert server.requests == []  # refused before connecting


async def test_redirect_to_private_host_refused(
    server: LocalServer, service: ToolService, project: Path, ctx: ToolExecCtx
) -> None:
    """A public-looking first hop cannot bounce the fetch to an internal address."""
    # 127.0.0.1 is allowed by name; the redirect goes to the metadata address, which is not.
    write_settings(project, {"fetch": {"allow_private_hosts": ["127.0.0.1"]}})
    server.routes["/bounce"] = lambda r: Reply(
        302, headers={"Location": "http://169.254.169.254/latest/meta-data/"}
    )
    with pytest.raises(DeniedError, match="169.254.169.254.*cloud metadata"):
        await service.call("fetch_url", {"url": server.url("/bounce")}, ctx)
    # ... and to localhost by another name (not on the allow list).
    server.routes["/bounce2"] = lambda r: Reply(
        302, headers={"Location": f"http://[::1]:{server.port}/x"}
    )
    with pytest.raises(DeniedError, match="loopback"):
        await service.call("fetch_url", {"url": server.url("/bounce2")}, ctx)


async def test_non_http_scheme_refused(service: ToolService, ctx: ToolExecCtx) -> None:
    with pytest.raises(InvalidArgumentsError, match="http:// or https://"):
        await service.call("fetch_url", {"url": "file:///etc/passwd"}, ctx)


def test_address_classification() -> None:
    import ipaddress

    for text, problem in [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.1", "private"),
        ("172.16.5.4", "private"),
        ("169.254.169.254", "metadata"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("100.64.0.1", "not a public"),
    ]:
        got = address_problem(ipaddress.ip_address(text))
        assert got is not None and problem in got, (text, got)
    assert address_problem(ipaddress.ip_address("93.184.216.34")) is None
    assert host_allowed("dev.local", ipaddress.ip_address("10.0.0.5"), ["10.0.0.0/8"])
    assert host_allowed("LocalHost", ipaddress.ip_address("::1"), ["localhost"])
    assert not host_allowed("x", ipaddress.ip_address("10.0.0.5"), ["192.168.0.0/16"])


async def test_timeout(
    server: LocalServer, service: ToolService, project: Path, ctx: ToolExecCtx
) -> None:
    write_settings(project, {"fetch": {"allow_private_hosts": ["127.0.0.1"], "timeout_s": 0.5}})
    server.routes["/slow"] = lambda r: Reply(
        body=b"a", headers={"Content-Type": "text/plain"}, hang=3
    )
    from codingcode.errors import ToolTimeoutError

    with anyio.fail_after(2.5), pytest.raises(ToolTimeoutError):
        await service.call("fetch_url", {"url": server.url("/slow")}, ctx)


async def test_cancellation(server: LocalServer, service: ToolService, project: Path) -> None:
    write_settings(project, {"fetch": {"allow_private_hosts": ["127.0.0.1"]}})
    arrived = threading.Event()

    def slow(r: Request) -> Reply:
        arrived.set()
        return Reply(body=b"a", headers={"Content-Type": "text/plain"}, hang=5)

    server.routes["/slow"] = slow
    signal = CancelSignal()
    ctx = ToolExecCtx(project_path=project, signal=signal)

    async def cancel_soon() -> None:
        await anyio.to_thread.run_sync(arrived.wait)
        signal.set()

    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_soon)
            with pytest.raises(CancelledError):
                await service.call("fetch_url", {"url": server.url("/slow")}, ctx)


async def test_bad_settings_name_file_and_field(service: ToolService, project: Path) -> None:
    write_settings(project, {"fetch": {"allow_private_hosts": "127.0.0.1"}})
    ctx = ToolExecCtx(project_path=project)
    with pytest.raises(
        InvalidArgumentsError, match=r"settings.json: web.fetch.allow_private_hosts"
    ):
        await service.call("fetch_url", {"url": "http://example.com"}, ctx)


# -- web_search -------------------------------------------------------------------------
async def test_no_provider_says_how(service: ToolService, ctx: ToolExecCtx) -> None:
    with pytest.raises(ToolFailureError, match=r"No web search provider.*searxng.*BRAVE_API_KEY"):
        await service.call("web_search", {"query": "x"}, ctx)


async def test_searxng(
    server: LocalServer, service: ToolService, project: Path, ctx: ToolExecCtx
) -> None:
    write_settings(project, {"search": {"provider": "searxng", "url": server.url("")}})
    payload = {
        "query": "python",
        "number_of_results": 0,
        "results": [
            {
                "url": f"https://example.org/{i}",
                "title": f"Result {i}",
                "content": f"snippet {i}",
                "engine": "duckduckgo",
                "engines": ["duckduckgo"],
                "score": 1.0,
                "category": "general",
            }
            for i in range(30)
        ],
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": [],
        "unresponsive_engines": [],
    }
    server.routes["/search"] = lambda r: Reply(
        body=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    out = await service.call("web_search", {"query": "python"}, ctx)
    assert out.startswith("8 result(s) for 'python' (searxng)")
    assert "Result 7" in out and "Result 8" not in out and "snippet 0" in out
    assert server.requests[-1].query == {"q": ["python"], "format": ["json"]}
    out = await service.call("web_search", {"query": "python", "max_results": 20}, ctx)
    assert "20 result(s)" in out
    with pytest.raises(InvalidArgumentsError, match="max_results"):
        await service.call("web_search", {"query": "python", "max_results": 21}, ctx)


async def test_brave(
    server: LocalServer,
    service: ToolService,
    project: Path,
    ctx: ToolExecCtx,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_settings(project, {"search": {"provider": "brave", "url": server.url("")}})
    with pytest.raises(ToolFailureError, match="BRAVE_API_KEY"):
        await service.call("web_search", {"query": "x"}, ctx)
    monkeypatch.setenv("BRAVE_API_KEY", "k-123")
    payload = {
        "type": "search",
        "query": {"original": "rust"},
        "mixed": {"type": "mixed", "main": []},
        "web": {
            "type": "search",
            "results": [
                {
                    "type": "search_result",
                    "title": "The Rust Language",
                    "url": "https://www.rust-lang.org/",
                    "description": "A language empowering everyone.",
                    "is_source_local": False,
                    "profile": {"name": "Rust"},
                }
            ],
        },
    }
    server.routes["/res/v1/web/search"] = lambda r: Reply(
        body=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    out = await service.call("web_search", {"query": "rust", "max_results": 3}, ctx)
    assert "The Rust Language\n   https://www.rust-lang.org/\n   A language" in out
    req = server.requests[-1]
    assert req.headers["x-subscription-token"] == "k-123"
    assert req.query == {"q": ["rust"], "count": ["3"]}


async def test_tavily(
    server: LocalServer,
    service: ToolService,
    project: Path,
    ctx: ToolExecCtx,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_settings(
        project, {"search": {"provider": "tavily", "url": server.url(""), "api_key_env": "MY_TV"}}
    )
    monkeypatch.setenv("MY_TV", "tvly-abc")
    payload = {
        "query": "go",
        "answer": None,
        "images": [],
        "results": [
            {
                "title": "Go",
                "url": "https://go.dev/",
                "content": "Build simple software.",
                "score": 0.9,
            }
        ],
        "response_time": 1.2,
    }
    server.routes["/search"] = lambda r: Reply(
        body=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    out = await service.call("web_search", {"query": "go"}, ctx)
    assert "1. Go\n   https://go.dev/\n   Build simple software." in out
    req = server.requests[-1]
    assert req.method == "POST" and req.headers["authorization"] == "Bearer tvly-abc"
    assert json.loads(req.body) == {"query": "go", "max_results": 8}


async def test_provider_error_status(
    server: LocalServer, service: ToolService, project: Path, ctx: ToolExecCtx
) -> None:
    write_settings(project, {"search": {"provider": "searxng", "url": server.url("")}})
    server.routes["/search"] = lambda r: Reply(403, b"Forbidden")
    with pytest.raises(ToolFailureError, match="enable it in the instance's settings.yml"):
        await service.call("web_search", {"query": "x"}, ctx)


async def test_untrusted_project_cannot_grant_private_hosts_or_a_search_provider(
    server: LocalServer, service: ToolService, project: Path, ctx: ToolExecCtx
) -> None:
    """A cloned repository's settings cannot open the SSRF guard or pick where queries go."""
    write_settings(
        project,
        {
            "fetch": {"allow_private_hosts": ["127.0.0.1"]},
            "search": {"provider": "searxng", "url": server.url("")},
        },
        trust=False,
    )
    server.routes["/p"] = lambda r: Reply(body=b"internal", headers={"Content-Type": "text/plain"})
    with pytest.raises(
        DeniedError, match=r"loopback.*Ignored from untrusted project settings.*trust"
    ):
        await service.call("fetch_url", {"url": server.url("/p")}, ctx)
    with pytest.raises(ToolFailureError, match=r"No web search provider.*web.search in"):
        await service.call("web_search", {"query": "x"}, ctx)
    assert server.requests == []
    # The user's own settings are theirs: a private host allowed there works.
    user = project.parent / "user-config"
    user.mkdir(exist_ok=True)
    (user / "settings.json").write_text(
        json.dumps({"web": {"fetch": {"allow_private_hosts": ["127.0.0.1"]}}})
    )
    assert (await service.call("fetch_url", {"url": server.url("/p")}, ctx)).endswith("internal")


@pytest.fixture
def localhost_cert(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for the name ``localhost`` (key, cert)."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("needs openssl to make a test certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return key, cert


async def test_https_connects_to_the_checked_address_with_the_real_name(
    localhost_cert: tuple[Path, Path],
) -> None:
    """The connection is pinned to the checked IP while TLS still verifies the host name."""
    import ssl

    import httpx

    from codingcode.tools.builtin.web import FetchSettings, fetch_raw

    key, cert = localhost_cert
    server = LocalServer()
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    server.httpd.socket = server_ctx.wrap_socket(server.httpd.socket, server_side=True)
    server.routes["/tls"] = lambda r: Reply(body=b"secure", headers={"Content-Type": "text/plain"})
    client_ctx = ssl.create_default_context(cafile=str(cert))
    settings = FetchSettings(allow_private_hosts=["localhost"])
    try:
        async with httpx.AsyncClient(verify=client_ctx, trust_env=False) as client:
            # localhost may resolve to ::1 first, where nothing listens: the next address is tried.
            url = httpx.URL(f"https://localhost:{server.port}/tls")
            body = await fetch_raw(url, 1000, settings, client=client)
            assert body.data == b"secure"
            assert server.requests[-1].headers["host"] == f"localhost:{server.port}"
            # The certificate names localhost, not 127.0.0.1: a literal IP URL must fail
            # verification, proving the name (not the pinned IP) is what TLS checked above.
            with pytest.raises(httpx.ConnectError):
                await fetch_raw(
                    httpx.URL(f"https://127.0.0.1:{server.port}/tls"),
                    1000,
                    FetchSettings(allow_private_hosts=["127.0.0.1"]),
                    client=client,
                )
    finally:
        server.close()


async def test_next_checked_address_is_tried_when_one_refuses(
    server: LocalServer,
    service: ToolService,
    project: Path,
    ctx: ToolExecCtx,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    write_settings(project, {"fetch": {"allow_private_hosts": ["dev.internal"]}})

    async def fake_getaddrinfo(host: str, port: int, **kw: object) -> list[tuple[object, ...]]:
        assert host == "dev.internal"
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", port, 0, 0)),  # nobody there
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port)),
        ]

    monkeypatch.setattr(anyio, "getaddrinfo", fake_getaddrinfo)
    server.routes["/x"] = lambda r: Reply(body=b"reached", headers={"Content-Type": "text/plain"})
    out = await service.call("fetch_url", {"url": f"http://dev.internal:{server.port}/x"}, ctx)
    assert out.endswith("reached")
    assert server.requests[-1].headers["host"] == f"dev.internal:{server.port}"
