"""TLS termination for the hosts a masked credential names (``sandbox.network.tlsTerminate``).

The proxy has already checked the name, resolved it and connected to a checked address.
Then, before the command is told the tunnel is open, TLS with the real server is set up and
its certificate checked against the system's trust (a server with an invalid or unexpected
certificate gets nothing: the CONNECT is answered ``502`` with why). The command's side gets
a certificate for the host signed by the session's CA. Each HTTP/1.1 request is then read
with h11, its ``Host`` must be the tunnel's host (no fronting another site through a shared
address), and its headers and body are passed on with every placeholder of a credential
whose ``injectHosts`` match the host replaced by the real value — streamed chunk by chunk,
never buffered whole. A placeholder of a credential that does not belong to this host is
passed on unchanged and reported. Responses are passed on as they are, except that a real
value echoed back is replaced by its placeholder.

Errors never carry a header or body into a message: only exception type names are shown.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import h11
from anyio.streams.tls import TLSStream

from codingcode.sandbox.network.rewrite import Rewriter, rewrite_header

if TYPE_CHECKING:
    from codingcode.sandbox.credentials.broker import CallCredentials

_CHUNK = 256 * 1024
MAX_HEAD_BYTES = 64 * 1024
HANDSHAKE_TIMEOUT_S = 15.0
_HOP = {b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer", b"upgrade"}


class Prefixed(anyio.abc.ByteStream):
    """A stream that first returns bytes already read from it (sent after CONNECT early)."""

    def __init__(self, inner: anyio.abc.ByteStream, first: bytes) -> None:
        self.inner = inner
        self.first = first

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self.first:
            data, self.first = self.first[:max_bytes], self.first[max_bytes:]
            return data
        return await self.inner.receive(max_bytes)

    async def send(self, item: bytes) -> None:
        await self.inner.send(item)

    async def send_eof(self) -> None:
        await self.inner.send_eof()

    async def aclose(self) -> None:
        await self.inner.aclose()


Report = Callable[[str, str, bool], None]
"""(credential, what happened, ok): where the exchange reports injections and refusals."""


async def open_upstream(
    upstream: anyio.abc.ByteStream, host: str, context: ssl.SSLContext
) -> TLSStream | str:
    """TLS with the real server (its certificate checked), or why not (one line)."""
    try:
        with anyio.fail_after(HANDSHAKE_TIMEOUT_S):
            return await TLSStream.wrap(
                upstream, hostname=host, ssl_context=context, standard_compatible=False
            )
    except ssl.SSLCertVerificationError as exc:
        why = exc.verify_message or exc.reason or "not trusted"
        return (
            f"{host}'s certificate could not be verified ({why}); a masked credential is "
            "never sent to a server whose certificate the system does not trust"
        )
    except TimeoutError:
        return f"the TLS handshake with {host} timed out"
    except (ssl.SSLError, OSError, anyio.EndOfStream, anyio.BrokenResourceError) as exc:
        return f"the TLS handshake with {host} failed ({type(exc).__name__})"


async def accept_client(
    client: anyio.abc.ByteStream, host: str, context: ssl.SSLContext
) -> TLSStream | str:
    try:
        with anyio.fail_after(HANDSHAKE_TIMEOUT_S):
            return await TLSStream.wrap(
                client, server_side=True, ssl_context=context, standard_compatible=False
            )
    except TimeoutError:
        return f"the command's TLS handshake for {host} timed out"
    except (ssl.SSLError, OSError, anyio.EndOfStream, anyio.BrokenResourceError) as exc:
        return (
            f"the command refused the sandbox's certificate for {host} "
            f"({type(exc).__name__}; a client that pins certificates or ignores "
            "SSL_CERT_FILE cannot use masked credentials)"
        )


async def _receive(stream: anyio.abc.ByteStream, max_bytes: int) -> bytes:
    """What the stream has now, up to ``max_bytes``: after one TLS record, the records
    already decrypted-able in its buffer are drained too, so the HTTP parsing and the
    placeholder scan run once per socket read rather than once per 16 KB record."""
    data = await stream.receive(max_bytes)
    ssl_object = getattr(stream, "_ssl_object", None)  # anyio's TLSStream; else as it is
    if not isinstance(ssl_object, ssl.SSLObject):
        return data
    parts = [data]
    size = len(data)
    while size < max_bytes:
        try:
            more = ssl_object.read(max_bytes - size)
        except ssl.SSLError:  # want-read (the buffer is empty), or a close: next receive
            break
        if not more:
            break
        parts.append(more)
        size += len(more)
    return data if len(parts) == 1 else b"".join(parts)


async def _next(conn: h11.Connection, stream: anyio.abc.ByteStream) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        try:
            data = await _receive(stream, _CHUNK)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            data = b""
        except (ssl.SSLError, OSError):
            data = b""
        conn.receive_data(data)


def _bad_request(reason: str) -> bytes:
    body = f"codingcode's network proxy: {reason}.\n".encode()
    return (
        b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"X-Proxy-Error: proxy-error\r\nConnection: close\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


class Tables:
    """The call's placeholders and real values as seen from one host."""

    def __init__(self, creds: CallCredentials, host: str) -> None:
        self.labels: dict[bytes, str] = {}
        outgoing: dict[bytes, bytes | None] = {}
        for secret in creds.secrets:
            key = secret.placeholder.encode()
            self.labels.setdefault(key, secret.credential)
            if secret.injects_to(host):
                outgoing[key] = secret.real.encode()
                self.labels[key] = secret.credential
            else:
                outgoing.setdefault(key, None)
        self.outgoing = outgoing
        self.incoming: dict[bytes, bytes | None] = {
            s.real.encode(): s.placeholder.encode() for s in creds.secrets
        }


async def exchange(
    client: anyio.abc.ByteStream,
    upstream: anyio.abc.ByteStream,
    host: str,
    port: int,
    creds: CallCredentials,
    report: Report,
) -> None:
    """Pass requests and responses between the command and the server until either closes."""
    tables = Tables(creds, host)

    def on_out(needle: bytes, replaced: bool) -> None:
        label = tables.labels.get(needle, "a credential")
        if replaced:
            report(label, f"{label} injected for {host}", True)
        else:
            report(label, f"{label}'s placeholder sent to {host}: not replaced", False)

    def on_in(needle: bytes, replaced: bool) -> None:
        report("", f"{host} echoed a real credential back: the command saw its placeholder", True)

    authority = {host.encode(), f"{host}:{port}".encode()}
    if ":" in host:
        authority |= {f"[{host}]".encode(), f"[{host}]:{port}".encode()}
    server = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
    out = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
    while True:
        try:
            request = await _next(server, client)
        except h11.RemoteProtocolError:
            await client.send(_bad_request("a malformed HTTP request inside the tunnel"))
            return
        if not isinstance(request, h11.Request):
            return
        hosts = [v for k, v in request.headers if k == b"host"]
        if len(hosts) != 1 or hosts[0].lower() not in authority:
            report("", f"a request inside the tunnel to {host} named another host", False)
            await client.send(_bad_request(f"a request in the tunnel to {host} must be for {host}"))
            return
        if not request.target.startswith(b"/") and request.target != b"*":
            await client.send(
                _bad_request("a request in the tunnel must have an origin-form target")
            )
            return
        rewriter = Rewriter(tables.outgoing, on_out)
        headers = []
        expects = False
        for name, value in request.headers:
            if name in _HOP:
                continue
            if name == b"expect":
                expects = True
                continue
            headers.append((name, rewrite_header(name, value, rewriter)))
        try:
            # A placeholder in the URL (``?access_token=...``) is replaced there too.
            target = rewriter.whole(request.target)
            data = out.send(h11.Request(method=request.method, target=target, headers=headers))
        except h11.LocalProtocolError:
            await client.send(_bad_request("the request cannot be forwarded"))
            return
        await upstream.send(data or b"")
        if expects and server.they_are_waiting_for_100_continue:
            await client.send(
                server.send(h11.InformationalResponse(status_code=100, headers=[])) or b""
            )
        body = Rewriter(tables.outgoing, on_out)
        while True:
            try:
                event = await _next(server, client)
            except h11.RemoteProtocolError:
                return
            if not isinstance(event, (h11.Data, h11.EndOfMessage)):
                return  # the command went away mid-body
            if await _pass_body(event, body, out, upstream):
                break
        if not await _response(server, out, client, upstream, Rewriter(tables.incoming, on_in)):
            return
        if server.our_state is h11.DONE and out.our_state is h11.DONE:
            try:
                server.start_next_cycle()
                out.start_next_cycle()
            except h11.LocalProtocolError:
                return
        else:
            return


async def _response(
    server: h11.Connection,
    out: h11.Connection,
    client: anyio.abc.ByteStream,
    upstream: anyio.abc.ByteStream,
    echo: Rewriter,
) -> bool:
    """Pass one response back (real values echoed replaced); False when the exchange ends."""
    while True:
        try:
            event = await _next(out, upstream)
        except h11.RemoteProtocolError:
            return False
        if isinstance(event, h11.InformationalResponse):
            if event.status_code == 100:
                continue  # already answered to the command
            return False  # 101 and the like: not followed
        if isinstance(event, h11.Response):
            headers = [(k, echo.whole(v)) for k, v in event.headers if k not in _HOP]
            await client.send(
                server.send(
                    h11.Response(
                        status_code=event.status_code, headers=headers, reason=event.reason
                    )
                )
                or b""
            )
        elif isinstance(event, (h11.Data, h11.EndOfMessage)):
            if await _pass_body(event, echo, server, client):
                return True
        else:
            return False


async def _pass_body(
    event: h11.Data | h11.EndOfMessage,
    rewriter: Rewriter,
    conn: h11.Connection,
    to: anyio.abc.ByteStream,
) -> bool:
    """Pass one piece of a message body on through ``rewriter``, as ``conn`` sends it to
    ``to``; True at the end of the message (what the rewriter still held goes first)."""
    chunk = rewriter.feed(event.data) if isinstance(event, h11.Data) else rewriter.flush()
    if chunk:
        await to.send(conn.send(h11.Data(data=chunk)) or b"")
    if isinstance(event, h11.Data):
        return False
    await to.send(conn.send(h11.EndOfMessage()) or b"")
    return True
