"""OAuth pieces of the MCP client: the loopback callback and the token file."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import anyio
import httpx
import pytest

from codingcode.config import Scope
from codingcode.errors import AgentError
from codingcode.mcp.config import JWT_BEARER, McpConfigError, OAuthEntry, parse_server
from codingcode.mcp.oauth import (
    FileTokenStorage,
    exchange_id_token,
    loopback_callback,
    uses_oauth,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def _config(url: str = "http://127.0.0.1:9/mcp", **extra: object) -> object:
    return parse_server(
        "docs", {"type": "http", "url": url, **extra}, scope=Scope.USER, source=Path("s.json")
    )


async def test_callback_takes_only_its_path_and_one_answer() -> None:
    async with loopback_callback() as cb, httpx.AsyncClient() as http:
        base = f"http://127.0.0.1:{cb.port}"
        assert (await http.get(f"{base}/favicon.ico")).status_code == 404
        assert (await http.get(f"{base}/callback")).status_code == 400  # no code, no error
        assert not cb.done.is_set()
        ok = await http.get(f"{base}/callback?code=abc&state=s1&iss=https%3A%2F%2Fas")
        assert ok.status_code == 200
        assert cb.done.is_set()
        assert (cb.result.code, cb.result.state, cb.result.iss) == ("abc", "s1", "https://as")
        # A second redirect (a replay) changes nothing.
        assert (await http.get(f"{base}/callback?code=evil&state=s1")).status_code == 404
        assert cb.result.code == "abc"


async def test_callback_reports_a_refusal() -> None:
    async with loopback_callback() as cb, httpx.AsyncClient() as http:
        r = await http.get(
            f"http://127.0.0.1:{cb.port}/callback?error=access_denied&error_description=no"
        )
        assert r.status_code == 400
        assert cb.result.error == "access_denied: no" and cb.result.code is None


async def test_callback_survives_a_client_that_sends_nothing() -> None:
    async with loopback_callback() as cb:
        silent = await anyio.connect_tcp("127.0.0.1", cb.port)
        async with httpx.AsyncClient() as http:  # served while the silent one waits
            r = await http.get(f"http://127.0.0.1:{cb.port}/callback?code=c&state=s")
        assert r.status_code == 200
        await silent.aclose()


async def test_a_taken_port_is_one_clear_error() -> None:
    async with loopback_callback() as cb:
        with pytest.raises(AgentError, match=f"127.0.0.1:{cb.port}"):
            async with loopback_callback(cb.port):
                pass


async def test_token_file_is_private_and_bound_to_the_url(state: Path) -> None:
    from mcp.shared.auth import OAuthToken

    storage = FileTokenStorage(_config())  # type: ignore[arg-type]
    await storage.set_tokens(OAuthToken(access_token="t1", expires_in=60, refresh_token="r"))
    assert stat.S_IMODE(storage.path.stat().st_mode) == 0o600
    assert storage.path.parent == state / "mcp-oauth"
    got = await storage.get_tokens()
    assert got.access_token == "t1" and 0 < got.expires_in <= 60
    # The same name pointed at another URL does not get these tokens.
    other = FileTokenStorage(_config("http://127.0.0.1:10/mcp"))  # type: ignore[arg-type]
    assert await other.get_tokens() is None
    # A corrupt file is ignored (one warning), not a crash.
    storage.path.write_text("{not json")
    assert await storage.get_tokens() is None
    storage.path.write_text(json.dumps({"url": "http://127.0.0.1:9/mcp", "tokens": {"x": 1}}))
    assert await storage.get_tokens() is None
    assert storage.clear() is True and storage.clear() is False


async def test_headless_storage_never_registers_or_keeps_a_client(state: Path) -> None:
    storage = FileTokenStorage(_config(), persist_client=False, headless=True)  # type: ignore[arg-type]
    placeholder = await storage.get_client_info()
    assert placeholder.client_id == "codingcode-not-registered"
    assert not storage.path.exists()


async def test_pre_registered_client_comes_from_the_entry(state: Path) -> None:
    config = _config(oauth={"client_id": "abc", "client_secret": "${SECRET:-s3}"})
    info = await FileTokenStorage(config).get_client_info()  # type: ignore[arg-type]
    assert (info.client_id, info.client_secret) == ("abc", "s3")
    assert info.token_endpoint_auth_method == "client_secret_basic"  # the default
    config = _config(oauth={"client_id": "abc", "client_secret": "s", **_POST})
    info = await FileTokenStorage(config).get_client_info()  # type: ignore[arg-type]
    assert info.token_endpoint_auth_method == "client_secret_post"
    public = await FileTokenStorage(_config(oauth={"client_id": "abc"})).get_client_info()  # type: ignore[arg-type]
    assert public.token_endpoint_auth_method == "none"


_POST = {"token_endpoint_auth_method": "client_secret_post"}


def test_who_uses_oauth() -> None:
    assert uses_oauth(_config())  # type: ignore[arg-type]
    assert not uses_oauth(_config(oauth=False))  # type: ignore[arg-type]
    assert not uses_oauth(_config(headers={"authorization": "Bearer x"}))  # type: ignore[arg-type]


async def test_only_a_web_page_is_opened(state: Path) -> None:
    from codingcode.mcp.oauth import LoginRequiredError, login_provider

    opened: list[str] = []
    async with login_provider(_config(), browse=opened.append) as provider:  # type: ignore[arg-type]
        for url in ("file:///etc/passwd", "javascript:alert(1)", "-nosandbox", "http:///x"):
            with pytest.raises(LoginRequiredError, match="not a web page"):
                await provider.context.redirect_handler(url)
        await provider.context.redirect_handler("https://as.example/authorize?x=1")
    assert opened == ["https://as.example/authorize?x=1"]


def test_cross_app_grant_names_what_it_is_missing() -> None:
    with pytest.raises(McpConfigError) as err:
        _config(oauth={"grant_type": JWT_BEARER, "client_id": "c", "client_secret": "s"})
    assert "needs issuer, idp_id_token, idp_token_endpoint (or idp_issuer)" in str(err.value)


class _Idp:
    """A loopback identity provider: its OpenID configuration and a token endpoint that
    answers ``answer`` and records each form it was sent."""

    def __init__(self, status: int, answer: dict[str, str]) -> None:
        import http.server
        import threading
        from urllib.parse import parse_qsl

        self.forms: list[dict[str, str]] = []
        idp = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, code: int, body: dict[str, str]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send(200, {"issuer": idp.url, "token_endpoint": f"{idp.url}/token"})

            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                idp.forms.append(dict(parse_qsl(self.rfile.read(length).decode())))
                self._send(status, answer)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _cross_app(**extra: str) -> OAuthEntry:
    return OAuthEntry.model_validate(
        {
            "grant_type": JWT_BEARER,
            "client_id": "mcp-client",
            "client_secret": "s",
            "issuer": "http://127.0.0.1:9",
            "idp_id_token": "the-id-token",
            "idp_client_id": "idp-client",
            **extra,
        }
    )


async def test_cross_app_leg_one_exchanges_the_id_token_at_the_idp() -> None:
    idp = _Idp(200, {"access_token": "the-id-jag", "issued_token_type": "x"})
    try:
        grant = await exchange_id_token(
            _cross_app(idp_issuer=idp.url), "http://as.example", "http://mcp.example/mcp"
        )
    finally:
        idp.close()
    assert grant == "the-id-jag"
    assert idp.forms == [
        {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": "the-id-token",
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "audience": "http://as.example",
            "resource": "http://mcp.example/mcp",
            "client_id": "idp-client",
        }
    ]


async def test_cross_app_refusal_is_one_clear_error() -> None:
    idp = _Idp(400, {"error": "invalid_grant", "error_description": "Invalid ID token"})
    try:
        with pytest.raises(AgentError) as err:
            await exchange_id_token(
                _cross_app(idp_token_endpoint=f"{idp.url}/token"), "http://as", "http://r/mcp"
            )
    finally:
        idp.close()
    assert str(err.value) == (
        "The identity provider refused the token exchange (HTTP 400, invalid_grant: Invalid "
        "ID token); check idp_id_token and idp_client_id."
    )
    with pytest.raises(AgentError, match="could not be asked"):
        await exchange_id_token(
            _cross_app(idp_token_endpoint="http://127.0.0.1:9/token"), "http://as", "http://r"
        )
