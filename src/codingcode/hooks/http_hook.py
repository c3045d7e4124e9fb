"""``http`` hooks: the event POSTed as JSON to a URL, through the network policy.

The URL is decided as ``fetch_url``'s requests are, by the same lists the sandbox's proxy
enforces (:mod:`codingcode.sandbox.network.domains`): a name in
``sandbox.network.deniedDomains`` is never reached; with ``sandbox.network.mode =
"limited"`` the name must be in ``allowedDomains`` and a local address (``localhost``,
``127.0.0.1``, a private range) is reached only when listed exactly (or with
``allowLocalAddresses``) — the decision a sandboxed command's request would get from the
proxy. Cloud metadata addresses are never reached. Claude Code's ``allowedHttpHookUrls``
(URL patterns, ``*`` a wildcard; an empty list: none) limits the URLs first. The name is resolved once, every
address is checked, and the request goes to a checked address (no second lookup).

A refused URL, one that does not answer within the hook's ``timeout``, or an answer that
is not 2xx is a failed hook: a non-blocking error, as Claude Code documents (the event
goes on; the caller says so in one line). Header values may name environment variables
(``$TOKEN``, ``${TOKEN}``) listed in the hook's ``allowedEnvVars``; others stay empty.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from codingcode.sandbox.network.addresses import IPAddress, is_metadata
from codingcode.sandbox.network.domains import (
    ALLOWED_KEY,
    DENIED_KEY,
    DomainPolicy,
    Verdict,
    first_match,
    normalize_host,
)

if TYPE_CHECKING:
    from codingcode.config import Settings

#: Claude Code's setting: the URL patterns an HTTP hook may be sent to.
URLS_KEY = "allowedHttpHookUrls"
#: At most this much of an answer is read (a command hook's stdout has the same limit).
MAX_ANSWER = 1 << 20


@dataclass(frozen=True)
class HookNetwork:
    """The network policy an HTTP hook's URL is decided by (see the module doc)."""

    domains: DomainPolicy = field(default_factory=DomainPolicy)
    limited: bool = False
    #: Set when the sandbox settings could not be read: every URL is refused with it.
    broken: str = ""
    #: Claude Code's ``allowedHttpHookUrls`` (``*`` a wildcard), every file's joined; None:
    #: not set anywhere (no limit); empty: no URL at all.
    url_patterns: tuple[str, ...] | None = None

    def check_url(self, url: str) -> Verdict:
        if self.url_patterns is None:
            return Verdict.allow()
        if any(fnmatch.fnmatchcase(url, p) for p in self.url_patterns):
            return Verdict.allow()
        return Verdict(False, f"{url} matches no pattern of {URLS_KEY}", URLS_KEY)

    def check_name(self, host: str, *, method: str | None) -> Verdict:
        if self.broken:
            return Verdict(False, self.broken, "")
        name = normalize_host(host)
        if name is None:
            return Verdict(False, f"{host!r} is not a valid host name", ALLOWED_KEY)
        if self.limited:
            return self.domains.check_name(name, method=method)
        denied = first_match(name, self.domains.denied)
        if denied is not None:
            return Verdict(False, f"{name} matches {denied!r} in {DENIED_KEY}", DENIED_KEY)
        return Verdict.allow()

    def check_address(self, host: str, ip: IPAddress) -> Verdict:
        if self.limited:
            return self.domains.check_address(host, ip)
        if is_metadata(ip):
            return Verdict(False, f"{host} is {ip}, a cloud metadata address (never reached)", "")
        return Verdict.allow()


def hook_network(settings: Settings) -> HookNetwork:
    """The network policy of the session whose ``settings`` these are, with Claude Code's
    ``allowedHttpHookUrls`` of every file (a restriction: it applies from a project file the
    user has not trusted too)."""
    from codingcode.config import SettingsError
    from codingcode.sandbox.policy import Network, load_sandbox_policy

    patterns: list[str] | None = None
    for f, value in settings.sources(URLS_KEY):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return HookNetwork(broken=f"{URLS_KEY} in {f.path} is not a list of URL patterns")
        patterns = [*(patterns or []), *value]
    try:
        policy = load_sandbox_policy(settings.project, settings)
    except SettingsError as exc:
        return HookNetwork(broken=f"the sandbox settings cannot be read ({exc.message})")
    return HookNetwork(
        policy.domains,
        policy.network is Network.LIMITED,
        url_patterns=None if patterns is None else tuple(dict.fromkeys(patterns)),
    )


@dataclass(frozen=True)
class HttpAnswer:
    """What the request gave: the body of a 2xx answer, or why there is none."""

    body: str = ""
    failure: str = ""


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def expand_headers(
    headers: Mapping[str, str], allowed: tuple[str, ...], env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Header values with ``$VAR`` / ``${VAR}`` put in, for the variables ``allowed`` lists
    (Claude Code's ``allowedEnvVars``); any other variable is left empty."""
    source = os.environ if env is None else env

    def put(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return source.get(name, "") if name in allowed else ""

    return {k: _VAR.sub(put, v) for k, v in headers.items()}


async def post_event(
    url: str,
    headers: Mapping[str, str],
    payload: dict[str, Any],
    timeout_s: float,
    network: HookNetwork,
) -> HttpAnswer:
    """POST ``payload`` to ``url`` as the module doc says; never raises."""
    import httpx

    try:
        target = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        return HttpAnswer(failure=f"has an invalid URL ({exc})")
    if target.scheme not in ("http", "https") or not target.host:
        return HttpAnswer(failure="has a URL that is not http(s)://HOST/...")
    host = target.raw_host.decode("ascii")
    method = "POST" if target.scheme == "http" else None  # inside HTTPS it cannot be seen
    verdict = network.check_url(url)
    if verdict.allowed:
        verdict = network.check_name(host, method=method)
    if not verdict.allowed:
        return HttpAnswer(failure=_blocked(verdict))
    port = target.port or (443 if target.scheme == "https" else 80)
    try:
        with anyio.fail_after(timeout_s):
            addresses = await _resolve(host, port)
            for ip in addresses:
                verdict = network.check_address(host, ip)
                if not verdict.allowed:
                    return HttpAnswer(failure=_blocked(verdict))
            return await _send(target, addresses, dict(headers), payload, timeout_s)
    except TimeoutError:
        return HttpAnswer(failure=f"did not answer within {timeout_s:g}s")
    except OSError as exc:
        return HttpAnswer(failure=f"could not be reached ({exc.strerror or exc})")
    except httpx.HTTPError as exc:
        return HttpAnswer(failure=f"could not be reached ({type(exc).__name__})")


def _blocked(verdict: Verdict) -> str:
    where = f" (see {verdict.setting})" if verdict.setting not in verdict.reason else ""
    return f"was blocked by the network policy: {verdict.reason}{where}"


async def _resolve(host: str, port: int) -> list[IPAddress]:
    """The host's addresses, found as the sandbox's proxy finds them (none: an OSError)."""
    from codingcode.sandbox.network.proxy import system_resolver

    found = await system_resolver(host, port)
    if not found:
        raise OSError(f"{host} has no addresses")
    return found


async def _send(
    url: Any,
    addresses: list[IPAddress],
    headers: dict[str, str],
    payload: dict[str, Any],
    timeout_s: float,
) -> HttpAnswer:
    """POST to the checked addresses in order until one accepts: the URL's host is the
    address, the Host header and the TLS server name stay the real name."""
    import httpx

    sent = {"Content-Type": "application/json", **headers, "Host": url.netloc.decode("ascii")}
    extensions = {"sni_hostname": url.raw_host.decode("ascii")} if url.scheme == "https" else {}
    async with httpx.AsyncClient(timeout=timeout_s, follow_redirects=False, trust_env=False) as c:
        for i, ip in enumerate(addresses):
            request = c.build_request(
                "POST",
                url.copy_with(host=str(ip)),
                json=payload,
                headers=sent,
                extensions=extensions,
            )
            try:
                response = await c.send(request)
            except httpx.ConnectError:
                if i == len(addresses) - 1:
                    raise
                continue
            if not 200 <= response.status_code < 300:
                return HttpAnswer(failure=f"answered HTTP {response.status_code}")
            return HttpAnswer(body=response.text[:MAX_ANSWER])
    return HttpAnswer(failure="could not be reached")
