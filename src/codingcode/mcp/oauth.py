"""OAuth 2.1 for HTTP MCP servers, on the SDK's own client (:mod:`mcp.client.auth`).

The SDK's :class:`~mcp.client.auth.OAuthClientProvider` does the protocol: protected-resource
and authorization-server metadata discovery, dynamic client registration (or a client-ID
metadata document), authorization code with PKCE, token refresh, and step-up on 403
``insufficient_scope``. This module gives it what is ours:

* :class:`FileTokenStorage` — tokens and the registered client of one server, in a 0600 file
  under the user's state directory (``mcp-oauth/``), never in the project. Bound to the
  server's URL: the same name pointed elsewhere starts from nothing.
* :class:`LoopbackCallback` — the redirect received on ``http://127.0.0.1:PORT/callback``.
* the browser opened through :mod:`webbrowser` (so ``$BROWSER`` is honoured), only by
  ``codingcode mcp login NAME``. A session never opens a browser: a server that needs a
  login makes its connection fail with :class:`LoginRequiredError`, "run `codingcode mcp
  login NAME`".

A pre-registered client comes from the entry's ``oauth`` object (``client_id``, optional
``client_secret``, ``callback_port``, ``scope``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
import time
import webbrowser
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc

from codingcode.errors import AgentError, ToolFailureError
from codingcode.mcp.config import JWT_BEARER, HttpEntry, McpServerConfig, OAuthEntry

logger = logging.getLogger("codingcode.mcp")

#: How long ``mcp login`` waits for the browser to come back by default.
LOGIN_TIMEOUT_S = 300.0
_CALLBACK_PATH = "/callback"
_MAX_REQUEST_HEAD = 16 * 1024


class LoginRequiredError(ToolFailureError):
    """A server needs an OAuth login and nobody is there to do it."""


class _QuietLoginRequired(logging.Filter):
    """The SDK logs every failed flow with its traceback; we report the failure once, in
    the server's own line ("needs login", or why the flow failed)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, LoginRequiredError) or record.msg == "OAuth flow error")


logging.getLogger("mcp.client.auth.oauth2").addFilter(_QuietLoginRequired())


def login_hint(name: str) -> str:
    return f"run `codingcode mcp login {name}`"


def oauth_dir() -> Path:
    from codingcode.config import user_state_dir

    return user_state_dir() / "mcp-oauth"


def uses_oauth(config: McpServerConfig) -> bool:
    """True when this server's HTTP requests go through OAuth (off for stdio, for
    ``"oauth": false`` and when the entry sends its own Authorization header)."""
    entry = config.entry
    if not isinstance(entry, HttpEntry) or entry.oauth is False:
        return False
    return not any(k.lower() == "authorization" for k in entry.headers)


def _oauth_entry(config: McpServerConfig) -> OAuthEntry:
    entry = config.entry
    if isinstance(entry, HttpEntry) and isinstance(entry.oauth, OAuthEntry):
        return entry.oauth
    return OAuthEntry()


class FileTokenStorage:
    """One server's tokens and client registration, in a 0600 JSON file of the state dir."""

    def __init__(
        self, config: McpServerConfig, *, persist_client: bool = True, headless: bool = False
    ) -> None:
        assert isinstance(config.entry, HttpEntry)
        self.name = config.name
        self.url = config.entry.url
        self.oauth = _oauth_entry(config)
        #: A registration made without a login (headless) is not kept: its redirect URI
        #: would be a port nobody listens on.
        self.persist_client = persist_client
        #: With no registration stored, a headless session offers a placeholder so the SDK
        #: does not register a client at the server only to find nobody can log in.
        self.headless = headless
        self._client: Any = None
        digest = hashlib.sha256(self.url.encode()).hexdigest()[:16]
        self.path = oauth_dir() / f"{self.name}-{digest}.json"

    # -- the file -------------------------------------------------------------------------
    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            logger.warning("Ignoring unreadable OAuth state %s: %s", self.path, exc)
            return {}
        if not isinstance(data, dict) or data.get("url") != self.url:
            return {}
        return data

    def _write(self, **changes: Any) -> None:
        from codingcode.atomic import atomic_write_bytes

        data = self._read() | changes | {"server": self.name, "url": self.url}
        data = {k: v for k, v in data.items() if v is not None}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):
            os.chmod(self.path.parent, 0o700)
        atomic_write_bytes(self.path, json.dumps(data, indent=1).encode(), mode=0o600)

    def clear(self) -> bool:
        """Forget this server's login; True when there was one."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    def has_tokens(self) -> bool:
        return bool(self._read().get("tokens"))

    # -- mcp.client.auth.TokenStorage ---------------------------------------------------
    async def get_tokens(self) -> Any:
        """The stored tokens, ``expires_in`` counted from now (so an access token that ran
        out while no session was open is refreshed, not sent)."""
        from mcp.shared.auth import OAuthToken

        data = self._read()
        raw = data.get("tokens")
        try:
            tokens = OAuthToken.model_validate(raw) if raw else None
        except ValueError:
            return None
        expires_at = data.get("expires_at")
        if tokens is not None and isinstance(expires_at, int | float):
            tokens.expires_in = int(expires_at - time.time())
        return tokens

    async def set_tokens(self, tokens: Any) -> None:
        expires_at = time.time() + int(tokens.expires_in) if tokens.expires_in else None
        self._write(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires_at)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        if self.oauth.client_id:  # pre-registered in the configuration
            return OAuthClientInformationFull(
                client_id=self.oauth.client_id,
                client_secret=self.oauth.client_secret,
                token_endpoint_auth_method=(
                    self.oauth.token_endpoint_auth_method if self.oauth.client_secret else "none"
                ),
                redirect_uris=None,
            )
        if self._client is not None:
            return self._client
        raw = self._read().get("client")
        try:
            stored = OAuthClientInformationFull.model_validate(raw) if raw else None
        except ValueError:
            stored = None
        if stored is None and self.headless:
            return OAuthClientInformationFull(client_id="codingcode-not-registered")
        return stored

    async def set_client_info(self, client_info: Any) -> None:
        self._client = client_info
        if self.persist_client:
            self._write(client=client_info.model_dump(mode="json", exclude_none=True))

    def wanted_scope(self) -> str | None:
        """Scopes a session needed and could not get without a login (step-up)."""
        wanted = self._read().get("scope_wanted")
        return wanted if isinstance(wanted, str) and wanted else None

    def want_scope(self, scope: str) -> None:
        from mcp.client.auth.utils import union_scopes

        self._write(scope_wanted=union_scopes(self.wanted_scope(), scope))

    def stored_redirect_port(self) -> int | None:
        """The loopback port the stored registration was made for, if any."""
        client = self._read().get("client") or {}
        for uri in client.get("redirect_uris") or []:
            parts = urlsplit(str(uri))
            if parts.hostname == "127.0.0.1" and parts.port:
                return parts.port
        return None

    def forget_client(self) -> None:
        self._client = None
        if self._read().get("client"):
            self._write(client=None)


@dataclass
class CallbackResult:
    code: str | None = None
    state: str | None = None
    iss: str | None = None
    error: str | None = None


@dataclass
class LoopbackCallback:
    """Receives the authorization redirect on ``http://127.0.0.1:PORT/callback``."""

    listener: anyio.abc.Listener[anyio.abc.SocketStream]
    port: int
    done: anyio.Event = field(default_factory=anyio.Event)
    result: CallbackResult = field(default_factory=CallbackResult)

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{_CALLBACK_PATH}"

    async def serve(self) -> None:
        await self.listener.serve(self._handle)

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            head = b""
            with anyio.move_on_after(10):
                while b"\r\n\r\n" not in head and len(head) < _MAX_REQUEST_HEAD:
                    try:
                        head += await stream.receive(4096)
                    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                        break
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = line.split(" ")
            target = urlsplit(parts[1]) if len(parts) == 3 and parts[0] == "GET" else None
            if target is None or target.path != _CALLBACK_PATH or self.done.is_set():
                await self._reply(stream, 404, "Not found.")
                return
            query = {k: v[0] for k, v in parse_qs(target.query).items()}
            if "error" in query:
                why = query["error"] + (
                    f": {query['error_description']}" if "error_description" in query else ""
                )
                self.result = CallbackResult(state=query.get("state"), error=why)
                await self._reply(stream, 400, f"Login failed ({why}). You can close this tab.")
            elif "code" in query:
                self.result = CallbackResult(query["code"], query.get("state"), query.get("iss"))
                await self._reply(stream, 200, "Logged in; you can close this tab.")
            else:
                await self._reply(stream, 400, "This is not an authorization response.")
                return
            self.done.set()

    @staticmethod
    async def _reply(stream: anyio.abc.SocketStream, status: int, text: str) -> None:
        body = f"<!doctype html><title>codingcode</title><p>{text}</p>".encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
        head = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.send(head + body)


@contextlib.asynccontextmanager
async def loopback_callback(port: int = 0) -> AsyncIterator[LoopbackCallback]:
    """A listening callback on 127.0.0.1 (``port`` 0: any free port)."""
    try:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    except OSError as exc:
        raise ToolFailureError(
            f"Cannot listen for the login redirect on 127.0.0.1:{port}: {exc.strerror or exc}."
        ) from None
    bound = listener.extra(anyio.abc.SocketAttribute.local_port)
    callback = LoopbackCallback(listener, bound)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(callback.serve)
        try:
            yield callback
        finally:
            tg.cancel_scope.cancel()


def _provider_class() -> Any:
    from mcp.client.auth import OAuthClientProvider

    class Provider(OAuthClientProvider):
        """The SDK's provider, knowing when stored tokens expire: its own ``_initialize``
        loads them with no expiry, so an access token that ran out between two sessions
        would be sent, refused (401), and cost a new login instead of a refresh."""

        async def _initialize(self) -> None:
            await super()._initialize()
            tokens = self.context.current_tokens
            if tokens is not None and tokens.expires_in is not None:
                self.context.update_token_expiry(tokens)

    return Provider


def _client_metadata(
    config: McpServerConfig, redirect_uri: str, wanted_scope: str | None = None
) -> Any:
    from mcp.client.auth.utils import union_scopes
    from mcp.shared.auth import OAuthClientMetadata

    from codingcode import __version__

    class Metadata(OAuthClientMetadata):
        """Whatever scope the SDK's flow picks (the server's challenge, its advertised
        scopes), the scopes a session's step-up wanted are asked for as well: the login
        that follows "needs a login (with more permissions)" must get them."""

        def __setattr__(self, name: str, value: Any) -> None:
            if name == "scope" and wanted_scope:
                value = union_scopes(value, wanted_scope)
            super().__setattr__(name, value)

    oauth = _oauth_entry(config)
    return Metadata(
        client_name="codingcode",
        software_id="codingcode",
        software_version=__version__,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        token_endpoint_auth_method=oauth.token_endpoint_auth_method
        if oauth.client_secret
        else "none",
        scope=union_scopes(oauth.scope, wanted_scope),
    )


def headless_provider(config: McpServerConfig, on_refused: Callable[[], None] | None = None) -> Any:
    """The OAuth provider of a session: stored tokens, refreshed when they expire; a
    server that wants a new login fails with :class:`LoginRequiredError`."""
    assert isinstance(config.entry, HttpEntry)
    if _oauth_entry(config).grant_type == "client_credentials":
        return client_credentials_provider(config)
    if _oauth_entry(config).grant_type == JWT_BEARER:
        return cross_app_provider(config)
    storage = FileTokenStorage(config, persist_client=False, headless=True)
    port = storage.stored_redirect_port() or _oauth_entry(config).callback_port or 1
    name = config.name

    async def refuse(url: str) -> None:
        # The scopes this authorization would have asked for (a 403 insufficient_scope
        # step-up asks for more): the next `mcp login` asks for them too.
        wanted = parse_qs(urlsplit(url).query).get("scope")
        if wanted and storage.has_tokens():
            with contextlib.suppress(OSError):
                storage.want_scope(wanted[0])
        if on_refused is not None:
            on_refused()
        raise LoginRequiredError(f"MCP server {name!r} needs a login: {login_hint(name)}.")

    async def never() -> Any:  # pragma: no cover - refuse() runs first
        raise LoginRequiredError(f"MCP server {name!r} needs a login: {login_hint(name)}.")

    return _provider_class()(
        config.entry.url,
        _client_metadata(config, f"http://127.0.0.1:{port}{_CALLBACK_PATH}"),
        storage,
        redirect_handler=refuse,
        callback_handler=never,
        client_metadata_url=_oauth_entry(config).client_metadata_url,
    )


def client_credentials_provider(config: McpServerConfig) -> Any:
    """The SDK's client-credentials provider (a secret, or a JWT signed with a private
    key): tokens without a person, fetched again when refused."""
    import warnings

    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    assert isinstance(config.entry, HttpEntry)
    oauth = _oauth_entry(config)
    assert oauth.client_id is not None
    storage = FileTokenStorage(config, persist_client=False)
    with warnings.catch_warnings():  # without an issuer the SDK warns (deprecated in 3.0)
        warnings.simplefilter("ignore")
        if oauth.private_key_pem:
            signer = SignedJWTParameters(
                issuer=oauth.client_id,
                subject=oauth.client_id,
                signing_key=oauth.private_key_pem,
                signing_algorithm=oauth.signing_algorithm,
            )
            return PrivateKeyJWTOAuthProvider(
                config.entry.url,
                storage,
                oauth.client_id,
                signer.create_assertion_provider(),
                scope=oauth.scope,
                issuer=oauth.issuer,
            )
        assert oauth.client_secret is not None
        return ClientCredentialsOAuthProvider(
            config.entry.url,
            storage,
            oauth.client_id,
            oauth.client_secret,
            token_endpoint_auth_method=oauth.token_endpoint_auth_method,
            scope=oauth.scope,
            issuer=oauth.issuer,
        )


_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
_IDP_TIMEOUT_S = 30.0
_MAX_IDP_ANSWER = 1024 * 1024


class _IdpRefused(ToolFailureError):
    """The identity provider would not give an identity assertion grant."""


async def exchange_id_token(oauth: OAuthEntry, audience: str, resource: str) -> str:
    """Leg 1 of the cross-app grant (SEP-990): the user's ID token, exchanged at the identity
    provider (RFC 8693 token exchange) for an identity assertion grant (ID-JAG) meant for
    the authorization server ``audience`` and the MCP server ``resource``."""
    import httpx2

    assert oauth.idp_id_token is not None
    async with httpx2.AsyncClient(timeout=_IDP_TIMEOUT_S, follow_redirects=False) as http:
        endpoint = oauth.idp_token_endpoint
        try:
            if endpoint is None:
                assert oauth.idp_issuer is not None
                well_known = oauth.idp_issuer.rstrip("/") + "/.well-known/openid-configuration"
                found = await http.get(well_known)
                meta = found.json() if found.status_code == 200 else {}
                endpoint = meta.get("token_endpoint") if isinstance(meta, dict) else None
                if not isinstance(endpoint, str) or not endpoint.startswith(("https:", "http:")):
                    raise _IdpRefused(
                        f"The identity provider {oauth.idp_issuer} names no token endpoint "
                        f"(HTTP {found.status_code} from {well_known}); set idp_token_endpoint."
                    )
            form = {
                "grant_type": _TOKEN_EXCHANGE,
                "subject_token": oauth.idp_id_token,
                "subject_token_type": _ID_TOKEN,
                "requested_token_type": _ID_JAG,
                "audience": audience,
                "resource": resource,
            }
            if oauth.idp_client_id:
                form["client_id"] = oauth.idp_client_id
            if oauth.idp_client_secret:
                form["client_secret"] = oauth.idp_client_secret
            answer = await http.post(endpoint, data=form)
        except (httpx2.HTTPError, ValueError) as exc:
            raise _IdpRefused(f"The identity provider could not be asked: {exc}") from None
    body = answer.content[:_MAX_IDP_ANSWER]
    try:
        data = json.loads(body)
    except ValueError:
        data = {}
    grant = data.get("access_token") if isinstance(data, dict) else None
    if answer.status_code != 200 or not isinstance(grant, str) or not grant:
        why = (
            f"{data.get('error')}: {data.get('error_description', '')}".strip(": ")
            if isinstance(data, dict) and data.get("error")
            else body[:200].decode("utf-8", "replace")
        )
        raise _IdpRefused(
            f"The identity provider refused the token exchange (HTTP {answer.status_code}"
            f"{', ' + why if why else ''}); check idp_id_token and idp_client_id."
        )
    return grant


def cross_app_provider(config: McpServerConfig) -> Any:
    """The enterprise cross-app grant (SEP-990): leg 1 here (:func:`exchange_id_token`),
    leg 2 (the RFC 7523 JWT bearer grant at the configured ``issuer``) by the SDK's
    :class:`~mcp.client.auth.extensions.identity_assertion.IdentityAssertionOAuthProvider`.
    The authorization server comes from the entry, never from the MCP server's metadata,
    so a server cannot send the grant or the secret elsewhere."""
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    assert isinstance(config.entry, HttpEntry)
    oauth = _oauth_entry(config)
    assert oauth.client_id and oauth.client_secret and oauth.issuer

    async def assertion(audience: str, resource: str) -> str:
        return await exchange_id_token(oauth, audience, resource)

    return IdentityAssertionOAuthProvider(
        config.entry.url,
        FileTokenStorage(config, persist_client=False),
        oauth.client_id,
        oauth.client_secret,
        oauth.issuer,
        assertion,
        scope=oauth.scope,
        token_endpoint_auth_method=oauth.token_endpoint_auth_method,
    )


def open_browser(url: str) -> None:
    """Open ``url`` with :mod:`webbrowser` ($BROWSER honoured); the URL is printed too."""
    print(f"Opening your browser to log in; if it does not open, visit:\n  {url}", file=sys.stderr)
    try:
        webbrowser.open(url)
    except webbrowser.Error as exc:
        print(f"(could not open a browser: {exc})", file=sys.stderr)


@contextlib.asynccontextmanager
async def login_provider(
    config: McpServerConfig,
    *,
    timeout_s: float = LOGIN_TIMEOUT_S,
    browse: Callable[[str], None] = open_browser,
) -> AsyncIterator[Any]:
    """An interactive provider for ``codingcode mcp login``: a loopback callback listening,
    the browser opened on the authorization URL. Forgets the old tokens first."""
    from mcp.shared.auth import AuthorizationCodeResult

    assert isinstance(config.entry, HttpEntry)
    oauth = _oauth_entry(config)
    storage = FileTokenStorage(config)
    port = oauth.callback_port or storage.stored_redirect_port() or 0
    async with contextlib.AsyncExitStack() as stack:
        try:
            callback = await stack.enter_async_context(loopback_callback(port))
        except AgentError:
            if oauth.callback_port:
                raise
            storage.forget_client()  # registered for a port that is taken now: register anew
            callback = await stack.enter_async_context(loopback_callback(0))
        if not oauth.client_id and storage.stored_redirect_port() not in (None, callback.port):
            storage.forget_client()
        wanted = storage.wanted_scope()
        registered = (await storage.get_client_info()) if wanted else None
        if registered is not None and not oauth.client_id:
            have = set((registered.scope or "").split())
            if not set(wanted.split()) <= have:  # type: ignore[union-attr]
                storage.forget_client()  # registered for fewer scopes: register anew
        # A fresh login: old tokens are dropped, the registration is kept.
        storage._write(tokens=None, expires_at=None)

        async def redirect(url: str) -> None:
            # The address comes from the server's metadata: only a web page is opened.
            if urlsplit(url).scheme not in ("https", "http") or not urlsplit(url).netloc:
                raise LoginRequiredError(
                    f"The authorization server's login address is not a web page: {url[:200]!r}."
                )
            await anyio.to_thread.run_sync(browse, url)

        async def wait_callback() -> AuthorizationCodeResult:
            with anyio.move_on_after(timeout_s):
                await callback.done.wait()
            result = callback.result
            if not callback.done.is_set():
                raise LoginRequiredError(
                    f"No answer from the browser within {timeout_s:g} s; the login was abandoned."
                )
            if result.error or not result.code:
                raise LoginRequiredError(
                    f"The authorization server refused the login: {result.error or 'no code'}."
                )
            return AuthorizationCodeResult(code=result.code, state=result.state, iss=result.iss)

        yield _provider_class()(
            config.entry.url,
            _client_metadata(config, callback.redirect_uri, wanted),
            storage,
            redirect_handler=redirect,
            callback_handler=wait_callback,
            client_metadata_url=oauth.client_metadata_url,
        )
