"""MCP server configuration: ``.mcp.json`` and ``mcpServers`` in the settings files.

The format is the one other MCP clients use::

    {"mcpServers": {
        "github": {"command": "npx", "args": ["-y", "@org/server-github"],
                   "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
        "docs":   {"type": "http", "url": "https://example.com/mcp",
                   "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
    }}

``${VAR}`` and ``${VAR:-default}`` are expanded in ``command``, ``args``, ``env``, ``cwd``,
``url`` and ``headers``; a variable that is not set and has no default is an error naming
the server and the field. Our own optional keys (other clients ignore them):

* ``deferred`` (bool): offer this server's tools only through ``tool_search`` (``true``) or
  always (``false``). Unset: deferred when the server has more than
  :data:`DEFER_THRESHOLD` tools.
* ``trusted`` (bool, default false): believe the server's ``readOnlyHint`` /
  ``destructiveHint`` annotations. Untrusted servers' tools count as writing and destructive.
* ``timeout_ms`` (per request, default 60,000), ``startup_timeout_ms`` (default 30,000).
* ``disabled`` (bool): keep the entry but do not start the server.
* ``sandbox`` (bool, stdio only, default false): start the server inside codingcode's OS
  sandbox, under the project's ``sandbox`` settings (so, by default, no network).
* ``elicitation``: ``"ask"`` (default; headless runs decline), ``"accept-defaults"`` (with
  no one to ask, accept the form filled with its schema's defaults) or ``"decline"``.
* ``oauth`` (HTTP only): ``false`` to never log in, or an object with a pre-registered
  ``client_id`` (``client_secret``, ``callback_port``, ``scope``, ``client_metadata_url``);
  see :mod:`codingcode.mcp.oauth`.

Sources, later overriding earlier by server name: the user's settings (user scope), the
project's ``.mcp.json``, ``.codingcode/settings.json`` and ``settings.local.json`` (project
scope). Every server keeps its scope and source file so workspace trust can refuse to start
a project's servers before the user trusts the project (see :func:`project_trust_filter`).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from codingcode.config import Scope, Settings, SettingsError

MCP_JSON = ".mcp.json"
#: A server with more tools than this has them deferred unless its entry says otherwise:
#: a dozen tool schemas cost a few thousand tokens of every request.
DEFER_THRESHOLD = 10
DEFAULT_TIMEOUT_MS = 60_000
DEFAULT_STARTUP_TIMEOUT_MS = 30_000

_SERVER_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _Common(BaseModel):
    model_config = ConfigDict(extra="ignore")
    deferred: bool | None = None
    trusted: bool = False
    disabled: bool = False
    timeout_ms: int = Field(DEFAULT_TIMEOUT_MS, gt=0, le=3_600_000)
    startup_timeout_ms: int = Field(DEFAULT_STARTUP_TIMEOUT_MS, gt=0, le=600_000)
    #: A server's questions (elicitation): ``ask`` the user (headless: decline),
    #: ``accept-defaults`` (with no one to ask, accept the form filled with its defaults),
    #: ``decline`` always.
    elicitation: Literal["ask", "accept-defaults", "decline"] = "ask"


class StdioEntry(_Common):
    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    #: Start the server inside codingcode's sandbox (the project's sandbox settings).
    sandbox: bool = False


#: The enterprise cross-app grant's ``grant_type`` (RFC 7523 JWT bearer, SEP-990).
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


class OAuthEntry(BaseModel):
    """``"oauth": {...}`` of an HTTP server: a pre-registered client and its options.
    Plain OAuth (discovery, dynamic registration) needs none of it."""

    model_config = ConfigDict(extra="ignore")
    client_id: str | None = Field(default=None, min_length=1)
    client_secret: str | None = None
    #: The scopes to ask for at first (a server's challenge may ask for more).
    scope: str | None = None
    #: The loopback port of the redirect (a pre-registered client's redirect URI is
    #: ``http://127.0.0.1:PORT/callback``); unset: any free port.
    callback_port: int | None = Field(default=None, gt=0, lt=65536)
    #: A client-ID metadata document URL (HTTPS), used when the server supports it.
    client_metadata_url: str | None = Field(default=None, pattern=r"^https://[^/]+/.+")
    #: ``authorization_code`` (a person logs in: ``codingcode mcp login``),
    #: ``client_credentials`` (no person: ``client_id`` with ``client_secret``, or with
    #: ``private_key_pem`` and ``signing_algorithm`` for a signed JWT assertion), or
    #: :data:`JWT_BEARER` (the enterprise cross-app grant, SEP-990: the user's ID token from
    #: the identity provider, ``idp_id_token``, is exchanged there for an identity assertion
    #: grant that the server's authorization server ``issuer`` takes for a token).
    grant_type: Literal[
        "authorization_code",
        "client_credentials",
        "urn:ietf:params:oauth:grant-type:jwt-bearer",
    ] = "authorization_code"
    private_key_pem: str | None = None
    signing_algorithm: str = "RS256"
    #: How a client secret is sent to the token endpoint (any grant). Basic is the form
    #: every authorization server must accept for a secret (RFC 6749, section 2.3.1).
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post"] = (
        "client_secret_basic"
    )
    #: The authorization server the client credentials belong to (its issuer URL).
    issuer: str | None = None
    #: The cross-app grant's identity provider: its token endpoint (or its issuer, whose
    #: OpenID configuration names the endpoint), our client there, and the user's ID token.
    idp_token_endpoint: str | None = Field(default=None, pattern=r"^https?://")
    idp_issuer: str | None = Field(default=None, pattern=r"^https?://")
    idp_client_id: str | None = None
    idp_client_secret: str | None = None
    idp_id_token: str | None = None

    @model_validator(mode="after")
    def _grant_needs(self) -> OAuthEntry:
        if self.grant_type == "client_credentials" and not (
            self.client_id and (self.client_secret or self.private_key_pem)
        ):
            raise ValueError(
                "grant_type client_credentials needs client_id and client_secret "
                "(or private_key_pem)"
            )
        if self.grant_type == JWT_BEARER:
            missing = [
                key
                for key in ("client_id", "client_secret", "issuer", "idp_id_token")
                if not getattr(self, key)
            ]
            if not (self.idp_token_endpoint or self.idp_issuer):
                missing.append("idp_token_endpoint (or idp_issuer)")
            if missing:
                raise ValueError(f"grant_type {JWT_BEARER} needs {', '.join(missing)}")
        return self


class HttpEntry(_Common):
    #: ``http`` / ``streamable-http``: streamable HTTP; ``sse``: the old HTTP+SSE transport.
    type: Literal["http", "streamable-http", "streamableHttp", "sse"]
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    #: Claude Code's ``headersHelper``: a shell command printing a JSON object of headers,
    #: run (as the user, in the project) each time the server is connected — only once
    #: the file naming it is trusted, as every project server.
    headersHelper: str | None = Field(default=None, min_length=1)
    #: OAuth: on unless ``false`` or the entry sends its own Authorization header.
    oauth: OAuthEntry | bool = True


@dataclass(frozen=True)
class McpServerConfig:
    """One configured server, validated and expanded, with where it came from."""

    name: str
    entry: StdioEntry | HttpEntry
    scope: Scope
    source: Path
    #: Why it cannot start as configured (an environment variable that is not set): it is
    #: listed, and refused with this when started.
    problem: str = ""

    @property
    def transport(self) -> str:
        if isinstance(self.entry, StdioEntry):
            return "stdio"
        return "sse" if self.entry.type == "sse" else "http"

    @property
    def project_scoped(self) -> bool:
        """True for servers a project's files configure (``.mcp.json``, project settings)."""
        return self.scope is not Scope.USER

    def describe(self) -> str:
        e = self.entry
        if isinstance(e, StdioEntry):
            return " ".join([e.command, *e.args])
        return e.url


class McpConfigError(SettingsError):
    """An MCP server entry that cannot be used; the message names the server and field."""


def expand_vars(
    value: str,
    *,
    server: str,
    field: str,
    env: Mapping[str, str],
    missing: list[str] | None = None,
) -> str:
    """``${VAR}`` and ``${VAR:-default}`` expanded. A variable that is not set is an error;
    with ``missing``, one line there instead (and an empty value)."""

    def sub(match: re.Match[str]) -> str:
        var, default = match.group(1), match.group(2)
        if var in env:
            return env[var]
        if default is not None:
            return default
        message = (
            f"MCP server {server!r}, field {field!r}: environment variable {var} is not set "
            f"(set it, or write ${{{var}:-default}})."
        )
        if missing is None:
            raise McpConfigError(message)
        missing.append(message)
        return ""

    return _VAR.sub(sub, value)


def _expand(
    raw: dict[str, Any], server: str, env: Mapping[str, str], missing: list[str] | None = None
) -> dict[str, Any]:
    expand = functools.partial(expand_vars, missing=missing)

    out = dict(raw)
    for key in ("command", "cwd", "url"):
        if isinstance(out.get(key), str):
            out[key] = expand(out[key], server=server, field=key, env=env)
    if isinstance(out.get("args"), list):
        out["args"] = [
            expand(a, server=server, field=f"args[{i}]", env=env) if isinstance(a, str) else a
            for i, a in enumerate(out["args"])
        ]
    if isinstance(out.get("oauth"), dict):
        out["oauth"] = {
            k: expand(v, server=server, field=f"oauth.{k}", env=env) if isinstance(v, str) else v
            for k, v in out["oauth"].items()
        }
    for key in ("env", "headers"):
        if isinstance(out.get(key), dict):
            out[key] = {
                k: expand(v, server=server, field=f"{key}.{k}", env=env)
                if isinstance(v, str)
                else v
                for k, v in out[key].items()
            }
    return out


def parse_server(
    name: str, raw: Any, *, scope: Scope, source: Path, env: Mapping[str, str] | None = None
) -> McpServerConfig:
    """Validate and expand one ``mcpServers`` entry; McpConfigError names server and field."""
    where = f"{source}: MCP server {name!r}"
    if not _SERVER_NAME.match(name):
        raise McpConfigError(
            f"{where}: a server name may hold only letters, digits, '.', '_' and '-' (its "
            "tools are named SERVER:TOOL)."
        )
    if not isinstance(raw, dict):
        raise McpConfigError(f"{where} must be a JSON object, not {type(raw).__name__}.")
    kind = raw.get("type", "stdio" if "command" in raw or "url" not in raw else None)
    if kind is None:
        # `{"url": ...}` alone, as other clients write it: streamable HTTP, or the old SSE
        # transport for a URL that ends in /sse (what such files mean).
        url = raw.get("url")
        sse = isinstance(url, str) and url.split("?", 1)[0].rstrip("/").endswith("/sse")
        kind = "sse" if sse else "http"
        raw = {**raw, "type": kind}
    # An unset variable leaves the server listed, not started (Claude Code's way): one
    # server's missing token does not hide the file's other servers.
    missing: list[str] = []
    expanded = _expand(raw, name, os.environ if env is None else env, missing)
    model: type[StdioEntry] | type[HttpEntry] = StdioEntry if kind == "stdio" else HttpEntry
    try:
        entry = model.model_validate(expanded)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            loc = ".".join(str(p) for p in err["loc"]) or "(entry)"
            problems.append(f"field {loc!r}: {err['msg']}")
        raise McpConfigError(f"{where}: " + "; ".join(problems) + ".") from None
    return McpServerConfig(name, entry, scope, source, problem=" ".join(missing))


def _servers_of(
    data: Any, *, scope: Scope, source: Path, env: Mapping[str, str] | None
) -> dict[str, McpServerConfig]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise McpConfigError(f"{source}: 'mcpServers' must be a JSON object of servers by name.")
    servers: dict[str, McpServerConfig] = {}
    for name, raw in data.items():
        try:
            servers[name] = parse_server(name, raw, scope=scope, source=source, env=env)
        except McpConfigError as exc:
            # One server that cannot be used is listed with why, never started; the file's
            # other servers work (Claude Code's way).
            servers[name] = unusable_server(name, scope, source, exc.message)
    return servers


def unusable_server(name: str, scope: Scope, source: Path, problem: str) -> McpServerConfig:
    """A configured server that cannot be used as written: listed, refused with
    ``problem`` when started."""
    entry = StdioEntry.model_construct(command="(invalid configuration)")
    return McpServerConfig(name, entry, scope, source, problem=problem)


def read_mcp_json(project: Path) -> tuple[Path, Any] | None:
    path = project / MCP_JSON
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise McpConfigError(f"Cannot read {path}: {exc.strerror}.") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}."
        ) from None
    if not isinstance(data, dict):
        raise McpConfigError(f'{path} must hold a JSON object like {{"mcpServers": {{...}}}}.')
    return path, data.get("mcpServers")


def load_mcp_servers(
    project: Path,
    *,
    settings: Settings,
    env: Mapping[str, str] | None = None,
) -> dict[str, McpServerConfig]:
    """Every configured server of ``project``, later sources overriding earlier by name
    (``settings``: the session's, as its workspace read them)."""
    servers: dict[str, McpServerConfig] = {}
    user_files = [f for f in settings.files if f.scope is Scope.USER]
    project_files = [f for f in settings.files if f.scope is not Scope.USER]
    for f in user_files:
        servers.update(_servers_of(f.section("mcpServers"), scope=f.scope, source=f.path, env=env))
    mcp_json = read_mcp_json(project)
    if mcp_json is not None:
        servers.update(_servers_of(mcp_json[1], scope=Scope.PROJECT, source=mcp_json[0], env=env))
    for f in project_files:
        servers.update(_servers_of(f.section("mcpServers"), scope=f.scope, source=f.path, env=env))
    return servers


#: Decides whether a server may start: None to start it, else the reason it may not.
StartFilter = Callable[[McpServerConfig], str | None]


def project_trust_filter(trusted: bool | Callable[[Path], bool]) -> StartFilter:
    """Refuse the project's servers until the user trusts the file that configures them.

    ``trusted`` is one answer for the whole project, or a check per source file (such as
    ``workspace.is_trusted``). A project's stdio server is
    code a cloned repository would run; its HTTP server is where the agent would send
    data: both are grants. User-scope servers are the user's own and always start.
    """

    def allow(server: McpServerConfig) -> str | None:
        if server.problem:
            return f"not started: {server.problem}"
        if not server.project_scoped:
            return None
        ok = trusted(server.source) if callable(trusted) else trusted
        if ok:
            return None
        return (
            f"not started: {server.source.name} is project configuration that is not trusted "
            "(review it, then run `codingcode trust` to allow it)"
        )

    return allow
