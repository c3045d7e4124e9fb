"""The SSRF guard of fetch_url: which addresses are not public, and resolving a host with
every address checked before anything connects."""

from __future__ import annotations

import ipaddress
import socket

import anyio

from codingcode.errors import DeniedError, ToolFailureError
from codingcode.sandbox.network.addresses import (
    METADATA_ADDRESSES,
    IPAddress,
    address_problem,
    embedded_ipv4,
    is_metadata,
)

__all__ = [
    "METADATA_ADDRESSES",
    "IPAddress",
    "address_problem",
    "embedded_ipv4",
    "host_allowed",
    "is_metadata",
    "metadata_named",
    "resolve_checked",
]


def metadata_named(ip: IPAddress, allowed: list[str]) -> bool:
    """A metadata address is allowed only by naming exactly that address."""
    for entry in allowed:
        entry = entry.strip().lower().removeprefix("[").removesuffix("]")
        try:
            net = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            continue
        if net.num_addresses == 1 and net.network_address == ip:
            return True
    return False


def host_allowed(host: str, ip: IPAddress, allowed: list[str]) -> bool:
    host = host.lower().rstrip(".")
    for entry in allowed:
        entry = entry.strip().lower()
        if entry.startswith("[") and entry.endswith("]"):
            entry = entry[1:-1]
        if entry == host:
            return True
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


async def resolve_checked(host: str, port: int, allowed: list[str]) -> list[IPAddress]:
    """Resolve ``host`` and check every address; return them all (connect in this order)."""
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise ToolFailureError(f"Cannot resolve host {host!r}: {exc}.") from None
        addresses = []
        for info in infos:
            ip = ipaddress.ip_address(info[4][0].split("%", 1)[0])
            if ip not in addresses:
                addresses.append(ip)
        if not addresses:
            raise ToolFailureError(f"Host {host!r} has no addresses.")
    for ip in addresses:
        problem = address_problem(ip)
        if is_metadata(ip):
            granted = metadata_named(ip, allowed)
        else:
            granted = host_allowed(host, ip, allowed)
        if problem and not granted:
            name = str(ip) if is_metadata(ip) else host
            raise DeniedError(
                f"Refused to fetch from {host} ({ip}): it is {problem}. fetch_url only reaches "
                "public hosts; to allow a local or internal host, add it to "
                '`web.fetch.allow_private_hosts` in settings (e.g. {"web": {"fetch": '
                f'{{"allow_private_hosts": ["{name}"]}}}}}}).'
            )
    return addresses
