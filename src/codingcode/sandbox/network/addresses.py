"""Which addresses are not public: the one SSRF guard of ``fetch_url`` and the network proxy.

A name is resolved once, every address it resolves to is checked here, and the connection
then goes to a checked address, so a second lookup cannot hand out another one (DNS
rebinding). IPv6 forms that carry an IPv4 address are judged by the address they carry.
"""

from __future__ import annotations

import ipaddress

#: Addresses that answer "who am I, what are my credentials" on cloud machines; named so
#: the refusal can say what it protected. Some are otherwise public addresses (Azure's
#: 168.63.129.16), so only this list catches them; none is reachable through a broad
#: ``allow_private_hosts`` range or host name, only by naming the address itself.
METADATA_ADDRESSES = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack, Oracle, ...
    ipaddress.ip_address("169.254.170.2"),  # AWS ECS task credentials
    ipaddress.ip_address("169.254.170.23"),  # AWS EKS pod identity
    ipaddress.ip_address("168.63.129.16"),  # Azure wireserver (and its DNS/health probe)
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("fd00:ec2::254"),  # AWS IPv6
    ipaddress.ip_address("fd00:ec2::23"),  # AWS EKS pod identity, IPv6
}

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: IPv4 ranges that are not globally reachable (IANA special-purpose registry), spelled out
#: so the guard does not depend on the Python version's own tables.
_NON_GLOBAL_V4 = [
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
]
_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: the IPv4 part may sit anywhere
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")  # RFC 3056
_TEREDO = ipaddress.ip_network("2001::/32")  # RFC 4380
_V4_COMPATIBLE = ipaddress.ip_network("::/96")  # RFC 4291 (deprecated)
_V4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # RFC 2765 (SIIT)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address carries, each with the name of its encoding.

    A connection to any of these forms may end at the IPv4 address (the kernel for mapped
    addresses, a relay or translator on the way for the others), so each is checked as if
    it had been given directly.
    """
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    if ip.ipv4_mapped is not None:
        found.append(("IPv4-mapped", ip.ipv4_mapped))
    elif ip in _V4_COMPATIBLE and int(ip) > 1:  # not :: nor ::1, which are themselves
        found.append(("IPv4-compatible", low32))
    elif ip in _V4_TRANSLATED:
        found.append(("IPv4-translated", low32))
    elif ip in _NAT64_WELL_KNOWN:
        found.append(("NAT64", low32))
    elif ip.sixtofour is not None:
        found.append(("6to4", ip.sixtofour))
    elif ip.teredo is not None:
        server, client = ip.teredo
        found.append(("Teredo server", server))
        found.append(("Teredo client", client))
    return found


def _own_problem(ip: IPAddress) -> str | None:
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
    if isinstance(ip, ipaddress.IPv4Address) and any(ip in n for n in _NON_GLOBAL_V4):
        return "not a public address"
    return None


def address_problem(ip: IPAddress) -> str | None:
    """Why an address is not a public one (None when it is).

    An IPv6 address that embeds an IPv4 address (mapped, compatible, translated, NAT64,
    6to4, Teredo) is refused when the embedded address is not public; the local-use NAT64
    prefix is refused whole, since the IPv4 part may sit at several places in it. The
    IPv4-mapped and well-known NAT64 forms of a public address are public (DNS64 hands out
    the latter on IPv6-only networks); the other forms are judged as IPv6 addresses too.
    """
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _NAT64_LOCAL:
            return "a local-use NAT64 address (64:ff9b:1::/48), not a public one"
        embedded = embedded_ipv4(ip)
        for how, v4 in embedded:
            problem = _own_problem(v4)
            if problem:
                return f"{problem} ({v4}) in {how} IPv6 form"
        if embedded and embedded[0][0] in ("IPv4-mapped", "NAT64"):
            return None
    return _own_problem(ip)


def is_metadata(ip: IPAddress) -> bool:
    """Whether ``ip`` is a cloud metadata address, directly or embedded in an IPv6 form."""
    if ip in METADATA_ADDRESSES:
        return True
    if isinstance(ip, ipaddress.IPv6Address):
        return any(v4 in METADATA_ADDRESSES for _, v4 in embedded_ipv4(ip))
    return False
