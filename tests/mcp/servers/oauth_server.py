"""An OAuth-protected MCP server on 127.0.0.1, for the client's login tests.

It is both the authorization server (the SDK's own routes: metadata, dynamic registration,
authorize, token with PKCE, refresh) and the protected resource (streamable HTTP at /mcp,
401 with ``resource_metadata`` without a valid token). ``/authorize`` approves at once,
redirecting to the client's loopback callback. Usage::

    python oauth_server.py PORT LOGFILE [--expires-in S] [--client ID]

Every grant is appended to LOGFILE as a JSON line (``register``, ``code``, ``refresh``,
``token``) so tests can check what really happened. ``--client ID`` pre-registers a
public client whose redirect URI is ``http://127.0.0.1:<--callback-port>/callback``; dynamic
registration stays on. The tool ``write_note`` needs the scope ``write`` beyond the
``read`` every login gets: without it the server answers 403 ``insufficient_scope``.
"""

from __future__ import annotations

import argparse
import base64
import json
import secrets
import sys
import time
from typing import Any
from urllib.parse import parse_qs, unquote

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

args = argparse.ArgumentParser()
args.add_argument("port", type=int)
args.add_argument("log")
args.add_argument("--expires-in", type=int, default=3600)
args.add_argument("--client", default=None)
args.add_argument("--callback-port", type=int, default=0)
args.add_argument(
    "--cc-client", default=None, help="ID:SECRET allowed the client_credentials grant"
)
opts = args.parse_args()
BASE = f"http://127.0.0.1:{opts.port}"


def log(event: str, **fields: Any) -> None:
    with open(opts.log, "a", encoding="utf-8") as f:
        f.write(json.dumps({"event": event, **fields}) + "\n")


class Provider:
    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.access: dict[str, AccessToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id
        self.clients[client_info.client_id] = client_info
        log(
            "register",
            client_id=client_info.client_id,
            redirect_uris=[str(u) for u in client_info.redirect_uris or []],
        )

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["read"],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        log("code", client_id=client.client_id, scopes=params.scopes)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        token, refresh = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        self.access[token] = AccessToken(
            token=token,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + opts.expires_in,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        log("token", client_id=client_id, scopes=scopes)
        return OAuthToken(
            access_token=token,
            token_type="Bearer",
            expires_in=opts.expires_in,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(
            client.client_id or "", authorization_code.scopes, authorization_code.resource
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        log("refresh", client_id=client.client_id)
        return self._issue(
            client.client_id or "", scopes or refresh_token.scopes, refresh_token.resource
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)


provider = Provider()
if opts.client:
    provider.clients[opts.client] = OAuthClientInformationFull(
        client_id=opts.client,
        token_endpoint_auth_method="none",
        redirect_uris=[f"http://127.0.0.1:{opts.callback_port}/callback"],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        scope="read write",
    )

server = MCPServer(
    "oauth-test",
    auth_server_provider=provider,
    auth=AuthSettings(
        issuer_url=BASE,  # type: ignore[arg-type]
        resource_server_url=f"{BASE}/mcp",  # type: ignore[arg-type]
        validate_token_resource=False,
        required_scopes=["read"],
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=["read", "write"], default_scopes=["read"]
        ),
    ),
)


@server.tool()
def whoami() -> str:
    """Say who the token belongs to."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    token = get_access_token()
    return f"client {token.client_id if token else None} scopes {token.scopes if token else None}"


@server.tool()
def write_note(text: str) -> str:
    """Needs the scope 'write'."""
    return f"noted: {text}"


app = server.streamable_http_app(host="127.0.0.1")


def step_up(inner: Any) -> Any:
    """403 insufficient_scope for write_note without the 'write' scope."""

    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await inner(scope, receive, send)
            return
        if scope["path"] == "/token":
            await token_endpoint(scope, receive, send)
            return
        if scope["path"] != "/mcp":
            await inner(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        try:
            request = json.loads(body)
        except ValueError:
            request = None
        wants_write = (
            isinstance(request, dict)
            and request.get("method") == "tools/call"
            and (request.get("params") or {}).get("name") == "write_note"
        )
        if wants_write:
            header = dict(scope["headers"]).get(b"authorization", b"").decode()
            token = provider.access.get(header.removeprefix("Bearer "))
            if token is not None and "write" not in token.scopes:
                challenge = (
                    'Bearer error="insufficient_scope", scope="read write", '
                    f'resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp"'
                )
                await send(
                    {
                        "type": "http.response.start",
                        "status": 403,
                        "headers": [(b"www-authenticate", challenge.encode())],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await inner(scope, replay, send)

    return asgi


async def _body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def token_endpoint(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The SDK's token endpoint, plus the client_credentials grant (which it lacks)."""
    body = await _body(receive)
    form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
    if form.get("grant_type") != "client_credentials":
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)
        return
    header = dict(scope["headers"]).get(b"authorization", b"").decode()
    if header.startswith("Basic "):
        pair = base64.b64decode(header[6:]).decode()
        client_id, _, secret = (unquote(p) for p in pair.partition(":"))
    else:
        client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
    if opts.cc_client is None or f"{client_id}:{secret}" != opts.cc_client:
        status, answer = 401, {"error": "invalid_client"}
        log("cc-refused", client_id=client_id)
    else:
        issued = provider._issue(client_id, (form.get("scope") or "read").split(), None)
        status, answer = 200, issued.model_dump(exclude_none=True)
        log("cc-token", client_id=client_id)
    payload = json.dumps(answer).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": payload})


print(f"listening on {BASE}/mcp", file=sys.stderr, flush=True)
uvicorn.run(step_up(app), host="127.0.0.1", port=opts.port, log_level="warning")
