"""The domain policy: patterns, deny over allow, local addresses, rebinding, read-only."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codingcode.sandbox.network.domains import (
    DomainPolicy,
    matches,
    normalize_host,
    pattern_problem,
)

ip = ipaddress.ip_address


@pytest.mark.parametrize(
    ("host", "pattern", "expected"),
    [
        ("pypi.org", "pypi.org", True),
        ("PyPI.org.", "pypi.org", True),
        ("files.pythonhosted.org", "*.pythonhosted.org", True),
        ("pythonhosted.org", "*.pythonhosted.org", False),  # the wildcard is subdomains only
        ("evilpythonhosted.org", "*.pythonhosted.org", False),
        ("pythonhosted.org.evil.com", "*.pythonhosted.org", False),
        ("a.b.example.com", "*.example.com", True),
        ("example.com", "example.co", False),
    ],
)
def test_matching(host: str, pattern: str, expected: bool) -> None:
    name = normalize_host(host)
    assert name is not None
    assert matches(name, pattern) is expected


labels = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)


@given(st.lists(labels, min_size=1, max_size=4), st.lists(labels, min_size=1, max_size=3))
def test_wildcard_matches_exactly_the_subdomains(base: list[str], sub: list[str]) -> None:
    domain = ".".join(base)
    pattern = "*." + domain
    assert matches(".".join(sub) + "." + domain, pattern)
    assert not matches(domain, pattern)
    assert not matches(sub[-1] + domain, pattern)  # glued on, not a subdomain


@given(st.text(max_size=40))
def test_normalize_never_raises(text: str) -> None:
    normalize_host(text)
    pattern_problem(text)


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("https://pypi.org", "without a scheme"),
        ("pypi.org:443", "without a scheme"),
        ("*", "wildcard"),
        ("a.*.com", "wildcard"),
        ("*.", "wildcard"),
        ("bad host", "not a valid"),
    ],
)
def test_bad_patterns(pattern: str, problem: str) -> None:
    found = pattern_problem(pattern)
    assert found is not None and problem in found


def test_deny_wins_over_allow_and_grants() -> None:
    policy = DomainPolicy(allowed=("*.example.com",), denied=("bad.example.com",))
    assert policy.check_name("ok.example.com").allowed
    verdict = policy.with_grants(["bad.example.com"]).check_name("bad.example.com")
    assert not verdict.allowed and verdict.setting == "sandbox.network.deniedDomains"


def test_empty_list_reaches_nothing() -> None:
    verdict = DomainPolicy().check_name("pypi.org")
    assert not verdict.allowed and "allowedDomains" in verdict.reason


def test_local_addresses() -> None:
    policy = DomainPolicy(allowed=("localhost", "public.test", "10.1.2.3"))
    assert policy.check_address("localhost", ip("127.0.0.1")).allowed
    assert policy.check_address("localhost", ip("::1")).allowed
    assert policy.check_address("10.1.2.3", ip("10.1.2.3")).allowed  # listed exactly
    rebinding = policy.check_address("public.test", ip("192.168.1.5"))
    assert not rebinding.allowed and "allowLocalAddresses" in rebinding.reason
    assert policy.check_address("public.test", ip("93.184.216.34")).allowed
    for embedded in ("::ffff:127.0.0.1", "64:ff9b::a00:1", "2002:c0a8:101::1", "fe80::1"):
        assert not policy.check_address("public.test", ip(embedded)).allowed, embedded
    wildcard = DomainPolicy(allowed=("*.localhost",))
    assert not wildcard.check_address("app.localhost", ip("127.0.0.1")).allowed


def test_metadata_is_never_reached() -> None:
    policy = DomainPolicy(allowed=("169.254.169.254", "meta.test"), allow_local=True)
    for address in ("169.254.169.254", "168.63.129.16", "fd00:ec2::254", "::ffff:169.254.169.254"):
        assert not policy.check_address("meta.test", ip(address)).allowed, address


def test_allow_local_addresses() -> None:
    policy = DomainPolicy(allowed=("db.test",), allow_local=True)
    assert policy.check_address("db.test", ip("10.0.0.5")).allowed


def test_read_only_domains() -> None:
    policy = DomainPolicy(allowed=("docs.test",), read_only=("docs.test",))
    assert policy.check_name("docs.test", method="GET").allowed
    assert policy.check_name("docs.test", method="head").allowed
    assert not policy.check_name("docs.test", method="POST").allowed
    tunnel = policy.check_name("docs.test", method=None)
    assert not tunnel.allowed and "cannot see" in tunnel.reason
