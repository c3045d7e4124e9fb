"""Ground truth for ``sandbox.network.mode = limited``: real commands (curl, python) run in the
real bubblewrap sandbox, and a loopback HTTP server on the host says what really reached it.

Names other than ``localhost`` are mapped to 127.0.0.1 by a test resolver handed to the
proxy, so a "public" name that resolves to a private address (DNS rebinding) can be tried
without any network but loopback.
"""

from __future__ import annotations

import ipaddress
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codingcode.capabilities import CapabilitySet
from codingcode.sandbox.network.addresses import IPAddress
from codingcode.sandbox.network.domains import DomainPolicy
from codingcode.sandbox.network.proxy import ConnectionEvent, NetworkProxy
from codingcode.sandbox.network.runtime import current_call
from codingcode.sandbox.policy import BackendChoice, Network, SandboxPolicy
from codingcode.sandbox.service import SandboxService
from tests.sandbox.conftest import Box, needs_bwrap, needs_landlock, out
from tests.sandbox.network.server import LoggingServer

LOOPBACK = ipaddress.ip_address("127.0.0.1")


async def fake_resolver(host: str, port: int) -> list[IPAddress]:
    if host == "localhost":
        return [LOOPBACK]
    if host.endswith(".test"):
        return [LOOPBACK]  # every test name "resolves" to the host's loopback
    raise OSError(f"{host}: no such name (test resolver)")


@pytest.fixture
def server() -> Iterator[LoggingServer]:
    with LoggingServer() as srv:
        yield srv


@pytest.fixture
def net_box(project: Path) -> Iterator[Any]:
    services: list[SandboxService] = []
    events: list[ConnectionEvent] = []

    def make(**domains: Any) -> Box:
        policy = SandboxPolicy(
            project=project,
            backend=BackendChoice.BUBBLEWRAP,
            network=domains.pop("mode", Network.LIMITED),
            domains=DomainPolicy(**domains),
        )
        service = SandboxService.from_policy(policy)
        service.network_proxy = NetworkProxy(resolver=fake_resolver, connect_timeout_s=5)
        service.network_sink = events.extend
        services.append(service)
        box = Box(service, project)
        box.events = events  # type: ignore[attr-defined]
        return box

    yield make
    for service in services:
        service.close()


@needs_bwrap
def test_listed_localhost_reaches_the_host_server(net_box: Any, server: LoggingServer) -> None:
    box = net_box(allowed=("localhost",))
    r = box.run(f"curl -sS -m 10 http://localhost:{server.port}/ok")
    assert r.exit_code == 0, out(r)
    assert "hello from the test server" in out(r)
    assert server.paths() == ["/ok"]
    # the Host header the server saw is the checked name
    assert server.requests[0].host == f"localhost:{server.port}"


@needs_bwrap
def test_unlisted_address_is_refused_with_the_setting_named(
    net_box: Any, server: LoggingServer
) -> None:
    box = net_box(allowed=("localhost",))
    r = box.run(f"curl -sS -m 10 http://127.0.0.1:{server.port}/raw-ip")
    assert "sandbox.network.allowedDomains" in out(r)  # the 403 body, printed by curl
    assert server.paths() == []
    assert "blocked by the network policy" in r.notice and "127.0.0.1" in r.notice


@needs_bwrap
def test_https_connect_to_unlisted_name_fails_and_says_so(
    net_box: Any, server: LoggingServer
) -> None:
    box = net_box(allowed=("localhost",))
    r = box.run(f"curl -sS -m 10 https://evil.test:{server.port}/")
    assert r.exit_code != 0
    assert server.paths() == [] and server.connections == 0
    assert "evil.test" in r.notice and "sandbox.network.allowedDomains" in r.notice


@needs_bwrap
def test_direct_connection_without_the_proxy_reaches_nothing(
    net_box: Any, server: LoggingServer
) -> None:
    box = net_box(allowed=("localhost",))
    r = box.run(
        f"curl -sS -m 5 --noproxy '*' http://127.0.0.1:{server.port}/direct; "
        f"NO_PROXY='*' no_proxy='*' curl -sS -m 5 http://localhost:{server.port}/no-proxy-env; "
        f"env -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy curl -sS -m 5 http://localhost:{server.port}/unset"
    )
    assert r.exit_code != 0
    assert server.paths() == [] and server.connections == 0


@needs_bwrap
def test_python_socket_and_raw_socket_reach_nothing(net_box: Any, server: LoggingServer) -> None:
    box = net_box(allowed=("localhost",), allow_local=True)
    script = textwrap.dedent(
        f"""
        import socket
        for family, addr in ((socket.AF_INET, ("127.0.0.1", {server.port})),
                             (socket.AF_INET6, ("::1", {server.port}))):
            try:
                socket.create_connection(addr, timeout=3).close()
                print("CONNECTED", addr)
            except OSError as exc:
                print("refused", addr, exc)
        try:
            socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
            print("RAW OPENED")
        except OSError as exc:
            print("raw refused", exc)
        try:
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            print("UNIX OPENED")
        except OSError as exc:
            print("unix refused", exc)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.sendto(b"x", ("127.0.0.1", {server.udp_port}))
        except OSError:
            pass
        """
    )
    r = box.run(f"python3 -c '{script}'")
    text = out(r)
    assert "CONNECTED" not in text and "RAW OPENED" not in text and "UNIX OPENED" not in text
    assert server.connections == 0
    assert server.udp_received() == 0


@needs_bwrap
def test_ipv6_forms_of_loopback_are_refused(net_box: Any, server: LoggingServer) -> None:
    box = net_box(allowed=("localhost", "::ffff:127.0.0.1", "*.test"))
    r = box.run(
        f"curl -sS -m 5 -g 'http://[::ffff:7f00:1]:{server.port}/mapped'; "
        f"curl -sS -m 5 -g 'http://[64:ff9b::7f00:1]:{server.port}/nat64'; "
        f"curl -sS -m 5 -g 'http://[2002:7f00:1::1]:{server.port}/6to4'"
    )
    assert server.paths() == [], out(r)


@needs_bwrap
def test_dns_rebinding_name_is_refused(net_box: Any, server: LoggingServer) -> None:
    box = net_box(allowed=("rebind.test",))
    r = box.run(f"curl -sS -m 10 http://rebind.test:{server.port}/rebind")
    assert server.paths() == []
    assert "resolves to 127.0.0.1" in out(r)
    assert "rebind.test" in r.notice


@needs_bwrap
def test_connect_to_denied_name_with_allowed_host_header(
    net_box: Any, server: LoggingServer
) -> None:
    box = net_box(allowed=("localhost", "*.test"), denied=("evil.test",), allow_local=True)
    r = box.run(
        f"curl -sS -m 5 -p -H 'Host: localhost:{server.port}' http://evil.test:{server.port}/tunnel; "
        f"curl -sS -m 5 -H 'Host: localhost:{server.port}' http://evil.test:{server.port}/plain"
    )
    assert server.paths() == [], out(r)
    assert "sandbox.network.deniedDomains" in r.notice


RAW_CLIENT = """
import socket, sys
s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
s.sendall(sys.argv[1].encode().decode("unicode_escape").encode("latin-1"))
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(data.decode("latin-1").splitlines()[0] if data else "EMPTY")
"""


@needs_bwrap
def test_absolute_form_tricks(net_box: Any, server: LoggingServer, project: Path) -> None:
    (project / "raw.py").write_text(RAW_CLIENT)
    box = net_box(allowed=("localhost",))
    p = server.port
    tricks = [
        # user information: the real host is evil.test
        f"GET http://localhost:{p}@evil.test:{p}/userinfo HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n",
        # the Host header names an allowed host, the URL does not
        f"GET http://evil.test:{p}/hostheader HTTP/1.1\\r\\nHost: localhost:{p}\\r\\n\\r\\n",
        # origin form: the proxy is not a web server
        f"GET /origin HTTP/1.1\\r\\nHost: localhost:{p}\\r\\n\\r\\n",
        # CONNECT to a name not listed, Host header listed
        f"CONNECT evil.test:{p} HTTP/1.1\\r\\nHost: localhost:{p}\\r\\n\\r\\n",
        # a pipelined second request after an allowed one goes nowhere
        f"GET http://evil.test:{p}/second HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n",
    ]
    for trick in tricks:
        r = box.run(f"python3 raw.py '{trick}'")
        first = out(r).strip().splitlines()[0] if out(r).strip() else ""
        assert first.startswith(("HTTP/1.1 403", "HTTP/1.1 400")), (trick, out(r))
    assert server.paths() == []
    # An allowed URL with a lying Host header: the server sees the checked name.
    r = box.run(
        f"python3 raw.py 'GET http://localhost:{p}/rewritten HTTP/1.1\\r\\nHost: evil.test\\r\\n\\r\\n"
        f"GET http://localhost:{p}/pipelined HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n'"
    )
    assert "200" in out(r)
    assert server.paths() == ["/rewritten"]
    assert server.requests[0].host == f"localhost:{p}"


@needs_bwrap
def test_read_only_domain_allows_get_not_post(net_box: Any, server: LoggingServer) -> None:
    box = net_box(allowed=("localhost",), read_only=("localhost",))
    r = box.run(
        f"curl -sS -m 10 http://localhost:{server.port}/get; "
        f"curl -sS -m 10 -d x=1 http://localhost:{server.port}/post"
    )
    assert server.paths() == ["/get"], out(r)
    assert "sandbox.network.readOnlyDomains" in out(r)


@needs_bwrap
def test_per_call_grant_and_deny_wins(net_box: Any, server: LoggingServer) -> None:
    box = net_box(allowed=(), denied=("blocked.test",), allow_local=True)
    granted = CapabilitySet(domains=frozenset({"localhost", "blocked.test"}))
    r = box.run(f"curl -sS -m 10 http://localhost:{server.port}/granted", capabilities=granted)
    assert server.paths() == ["/granted"], out(r)
    r = box.run(f"curl -sS -m 10 http://blocked.test:{server.port}/denied", capabilities=granted)
    assert server.paths() == ["/granted"]
    assert "blocked.test" in r.notice and "deniedDomains" in r.notice
    # the same command without the grant: refused (through the proxy, and directly)
    r = box.run(f"curl -sS -m 10 --noproxy '' http://localhost:{server.port}/ungranted")
    assert "localhost" in r.notice, out(r)
    r = box.run(f"curl -sS -m 10 http://localhost:{server.port}/ungranted")
    assert server.paths() == ["/granted"] and r.exit_code != 0
    # and a call whose approval said no network gets none
    r = box.run(
        f"curl -sS -m 5 http://localhost:{server.port}/nonet",
        capabilities=CapabilitySet(network=False, domains=frozenset({"localhost"})),
    )
    assert server.paths() == ["/granted"] and r.exit_code != 0


@needs_bwrap
def test_connection_events_name_their_call(net_box: Any, server: LoggingServer) -> None:
    box = net_box(allowed=("localhost",))
    token = current_call.set("call-123")
    try:
        box.run(
            f"curl -sS -m 10 http://localhost:{server.port}/a; "
            f"curl -sS -m 10 http://127.0.0.1:{server.port}/b"
        )
    finally:
        current_call.reset(token)
    events = box.events
    assert [(e.call, e.host, e.allowed) for e in events] == [
        ("call-123", "localhost", True),
        ("call-123", "127.0.0.1", False),
    ]
    assert events[0].address == "127.0.0.1"


@needs_bwrap
def test_mode_off_and_on_keep_their_meaning(net_box: Any, server: LoggingServer) -> None:
    box = net_box(mode=Network.OFF, allowed=("localhost",))
    r = box.run(f"curl -sS -m 5 http://localhost:{server.port}/off")
    assert r.exit_code != 0 and server.connections == 0
    assert "HTTP_PROXY" not in box.run("env").stdout.text()
    box = net_box(mode=Network.ON)
    r = box.run(f"curl -sS -m 5 http://127.0.0.1:{server.port}/on")
    assert server.paths() == ["/on"], out(r)


@needs_bwrap
def test_proxy_variables_are_set_inside(net_box: Any) -> None:
    box = net_box(allowed=("pypi.org",))
    env = box.run("env").stdout.text()
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        assert f"{name}=http://127.0.0.1:3128" in env
    assert "NO_PROXY=localhost,127.0.0.1,::1" in env


@needs_bwrap
def test_unix_socket_connect_to_host_fails(net_box: Any, tmp_path: Path) -> None:
    del tmp_path
    box = net_box(allowed=("localhost",))
    r = box.run(
        "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); "
        's.connect("/var/run/nothing")\' 2>&1; echo rc=$?'
    )
    assert "rc=1" in out(r)
    assert "Operation not permitted" in out(r) or "Permission denied" in out(r)


@needs_bwrap
def test_many_calls_do_not_leak_descriptors(net_box: Any, server: LoggingServer) -> None:
    import os

    box = net_box(allowed=("localhost",))
    box.run(f"curl -sS -m 10 http://localhost:{server.port}/warm")
    before = len(os.listdir("/proc/self/fd"))
    for i in range(5):
        r = box.run(f"curl -sS -m 10 http://localhost:{server.port}/n{i}")
        assert r.exit_code == 0, out(r)
    assert len(os.listdir("/proc/self/fd")) <= before + 1
    assert len(server.paths()) == 6


@needs_landlock
def test_landlock_runs_limited_without_network_and_says_so(
    project: Path, server: LoggingServer
) -> None:
    policy = SandboxPolicy(
        project=project,
        backend=BackendChoice.LANDLOCK,
        network=Network.LIMITED,
        domains=DomainPolicy(allowed=("localhost",)),
    )
    service = SandboxService.from_policy(policy)
    try:
        r = Box(service, project).run(f"curl -sS -m 5 http://127.0.0.1:{server.port}/ll")
    finally:
        service.close()
    assert "needs the bubblewrap backend" in r.notice
    assert server.connections == 0 and r.exit_code != 0
