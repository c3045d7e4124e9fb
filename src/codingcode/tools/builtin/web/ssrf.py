"""The SSRF guard of fetch_url: which addresses are not public, and resolving a host with
every address checked before anything connects."""

from __future__ import annotations

import ipaddress
import socket

import anyio

from codingcode.errors import DeniedError, ToolFailureError

#: Addresses that answer "who am I, what are my credentials" on cloud machines; named so
#: the refusal can say what it protected.
METADATA_ADDRESSES = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack, ...
    ipaddress.ip_address("169.254.170.2"),  # AWS ECS task credentials
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("fd00:ec2::254"),  # AWS IPv6
}

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def address_problem(ip: IPAddress) -> str | None:
    """Why an address is not a public one (None when it is)."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_unspecified:
        return "the unspecified address (it reaches this machine)"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_private:
        return "a private address"
    if ip.is_multicast or ip.is_reserved or not ip.is_global:
        return "not a public address"
    return None


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
        if problem and not host_allowed(host, ip, allowed):
            raise DeniedError(
                f"Refused to fetch from {host} ({ip}): it is {problem}. fetch_url only reaches "
                "public hosts; to allow a local or internal host, add it to "
                '`web.fetch.allow_private_hosts` in settings (e.g. {"web": {"fetch": '
                f'{{"allow_private_hosts": ["{host}"]}}}}}}).'
            )
    return addresses
