"""The network policy of the sandbox: which names a command may reach through the proxy.

``sandbox.network.allowedDomains`` lists exact names and ``*.example.com`` wildcards (the
subdomains, not ``example.com`` itself); ``deniedDomains`` wins over every allow, the
call's own grants included. A name is allowed only when listed: an empty list reaches
nothing. ``readOnlyDomains`` limits plain-HTTP requests to those names to ``GET``, ``HEAD``
and ``OPTIONS``; the proxy cannot see the method inside HTTPS, so a tunnel to such a name is
refused rather than trusted.

Local addresses (loopback, private, link-local) are reached only by ``localhost`` when
``localhost`` is itself listed, by an IP literal listed exactly, or anywhere when
``allowLocalAddresses`` is on; a listed public name that resolves to one is refused (DNS
rebinding). Cloud metadata addresses are never reached.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from codingcode.sandbox.network.addresses import IPAddress, address_problem, is_metadata

ALLOWED_KEY = "sandbox.network.allowedDomains"
DENIED_KEY = "sandbox.network.deniedDomains"
READ_ONLY_KEY = "sandbox.network.readOnlyDomains"
LOCAL_KEY = "sandbox.network.allowLocalAddresses"

#: The methods a read-only domain accepts over plain HTTP.
READ_ONLY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")


def normalize_host(host: str) -> str | None:
    """The host in the form patterns are matched against (lower case, ASCII, no trailing
    dot, IPv6 without brackets), or None when it is not a valid host name or address."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    host = host.rstrip(".")
    try:
        host = host.encode("idna").decode("ascii")
    except (UnicodeError, ValueError):
        return None
    if not host or len(host) > 253 or not all(_LABEL.match(label) for label in host.split(".")):
        return None
    return host


def pattern_problem(pattern: str) -> str | None:
    """Why a settings entry is not a usable pattern (None: it is)."""
    body = pattern.strip().lower()
    if body.startswith("*."):
        body = body[2:]
        if not body or "*" in body:
            return "a wildcard is written `*.example.com` (the subdomains of one name)"
    if "*" in body:
        return "a wildcard is written `*.example.com` (the subdomains of one name)"
    if "/" in body or (":" in body and not _is_ip(body)):
        return "write a host name without a scheme, port or path (e.g. `pypi.org`)"
    if normalize_host(body) is None:
        return "not a valid host name or IP address"
    return None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


def matches(host: str, pattern: str) -> bool:
    """Whether normalized ``host`` matches one pattern (exact, or ``*.name`` subdomains)."""
    pattern = pattern.strip().lower()
    if pattern.startswith("*."):
        suffix = normalize_host(pattern[2:])
        return suffix is not None and host.endswith("." + suffix)
    return normalize_host(pattern) == host


def first_match(host: str, patterns: Iterable[str]) -> str | None:
    for pattern in patterns:
        if matches(host, pattern):
            return pattern
    return None


@dataclass(frozen=True)
class Verdict:
    """One decision: ``allowed``, and for a refusal the reason and the setting to change."""

    allowed: bool
    reason: str = ""
    setting: str = ""

    @classmethod
    def allow(cls) -> Verdict:
        return cls(True)


@dataclass(frozen=True)
class DomainPolicy:
    """What the proxy lets through (see the module doc)."""

    allowed: tuple[str, ...] = ()
    denied: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    allow_local: bool = False
    #: Names this one call may reach besides ``allowed`` (its approval granted them).
    granted: tuple[str, ...] = field(default=(), compare=False)

    def with_grants(self, domains: Iterable[str]) -> DomainPolicy:
        from dataclasses import replace

        return replace(self, granted=tuple(dict.fromkeys([*self.granted, *domains])))

    def check_name(self, host: str, *, method: str | None = None) -> Verdict:
        """The decision on a name before it is resolved. ``method``: a plain-HTTP request's
        method; ``None`` for a tunnel (CONNECT), whose requests the proxy cannot see."""
        name = normalize_host(host)
        if name is None:
            return Verdict(False, f"{host!r} is not a valid host name", ALLOWED_KEY)
        denied = first_match(name, self.denied)
        if denied is not None:
            return Verdict(False, f"{name} matches {denied!r} in {DENIED_KEY}", DENIED_KEY)
        if first_match(name, (*self.allowed, *self.granted)) is None:
            return Verdict(False, f"{name} is not in {ALLOWED_KEY}", ALLOWED_KEY)
        if first_match(name, self.read_only) is not None:
            if method is None:
                return Verdict(
                    False,
                    f"{name} is in {READ_ONLY_KEY}, and the proxy cannot see the methods "
                    "inside an HTTPS tunnel (use plain HTTP, or remove it from that list)",
                    READ_ONLY_KEY,
                )
            if method.upper() not in READ_ONLY_METHODS:
                return Verdict(
                    False,
                    f"{name} is in {READ_ONLY_KEY}: only GET, HEAD and OPTIONS, not {method}",
                    READ_ONLY_KEY,
                )
        return Verdict.allow()

    def check_address(self, host: str, ip: IPAddress) -> Verdict:
        """The decision on one address ``host`` resolved to (or is)."""
        name = normalize_host(host) or host
        if is_metadata(ip):
            return Verdict(
                False, f"{name} resolves to {ip}, a cloud metadata address (never reachable)", ""
            )
        problem = address_problem(ip)
        if problem is None:
            return Verdict.allow()
        if self.allow_local:
            return Verdict.allow()
        listed_exactly = name in {normalize_host(p) for p in (*self.allowed, *self.granted)}
        if listed_exactly and (name == "localhost" or _is_ip(name)):
            return Verdict.allow()
        what = f"{name} is {problem}" if _is_ip(name) else f"{name} resolves to {ip}: {problem}"
        return Verdict(
            False,
            f"{what}; local addresses are reached only by `localhost` or an address listed in "
            f"{ALLOWED_KEY}, or with {LOCAL_KEY}",
            LOCAL_KEY,
        )
