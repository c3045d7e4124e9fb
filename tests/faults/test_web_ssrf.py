"""fetch_url's SSRF guard against every IPv6 spelling of a non-public IPv4 address and
against the cloud metadata addresses (issue 19)."""

from __future__ import annotations

import ipaddress
import json
import socket
from pathlib import Path

import anyio
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from codingcode.errors import DeniedError
from codingcode.tools import ToolExecCtx, ToolService
from codingcode.tools.builtin.web import address_problem, resolve_checked
from tests.tools.builtin.test_web import LocalServer, Reply

V4 = ipaddress.IPv4Address
V6 = ipaddress.IPv6Address

#: Non-public IPv4 ranges an attacker would aim at, and the metadata addresses.
NON_PUBLIC_V4 = [
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
    "224.0.0.0/4",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "240.0.0.0/4",
    "168.63.129.16/32",
    "100.100.100.200/32",
]


@st.composite
def non_public_v4(draw: st.DrawFn) -> V4:
    net = ipaddress.ip_network(draw(st.sampled_from(NON_PUBLIC_V4)))
    offset = draw(st.integers(0, net.num_addresses - 1))
    return V4(int(net.network_address) + offset)


@st.composite
def public_v4(draw: st.DrawFn) -> V4:
    ip = V4(draw(st.integers(0, 2**32 - 1)))
    if address_problem(ip) is not None:
        ip = V4("93.184.216.34")
    return ip


def encodings(v4: V4, noise: int) -> dict[str, V6]:
    """Every IPv6 form that carries ``v4``; ``noise`` fills the bits the forms leave free."""
    n = int(v4)
    teredo_server = (0x2001_0000 << 96) | (n << 64) | (noise & 0xFFFF_FFFF_FFFF_FFFF)
    teredo_client = (
        (0x2001_0000 << 96)
        | ((noise & 0xFFFF_FFFF) << 64)
        | (((noise >> 32) & 0xFFFF_FFFF) << 32)
        | (n ^ 0xFFFF_FFFF)
    )
    return {
        "mapped": V6((0xFFFF << 32) | n),
        "compatible": V6(n) if n > 1 else V6((0xFFFF << 32) | n),
        "translated": V6((0xFFFF << 48) | n),
        "nat64": V6((0x64FF9B << 96) | n),
        "nat64-local": V6((0x64FF9B0001 << 80) | ((noise & 0xFFFF) << 64) | (n << 32)),
        "6to4": V6((0x2002 << 112) | (n << 80) | (noise & (2**80 - 1))),
        "teredo-server": V6(teredo_server),
        "teredo-client": V6(teredo_client),
    }


@given(non_public_v4(), st.integers(0, 2**80 - 1))
def test_every_ipv6_form_of_a_non_public_ipv4_is_refused(v4: V4, noise: int) -> None:
    assert address_problem(v4) is not None
    for form, ip in encodings(v4, noise).items():
        assert address_problem(ip) is not None, (form, str(ip), str(v4))


@given(public_v4())
def test_mapped_and_nat64_forms_of_a_public_ipv4_stay_allowed(v4: V4) -> None:
    """DNS64 answers 64:ff9b::/96 addresses on IPv6-only networks: they must still work."""
    assert address_problem(v4) is None
    assert address_problem(V6((0xFFFF << 32) | int(v4))) is None
    assert address_problem(V6((0x64FF9B << 96) | int(v4))) is None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("168.63.129.16", "metadata"),  # Azure wireserver: a public address otherwise
        ("169.254.169.254", "metadata"),
        ("100.100.100.200", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("2002:a9fe:a9fe::", "metadata"),  # 6to4 of 169.254.169.254
        ("2002:a83f:8110::1", "metadata"),  # 6to4 of 168.63.129.16
        ("::ffff:169.254.169.254", "metadata"),
        ("64:ff9b::a9fe:a9fe", "metadata"),
        ("::a9fe:a9fe", "metadata"),
        ("2002:7f00:1::", "loopback"),
        ("64:ff9b::7f00:1", "loopback"),
        ("64:ff9b:1::7f00:1", "NAT64"),
        ("2001:0:a9fe:a9fe::1", "metadata"),  # Teredo, server 169.254.169.254
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),  # Teredo, client 127.0.0.1
        ("2002:c0a8:101::", "private"),
    ],
)
def test_named_attacks(text: str, said: str) -> None:
    problem = address_problem(ipaddress.ip_address(text))
    assert problem is not None and said in problem, (text, problem)


@pytest.mark.anyio
async def test_metadata_only_by_its_own_address_never_through_a_range_or_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for allowed in (["169.254.0.0/16"], ["0.0.0.0/0"], ["::/0", "0.0.0.0/0"]):
        with pytest.raises(DeniedError, match="metadata"):
            await resolve_checked("169.254.169.254", 80, allowed)
    assert await resolve_checked("169.254.169.254", 80, ["169.254.169.254"]) == [
        ipaddress.ip_address("169.254.169.254")
    ]

    async def fake_getaddrinfo(host: str, port: int, **kw: object) -> list[tuple[object, ...]]:
        return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("2002:a9fe:a9fe::", port, 0, 0))]

    monkeypatch.setattr(anyio, "getaddrinfo", fake_getaddrinfo)
    with pytest.raises(DeniedError, match=r"metadata.*6to4.*allow_private_hosts\": \[\"2002"):
        await resolve_checked("metadata.internal", 80, ["metadata.internal"])


@pytest.mark.anyio
async def test_ground_truth_mapped_loopback_reaches_a_local_server_but_fetch_url_refuses(
    service: ToolService, ctx: ToolExecCtx, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack is real (a plain client reaches 127.0.0.1 through ::ffff:127.0.0.1), and
    fetch_url refuses it before connecting, even with 127.0.0.1 itself allowed."""
    server = LocalServer()
    server.routes["/secret"] = lambda r: Reply(
        body=b"s3cret", headers={"Content-Type": "text/plain"}
    )
    mapped = f"http://[::ffff:127.0.0.1]:{server.port}/secret"
    try:
        try:
            async with httpx.AsyncClient(trust_env=False) as client:
                reached = (await client.get(mapped)).text == "s3cret"
        except httpx.ConnectError:  # no dual-stack sockets here: the direct attack cannot run
            reached = False
        if reached:
            assert len(server.requests) == 1
        server.requests.clear()
        (project / ".codingcode").mkdir()
        (project / ".codingcode" / "settings.json").write_text(
            json.dumps({"web": {"fetch": {"allow_private_hosts": ["127.0.0.1"]}}})
        )
        from codingcode.trust import TrustStore

        TrustStore().trust(project)
        with pytest.raises(DeniedError, match=r"loopback address \(127.0.0.1\) in IPv4-mapped"):
            await service.call("fetch_url", {"url": mapped}, ctx)

        async def rebind(host: str, port: int, **kw: object) -> list[tuple[object, ...]]:
            return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::ffff:7f00:1", port, 0, 0))]

        monkeypatch.setattr(anyio, "getaddrinfo", rebind)
        with pytest.raises(DeniedError, match="loopback"):
            await service.call("fetch_url", {"url": f"http://evil.example:{server.port}/x"}, ctx)
        assert server.requests == []
    finally:
        server.close()
