"""The filtering proxy: HTTP with CONNECT, one name check, one resolution, a pinned connect.

Each sandboxed call gets its own listener (the socket its relay made inside the call's
network namespace, see :mod:`codingcode.sandbox.network.relay`), so every decision is
known to belong to that call. A request goes through in four steps:

1. the request head is parsed with h11 (CONNECT ``host:port``, or an absolute-form
   ``http://`` URL; origin-form requests and ``https://`` URLs are refused);
2. the name is checked against the :class:`DomainPolicy` (the ``Host`` header is never
   consulted: for plain HTTP it is rewritten to the checked name);
3. the name is resolved once and every address checked (rebinding, local, metadata);
4. the connection goes to a checked address — never to the name again.

A refusal is a ``403`` whose body names the setting to change. Plain-HTTP requests are
forwarded one per connection (the client's framing re-encoded by h11, ``Connection:
close`` upstream), so a pipelined second request never slips past the checks.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import re
import socket
import ssl
import sys
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import anyio
import anyio.abc
import h11

from codingcode.sandbox.network.addresses import IPAddress
from codingcode.sandbox.network.domains import ALLOWED_KEY, DomainPolicy, Verdict, normalize_host
from codingcode.sandbox.network.rewrite import Rewriter

if TYPE_CHECKING:
    from codingcode.sandbox.credentials.broker import CallCredentials
    from codingcode.sandbox.network.tls import SessionCA

Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]

#: How long a client may take to send its request head.
HEAD_TIMEOUT_S = 30.0
#: How long connecting to an upstream address may take.
CONNECT_TIMEOUT_S = 10.0
#: The largest request head accepted.
MAX_HEAD_BYTES = 64 * 1024
#: Connections one call may hold open at once (more wait for a place).
MAX_CONNECTIONS_PER_CALL = 1024
#: Events kept per call for its audit records and its note (the counters go on).
MAX_EVENTS_PER_CALL = 1000
_CHUNK = 256 * 1024
_HOP_BY_HOP = {
    b"connection",
    b"keep-alive",
    b"proxy-authorization",
    b"proxy-authenticate",
    b"proxy-connection",
    b"te",
    b"trailer",
    b"upgrade",
    b"host",
}
_AUTHORITY = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):([0-9]{1,5})$")


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    """Every address of ``host`` (in the order the system gives them). An IP literal is
    itself, and ``localhost`` is the loopback address (RFC 6761), without a lookup."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    if host == "localhost":
        return [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[IPAddress] = []
    for info in infos:
        ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if ip not in found:
            found.append(ip)
    return found


async def connect_address(ip: IPAddress, port: int) -> anyio.abc.SocketStream:
    """A TCP connection to exactly ``ip`` (no lookup of any kind on the way)."""
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        err = sock.connect_ex((str(ip), port))
        if err == errno.EINPROGRESS:
            await anyio.wait_writable(sock)
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            raise OSError(err, os.strerror(err))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return await anyio.abc.SocketStream.from_socket(sock)
    except BaseException:
        sock.close()
        raise


@dataclass(frozen=True)
class ConnectionEvent:
    """One connection attempt through the proxy, allowed or refused."""

    call: str
    method: str
    host: str
    port: int
    allowed: bool
    reason: str = ""
    setting: str = ""
    address: str = ""
    when: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, object]:
        return {
            "call": self.call,
            "method": self.method,
            "host": self.host,
            "port": self.port,
            "allowed": self.allowed,
            "reason": self.reason,
            "setting": self.setting,
            "address": self.address,
            "when": self.when,
        }


@dataclass
class CallChannel:
    """One sandboxed call's view of the proxy: its policy and what happened."""

    label: str
    policy: DomainPolicy
    events: deque[ConnectionEvent] = field(
        default_factory=lambda: deque(maxlen=MAX_EVENTS_PER_CALL)
    )
    allowed_count: int = 0
    refused_count: int = 0
    #: Refusals by the policy (not failures to resolve or connect).
    blocked_count: int = 0
    #: Refused names (host:port) with their reason, first seen first (at most 20 kept).
    refused: dict[str, Verdict] = field(default_factory=dict)
    scope: anyio.CancelScope | None = None
    stopped: bool = False
    #: Set once the relay's listener arrived (or the call ended without one).
    ready: anyio.Event | None = None
    listening: bool = False
    #: The call's masked credentials (real values in memory; dropped when the call ends).
    credentials: CallCredentials | None = field(default=None, repr=False)
    #: What happened to credentials, one line each (first seen first, at most 20).
    credential_notes: dict[str, bool] = field(default_factory=dict)

    def report_credential(self, host: str, port: int, text: str, ok: bool) -> None:
        """Audit (once per line per call) what the proxy did with a credential."""
        if text in self.credential_notes or len(self.credential_notes) >= 20:
            return
        self.credential_notes[text] = ok
        method = "INJECT" if ok else "CREDENTIAL"
        self.events.append(
            ConnectionEvent(self.label, method, host, port, ok, text, "sandbox.credentials")
        )

    def record(self, event: ConnectionEvent, verdict: Verdict | None = None) -> None:
        self.events.append(event)
        if event.allowed:
            self.allowed_count += 1
            return
        self.refused_count += 1
        if verdict is None:
            return
        self.blocked_count += 1
        key = f"{event.host}:{event.port}"
        if key not in self.refused and len(self.refused) < 20:
            self.refused[key] = verdict

    def stop(self) -> None:
        self.stopped = True
        if self.scope is not None:
            self.scope.cancel()

    def note(self) -> str:
        """What the tool result says about refused connections and credentials ("" when
        nothing happened worth saying)."""
        problems = [t for t, ok in self.credential_notes.items() if not ok]
        cred = f"[credentials: {'; '.join(problems)}]" if problems else ""
        if not self.refused:
            return cred
        return "\n".join(filter(None, [self._refused_note(), cred]))

    def _refused_note(self) -> str:
        names = "; ".join(f"{k} ({v.reason})" for k, v in self.refused.items())
        more = self.blocked_count - len(self.refused)
        extra = f" and {more} more attempt(s)" if more > 0 else ""
        return (
            f"[network: blocked by the network policy: {names}{extra}. Do not work around "
            "this; ask the user whether to allow the domain once, for this session, or always "
            f"({ALLOWED_KEY})]"
        )


def refusal(verdict: Verdict, host: str, status: int = 403) -> bytes:
    """The proxy's answer to a refused request; the body names the setting to change."""
    if status == 403:
        setting = verdict.setting or ALLOWED_KEY
        body = (
            f"Blocked by codingcode's network policy: {verdict.reason}.\n"
            f"The setting that decides this is {setting}; ask the user to allow {host} "
            "(once, for this session, or always).\n"
        ).encode()
    else:
        body = f"codingcode's network proxy: {verdict.reason}.\n".encode()
    reason = {403: "Forbidden", 400: "Bad Request", 502: "Bad Gateway"}.get(status, "Error")
    error = "blocked-by-network-policy" if status == 403 else "proxy-error"
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"X-Proxy-Error: {error}\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    return head + body


def parse_authority(target: str) -> tuple[str, int] | None:
    """``host:port`` of a CONNECT request (IPv6 in brackets); None when malformed."""
    m = _AUTHORITY.match(target)
    if m is None:
        return None
    port = int(m.group(2))
    if not 0 < port < 65536:
        return None
    return m.group(1).strip("[]"), port


def parse_absolute(target: str) -> tuple[str, int, str] | str:
    """(host, port, origin-form path) of an ``http://`` absolute-form target, or why not."""
    if not target.lower().startswith("http://"):
        if target.lower().startswith("https://"):
            return "https URLs go through CONNECT (the proxy does not open TLS for a client)"
        return "requests to the proxy must name an http:// URL or use CONNECT"
    try:
        parts = urlsplit(target)
        port = parts.port or 80
    except ValueError:
        return "the URL's host or port is malformed"
    netloc = parts.netloc
    if "@" in netloc:
        return "user information in the URL is not accepted by the proxy"
    host = parts.hostname or ""
    check = netloc if ":" in netloc.rsplit("]", 1)[-1] else f"{netloc}:{port}"
    if not host or _AUTHORITY.match(check) is None or not 0 < port < 65536:
        return "the URL's host or port is malformed"
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return host, port, path


class _Head:
    """Reads one request head from a stream with h11 (size and time bounded)."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        self.stream = stream
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)

    async def next_event(self) -> object:
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            try:
                data = await self.stream.receive(_CHUNK)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                data = b""
            self.conn.receive_data(data)


class NetworkProxy:
    """The proxy of one session (the decisions; :mod:`runtime` owns its thread)."""

    def __init__(
        self,
        *,
        resolver: Resolver | None = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        upstream_context: ssl.SSLContext | None = None,
    ) -> None:
        self.resolver = resolver or system_resolver
        self.connect_timeout_s = connect_timeout_s
        #: How intercepted hosts' real servers are checked (default: the system's trust).
        self.upstream_context = upstream_context
        self._ca: SessionCA | None = None
        self._ca_lock = threading.Lock()

    def ca(self) -> SessionCA:
        """The session's CA (made on first use; its key only in this process's memory)."""
        with self._ca_lock:
            if self._ca is None:
                from codingcode.sandbox.network.tls import SessionCA

                self._ca = SessionCA()
            return self._ca

    def _upstream_context(self) -> ssl.SSLContext:
        if self.upstream_context is None:
            from codingcode.sandbox.network.tls import upstream_context

            self.upstream_context = upstream_context()
        return self.upstream_context

    async def run_call(self, control: socket.socket, channel: CallChannel) -> None:
        """Receive the call's listener over ``control`` (from the relay), then serve it until
        the call is stopped. Ends at once when the relay never sends one."""
        channel.ready = anyio.Event()
        with anyio.CancelScope() as scope:
            channel.scope = scope
            if channel.stopped:
                scope.cancel()
            listener = await self._receive_listener(control)
            channel.listening = listener is not None
            channel.ready.set()
            if listener is None:
                return
            await self.serve(listener, channel)
        channel.ready.set()

    async def _receive_listener(self, control: socket.socket) -> socket.socket | None:
        try:
            with control:
                control.setblocking(False)
                while True:
                    await anyio.wait_readable(control)
                    try:
                        _, fds, _, _ = socket.recv_fds(control, 16, 4)
                    except BlockingIOError:
                        continue
                    if not fds:
                        return None  # the relay ended without one
                    for extra in fds[1:]:
                        socket.close(extra)
                    sock = socket.socket(fileno=fds[0])
                    if sock.type != socket.SOCK_STREAM or sock.family not in (
                        socket.AF_INET,
                        socket.AF_INET6,
                    ):
                        sock.close()
                        return None
                    return sock
        except OSError:
            return None

    async def serve(self, sock: socket.socket, channel: CallChannel) -> None:
        """Accept connections on ``sock`` until cancelled; each is one request or tunnel."""
        sock.setblocking(False)
        listener = await anyio.abc.SocketListener.from_socket(sock)
        limiter = anyio.Semaphore(MAX_CONNECTIONS_PER_CALL)
        async with listener, anyio.create_task_group() as tg:
            while True:
                await limiter.acquire()
                try:
                    stream = await listener.accept()
                except BaseException:
                    limiter.release()
                    raise
                tg.start_soon(self._handle_limited, stream, channel, limiter)

    async def _handle_limited(
        self,
        stream: anyio.abc.SocketStream,
        channel: CallChannel,
        limiter: anyio.Semaphore,
    ) -> None:
        try:
            async with stream:
                await self.handle(stream, channel)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        except Exception as exc:  # one broken exchange never takes the call's network down
            print(f"codingcode network proxy: {type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            limiter.release()

    async def handle(self, stream: anyio.abc.ByteStream, channel: CallChannel) -> None:
        head = _Head(stream)
        request: object = None
        malformed = False
        with anyio.move_on_after(HEAD_TIMEOUT_S):
            try:
                request = await head.next_event()
            except h11.RemoteProtocolError:
                malformed = True
        if not isinstance(request, h11.Request):
            if malformed or (request is not None and not isinstance(request, h11.ConnectionClosed)):
                why = Verdict(False, "a malformed or oversized HTTP request head")
                await stream.send(refusal(why, "?", 400))
            return
        method = request.method.decode("ascii", "replace").upper()
        target = request.target.decode("latin-1")
        if method == "CONNECT":
            authority = parse_authority(target)
            if authority is None:
                why = Verdict(False, f"CONNECT needs host:port, not {target[:100]!r}")
                channel.record(
                    ConnectionEvent(channel.label, method, target[:200], 0, False, why.reason)
                )
                await stream.send(refusal(why, target[:100], 400))
                return
            host, port = authority
            path = ""
        else:
            parsed = parse_absolute(target)
            if isinstance(parsed, str):
                why = Verdict(False, parsed)
                channel.record(
                    ConnectionEvent(channel.label, method, target[:200], 0, False, parsed)
                )
                await stream.send(refusal(why, target[:100], 400))
                return
            host, port, path = parsed
        name = normalize_host(host) or host
        upstream = await self._open(channel, method, name, port, connect=method == "CONNECT")
        if isinstance(upstream, bytes):
            await stream.send(upstream)
            return
        async with upstream:
            creds = channel.credentials
            if method == "CONNECT" and creds is not None and creds.intercepts(name):
                await self._intercept(stream, head, upstream, name, port, channel, creds)
            elif method == "CONNECT":
                await stream.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                leftover = head.conn.trailing_data[0]
                if leftover:
                    await upstream.send(leftover)
                await _pipe_both(stream, upstream)
            else:
                await self._forward(head, request, name, port, path, stream, upstream, channel)

    async def _intercept(
        self,
        stream: anyio.abc.ByteStream,
        head: _Head,
        upstream: anyio.abc.ByteStream,
        name: str,
        port: int,
        channel: CallChannel,
        creds: CallCredentials,
    ) -> None:
        """TLS terminated for a masked credential's host (see :mod:`.intercept`)."""
        from codingcode.sandbox.network import intercept

        secure = await intercept.open_upstream(upstream, name, self._upstream_context())
        if isinstance(secure, str):
            channel.report_credential(name, port, secure, False)
            await stream.send(refusal(Verdict(False, secure, ""), name, 502))
            return
        await stream.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        leftover = bytes(head.conn.trailing_data[0])
        client = await intercept.accept_client(
            intercept.Prefixed(stream, leftover), name, self.ca().server_context(name)
        )
        if isinstance(client, str):
            channel.report_credential(name, port, client, False)
            return

        def report(label: str, text: str, ok: bool) -> None:
            channel.report_credential(name, port, text, ok)

        try:
            await intercept.exchange(client, secure, name, port, creds, report)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
            pass
        except Exception as exc:
            # The type only: a message could quote a header holding a real value.
            channel.report_credential(
                name, port, f"the exchange with {name} broke ({type(exc).__name__})", False
            )

    async def _open(
        self, channel: CallChannel, method: str, name: str, port: int, *, connect: bool
    ) -> anyio.abc.SocketStream | bytes:
        """The checked, pinned upstream connection, or the refusal to send."""

        def refuse(verdict: Verdict, status: int = 403, address: str = "") -> bytes:
            # Only a 403 is the policy's refusal; a 502 (no such name, no answer) is not.
            event = ConnectionEvent(
                channel.label,
                method,
                name,
                port,
                False,
                verdict.reason,
                verdict.setting,
                address,
            )
            channel.record(event, verdict if status == 403 else None)
            return refusal(verdict, name, status)

        verdict = channel.policy.check_name(name, method=None if connect else method)
        if not verdict.allowed:
            return refuse(verdict)
        try:
            with anyio.fail_after(self.connect_timeout_s):
                addresses = await self.resolver(name, port)
        except TimeoutError:
            return refuse(Verdict(False, f"resolving {name} timed out", ""), 502)
        except OSError as exc:
            return refuse(Verdict(False, f"{name} cannot be resolved: {exc}", ""), 502)
        if not addresses:
            return refuse(Verdict(False, f"{name} has no addresses", ""), 502)
        for ip in addresses:
            verdict = channel.policy.check_address(name, ip)
            if not verdict.allowed:
                return refuse(verdict, address=str(ip))
        last: Exception | None = None
        for ip in addresses:
            try:
                with anyio.fail_after(self.connect_timeout_s):
                    upstream = await connect_address(ip, port)
            except (OSError, TimeoutError) as exc:
                last = exc
                continue
            channel.record(
                ConnectionEvent(channel.label, method, name, port, True, address=str(ip))
            )
            return upstream
        reason = f"connecting to {name}:{port} failed: {last}"
        event = ConnectionEvent(channel.label, method, name, port, False, reason)
        channel.record(event)  # not a policy refusal: no note
        return refusal(Verdict(False, reason, ""), name, 502)

    async def _forward(
        self,
        head: _Head,
        request: h11.Request,
        host: str,
        port: int,
        path: str,
        client: anyio.abc.ByteStream,
        upstream: anyio.abc.ByteStream,
        channel: CallChannel | None = None,
    ) -> None:
        """Send one plain-HTTP request upstream (Host set to the checked name), then copy the
        answer back until the server closes. A placeholder in it is never replaced (no real
        value goes out in clear text) and is reported."""
        authority = f"[{host}]" if ":" in host else host
        if port != 80:
            authority += f":{port}"
        watch = _placeholder_watch(channel, host, port)
        headers = [(b"host", authority.encode())]
        headers += [
            (k, watch.whole(v) if watch else v)
            for k, v in request.headers
            if k.lower() not in _HOP_BY_HOP
        ]
        headers.append((b"connection", b"close"))
        out = h11.Connection(h11.CLIENT)
        try:
            data = out.send(
                h11.Request(
                    method=request.method,
                    target=path.encode("latin-1"),
                    headers=headers,
                    http_version=b"1.1",
                )
            )
        except h11.LocalProtocolError:
            await client.send(refusal(Verdict(False, "the request cannot be forwarded"), host, 400))
            return
        await upstream.send(data or b"")
        async with anyio.create_task_group() as tg:

            async def answer() -> None:
                await _copy(upstream, client)
                tg.cancel_scope.cancel()

            tg.start_soon(answer)
            while True:
                try:
                    event = await head.next_event()
                except h11.RemoteProtocolError:
                    break
                if not isinstance(event, h11.Data | h11.EndOfMessage):
                    break
                if watch is not None and isinstance(event, h11.Data):
                    watch.feed(event.data)  # seen, not changed (the output is not used)
                await upstream.send(out.send(event) or b"")
                if isinstance(event, h11.EndOfMessage):
                    break


def _placeholder_watch(channel: CallChannel | None, host: str, port: int) -> Rewriter | None:
    """A rewriter that changes nothing and reports each placeholder it sees (plain HTTP)."""
    creds = channel.credentials if channel is not None else None
    if channel is None or creds is None or not creds.secrets:
        return None
    labels = {s.placeholder.encode(): s.credential for s in creds.secrets}

    def seen(needle: bytes, replaced: bool) -> None:
        label = labels.get(needle, "a credential")
        channel.report_credential(
            host, port, f"{label}'s placeholder sent to {host} over plain HTTP: not replaced", False
        )

    return Rewriter(dict.fromkeys(labels), seen)


async def _copy(source: anyio.abc.ByteStream, sink: anyio.abc.ByteStream) -> None:
    try:
        while True:
            data = await source.receive(_CHUNK)
            await sink.send(data)
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


async def _pipe_both(a: anyio.abc.ByteStream, b: anyio.abc.ByteStream) -> None:
    """Copy both ways; when one side ends, pass the half-close on; done when both did."""

    async def one_way(src: anyio.abc.ByteStream, dst: anyio.abc.ByteStream) -> None:
        await _copy(src, dst)
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await dst.send_eof()

    async with anyio.create_task_group() as tg:
        tg.start_soon(one_way, a, b)
        tg.start_soon(one_way, b, a)
