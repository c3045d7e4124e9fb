"""The proxy's request-target parsing (CONNECT authority, absolute-form URLs)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codingcode.sandbox.network.proxy import parse_absolute, parse_authority


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("pypi.org:443", ("pypi.org", 443)),
        ("[::1]:8443", ("::1", 8443)),
        ("pypi.org", None),  # no port
        ("pypi.org:0", None),
        ("pypi.org:70000", None),
        ("user@pypi.org:443", None),
        ("pypi.org:443/x", None),
        ("pypi.org :443", None),
    ],
)
def test_authority(target: str, expected: tuple[str, int] | None) -> None:
    assert parse_authority(target) == expected


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("http://a.test/x?y=1", ("a.test", 80, "/x?y=1")),
        ("http://a.test:8080", ("a.test", 8080, "/")),
        ("http://[::1]:81/", ("::1", 81, "/")),
        ("HTTP://A.test/", ("a.test", 80, "/")),
    ],
)
def test_absolute(target: str, expected: tuple[str, int, str]) -> None:
    assert parse_absolute(target) == expected


@pytest.mark.parametrize(
    "target",
    [
        "https://a.test/",
        "/origin",
        "http://good.test@evil.test/",
        "http://good.test:80@evil.test/",
        "http://a.test:99999/",
        "http://a.test:x/",
        "http:///nohost",
        "ftp://a.test/",
    ],
)
def test_absolute_refused(target: str) -> None:
    assert isinstance(parse_absolute(target), str)


@given(st.text(max_size=60))
def test_parsers_never_raise(text: str) -> None:
    parse_authority(text)
    parse_absolute(text)
    parse_absolute("http://" + text)
