"""fetch_url under the sandbox's network lists (issue 16): the same lists gate it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codingcode.capabilities import CapabilitySet
from codingcode.errors import DeniedError
from codingcode.tools import ToolExecCtx, ToolService
from tests.tools.builtin.test_web import LocalServer, Reply

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[LocalServer]:
    s = LocalServer()
    s.routes["/page"] = lambda r: Reply(body=b"the page", headers={"Content-Type": "text/plain"})
    yield s
    s.close()


@pytest.fixture(autouse=True)
def isolated_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "user-config"))
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "user-state"))
    monkeypatch.delenv("CODINGCODE_TRUST_ALL", raising=False)


def user_settings(data: dict[str, Any]) -> None:
    from codingcode.config import user_config_dir

    path = user_config_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def paths(server: LocalServer) -> list[str]:
    return [r.path for r in server.requests]


async def test_limited_reaches_listed_localhost(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx
) -> None:
    user_settings({"sandbox": {"network": {"allowedDomains": ["localhost"]}}})
    out = await service.call("fetch_url", {"url": f"http://localhost:{server.port}/page"}, ctx)
    assert out.endswith("the page") and paths(server) == ["/page"]


async def test_limited_refuses_unlisted_even_when_private_hosts_allow_it(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx
) -> None:
    user_settings(
        {
            "sandbox": {"network": {"allowedDomains": ["localhost"]}},
            "web": {"fetch": {"allow_private_hosts": ["127.0.0.1"]}},
        }
    )
    with pytest.raises(DeniedError, match="sandbox.network.allowedDomains"):
        await service.call("fetch_url", {"url": server.url("/page")}, ctx)
    assert paths(server) == []


async def test_denied_domains_apply_in_every_mode(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx
) -> None:
    user_settings(
        {
            "sandbox": {"network": {"mode": "off", "deniedDomains": ["localhost"]}},
            "web": {"fetch": {"allow_private_hosts": ["localhost"]}},
        }
    )
    with pytest.raises(DeniedError, match="sandbox.network.deniedDomains"):
        await service.call("fetch_url", {"url": f"http://localhost:{server.port}/page"}, ctx)
    assert paths(server) == []


async def test_redirect_to_unlisted_name_refused(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx
) -> None:
    user_settings({"sandbox": {"network": {"allowedDomains": ["localhost"]}}})
    server.routes["/go"] = lambda r: Reply(302, headers={"Location": server.url("/page")})
    with pytest.raises(DeniedError, match="127.0.0.1"):
        await service.call("fetch_url", {"url": f"http://localhost:{server.port}/go"}, ctx)
    assert paths(server) == ["/go"]


async def test_call_grant_reaches_a_name(
    server: LocalServer, service: ToolService, ctx: ToolExecCtx
) -> None:
    from dataclasses import replace

    user_settings({"sandbox": {"network": {"mode": "limited"}}})
    granted = replace(ctx, capabilities=CapabilitySet(domains=frozenset({"localhost"})))
    out = await service.call("fetch_url", {"url": f"http://localhost:{server.port}/page"}, granted)
    assert out.endswith("the page")
    with pytest.raises(DeniedError, match="localhost"):
        await service.call("fetch_url", {"url": f"http://localhost:{server.port}/page"}, ctx)
