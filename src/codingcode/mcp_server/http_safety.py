"""What keeps ``codingcode mcp --http`` standing: loopback checks and limits.

* :func:`is_loopback` knows every loopback form — 127.0.0.0/8, ``::1`` however written
  (``0:0:0:0:0:0:0:1``), IPv4-mapped ``::ffff:127.x.y.z``, ``localhost`` — and names,
  which count as loopback only if every address they resolve to is.
* :func:`rebinding_guard` refuses a request whose ``Host`` is not a loopback form (or the
  name the server was bound to) with the bound port, or whose ``Origin`` is present and
  not such an address: a web page that rebinds its own name to 127.0.0.1 is refused.
* :func:`guarded_protocol` is uvicorn's h11 protocol with a read deadline (a request must
  arrive whole within :data:`READ_TIMEOUT_S` of the connection opening or of the previous
  answer) and a connection cap kept well under the descriptor limit; at the cap the
  oldest connection waiting for a request is closed to make room, or, if none waits, the
  new one is refused with a 503.

Its logs go through :func:`codingcode.logs.quiet_logging` (one line each, rate-limited).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]

#: Seconds a connection may take to deliver a whole request (headers and body).
READ_TIMEOUT_S = 10.0
#: Seconds an idle keep-alive connection is kept after an answer (uvicorn's setting).
KEEP_ALIVE_S = 5.0
#: Upper bound on open connections (lowered to fit the process's descriptor limit).
MAX_CONNECTIONS = 256
#: Connections accepted per wake-up of the event loop (and the listen backlog).
ACCEPT_BATCH = 64
#: Largest request head (request line and headers) h11 buffers, in bytes.
MAX_HEAD_BYTES = 16 * 1024

_LOCALHOST = ("localhost", "localhost.")


_NUMERIC_V4 = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]*|[0-9]+)){0,3}\.?")


def ip_literal(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address an IP literal means, in every form a browser or resolver reads as one:
    dotted quad, ``[v6]``, a zone id, a trailing dot, and the numeric IPv4 forms
    (``2130706433``, ``0x7f000001``, ``0x7f.1``, ``0177.0.0.1``, ``127.1``); None for names."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if not _NUMERIC_V4.fullmatch(text):
        return None
    try:  # inet_aton knows the numeric forms; the regex above keeps it to them
        return ipaddress.IPv4Address(socket.inet_aton(text.removesuffix(".")))
    except (OSError, ValueError):
        return None


def _loopback_ip(text: str) -> bool | None:
    """True/False for an IP literal (any loopback form), None if ``text`` is not one."""
    ip = ip_literal(text)
    if ip is None:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def is_loopback(host: str, *, resolve: bool = True) -> bool:
    """Whether ``host`` means this machine only: a loopback literal, localhost, or a name
    whose every address is loopback (``resolve=False`` treats other names as not)."""
    literal = _loopback_ip(host)
    if literal is not None:
        return literal
    if host.lower() in _LOCALHOST:
        return True
    if not resolve or not host:
        return False
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False
    addresses = {str(info[4][0]) for info in infos}
    return bool(addresses) and all(_loopback_ip(a) for a in addresses)


def _split_host_port(value: str) -> tuple[str, int | None] | None:
    """``host[:port]`` of a Host header (``[v6]:port`` too); None if malformed."""
    value = value.strip()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[1:end], value[end + 1 :]
        if not rest:
            return host, None
        if not rest.startswith(":") or not rest[1:].isdigit():
            return None
        return host, int(rest[1:])
    host, sep, port = value.rpartition(":")
    if not sep:
        return value, None
    if not port.isdigit() or ":" in host:
        return None
    return host, int(port)


def _local_name(host: str, bound_name: str | None) -> bool:
    if _loopback_ip(host):
        return True
    lowered = host.lower()
    return lowered in _LOCALHOST or (bound_name is not None and lowered == bound_name.lower())


def host_allowed(header: str, port: int, bound_name: str | None = None) -> bool:
    parts = _split_host_port(header)
    if parts is None:
        return False
    host, given = parts
    return _local_name(host, bound_name) and (given or 80) == port


def origin_allowed(origin: str, port: int, bound_name: str | None = None) -> bool:
    try:
        url = urlsplit(origin)
        given = url.port
    except ValueError:
        return False
    if url.scheme not in ("http", "https") or not url.hostname:
        return False
    default = 443 if url.scheme == "https" else 80
    return _local_name(url.hostname, bound_name) and (given or default) == port


#: How much of a refused request's body is read before answering (a larger one is cut off).
_DRAIN_BYTES = 1 << 20


def rebinding_guard(app: ASGIApp, port: int, bound_name: str | None = None) -> ASGIApp:
    """An ASGI wrapper refusing requests not addressed to this machine's loopback."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            headers = dict(scope.get("headers") or [])
            host = headers.get(b"host", b"").decode("latin-1")
            origin = headers.get(b"origin")
            # A client waiting for "100 Continue" has sent no body, and asking for one
            # would tell it to upload: it is answered at once.
            waits = headers.get(b"expect", b"").lower() == b"100-continue"
            body = None if waits else receive
            if not host_allowed(host, port, bound_name):
                await _refuse(send, 421, "the Host header does not name this loopback server", body)
                return
            if origin is not None and not origin_allowed(
                origin.decode("latin-1"), port, bound_name
            ):
                await _refuse(send, 403, "the Origin is not this loopback server", body)
                return
        await app(scope, receive, send)

    return guarded


async def _refuse(send: Any, status: int, message: str, receive: Any = None) -> None:
    # Read the body the client sent (up to a bound) first: closing a socket with unread data
    # resets the connection, and the client would see the reset instead of this answer.
    unread = _DRAIN_BYTES if receive is not None else 0
    while unread > 0:
        message_in = await receive()
        if message_in.get("type") != "http.request":
            break
        unread -= len(message_in.get("body", b""))
        if not message_in.get("more_body", False):
            break
    body = f'{{"error": "refused", "message": "{message}"}}'.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def connection_cap() -> int:
    """:data:`MAX_CONNECTIONS`, or less so that half the descriptor limit stays free."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return MAX_CONNECTIONS
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(8, min(MAX_CONNECTIONS, (soft - 2 * ACCEPT_BATCH) // 2))


_REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\n"
    b"content-length: 33\r\n\r\ntoo many connections; try again.\n"
)


def guarded_protocol(
    read_timeout_s: float = READ_TIMEOUT_S, max_connections: int | None = None
) -> type[Any]:
    """uvicorn's h11 protocol with a read deadline and a connection cap (one server's)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    cap = max_connections if max_connections is not None else connection_cap()
    #: Connections waiting for a request, oldest first: the ones closed to make room.
    waiting: OrderedDict[Any, None] = OrderedDict()

    class GuardedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(read_timeout_s, self._expire)
            waiting[self] = None

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            waiting.pop(self, None)

        def _expire(self) -> None:
            self._deadline = None
            waiting.pop(self, None)
            if not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > cap:
                victim = next(iter(waiting), None)
                if victim is None:  # everyone is being served: refuse the newcomer
                    self.connections.discard(self)
                    transport.write(_REFUSED)
                    transport.close()
                    return
                victim._expire()
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
                self._disarm()  # the request is in (or the connection is done)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return GuardedH11Protocol
