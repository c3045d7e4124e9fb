"""fetch_url (SPEC T7): an HTTP GET with guards.

Every hop (the first request and each redirect) has its host resolved and every address
checked before anything connects (``ssrf``), and the connection then goes to exactly the
address that was checked (the name is not resolved a second time, so DNS rebinding cannot
swap in a private address). The body is read with a byte limit, then converted
(``convert``): HTML to Markdown, JSON pretty-printed.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import anyio
from pydantic import Field

from codingcode.errors import (
    CancelledError,
    DeniedError,
    InvalidArgumentsError,
    ToolFailureError,
    ToolTimeoutError,
)
from codingcode.tools.builtin.web.convert import Converted, convert_html, html_to_markdown
from codingcode.tools.builtin.web.network_gate import NetworkGate, network_gate
from codingcode.tools.builtin.web.settings import FetchSettings, _Strict, load_web_settings
from codingcode.tools.builtin.web.ssrf import IPAddress, resolve_checked
from codingcode.tools.definition import ToolExecCtx

if TYPE_CHECKING:
    import httpx

FETCH_DEFAULT_LENGTH = 100_000
FETCH_MAX_LENGTH = 500_000
#: Raw bytes read from an HTML page before conversion; markup shrinks a lot in Markdown.
HTML_RAW_LIMIT = 5_000_000
USER_AGENT = "codingcode-fetch/0.1 (+https://github.com/codingcode)"

_TEXT_TYPES = (
    "application/json",
    "application/xml",
    "application/xhtml+xml",
    "application/javascript",
    "application/x-javascript",
    "application/ecmascript",
    "application/x-yaml",
    "application/yaml",
    "application/toml",
    "application/rss+xml",
    "application/atom+xml",
    "application/x-sh",
    "application/sql",
    "application/graphql",
    "image/svg+xml",
)


class FetchUrlArgs(_Strict):
    url: str = Field(min_length=1, description="The http:// or https:// URL to GET.")
    max_length: int = Field(
        default=FETCH_DEFAULT_LENGTH,
        ge=1,
        le=FETCH_MAX_LENGTH,
        description=f"Maximum characters returned (default {FETCH_DEFAULT_LENGTH}, "
        f"at most {FETCH_MAX_LENGTH}); a longer response is cut and says so.",
    )


def parse_http_url(text: str) -> httpx.URL:
    import httpx  # on first use: a command that fetches nothing does not pay for it

    try:
        url = httpx.URL(text.strip())
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise InvalidArgumentsError(f"`url` is not a valid URL: {exc}.") from None
    if url.scheme not in ("http", "https"):
        raise InvalidArgumentsError(
            f"`url` must start with http:// or https:// (got {url.scheme or 'no'} scheme)."
        )
    if not url.host:
        raise InvalidArgumentsError(f"`url` {text!r} has no host.")
    return url


def _media_type(content_type: str) -> tuple[str, str | None]:
    parts = [p.strip() for p in content_type.split(";")]
    media = parts[0].lower() if parts and parts[0] else ""
    charset = None
    for p in parts[1:]:
        if p.lower().startswith("charset="):
            charset = p.split("=", 1)[1].strip("\"' ")
    return media, charset


def is_textual(media: str) -> bool:
    return (
        media.startswith("text/")
        or media in _TEXT_TYPES
        or media.endswith("+json")
        or media.endswith("+xml")
    )


def _size_text(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    size = float(n)
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024 or unit == "GB":
            break
    return f"{size:.1f} {unit}"


@dataclass
class FetchedBody:
    url: str
    status: int
    media: str
    charset: str | None
    data: bytes
    #: True when reading stopped at the byte limit.
    truncated: bool
    redirects: list[str]
    #: The size the server announced (Content-Length), when it did.
    announced: int | None = None


T = TypeVar("T")


async def run_cancellable(fn: Callable[[], Awaitable[T]], ctx: ToolExecCtx, what: str) -> T:
    """Run ``fn`` until it finishes or ``ctx.signal`` is set (then raise CancelledError)."""
    if ctx.signal is None:
        return await fn()
    result: list[T] = []
    cancelled = False
    signal = ctx.signal

    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            nonlocal cancelled
            await signal.wait()
            cancelled = True
            tg.cancel_scope.cancel()

        async def work() -> None:
            result.append(await fn())
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        tg.start_soon(work)
    if cancelled or not result:
        raise CancelledError(f"{what} was cancelled.")
    return result[0]


async def fetch_raw(
    url: httpx.URL,
    max_length: int,
    settings: FetchSettings,
    *,
    client: httpx.AsyncClient,
    gate: NetworkGate | None = None,
) -> FetchedBody:
    import httpx

    redirects: list[str] = []
    current = url
    for _hop in range(settings.max_redirects + 1):
        # The ASCII (IDNA) form: what DNS, the Host header and TLS all use.
        host = current.raw_host.decode("ascii")
        port = current.port or (443 if current.scheme == "https" else 80)
        private = settings.allow_private_hosts
        if gate is not None:
            gate.check(host)  # the sandbox's network lists gate fetch_url too
            private = [*private, *gate.private_hosts()]
        addresses = await resolve_checked(host, port, private)
        response = await _send_pinned(client, current, addresses)
        try:
            if response.status_code in (301, 302, 303, 307, 308) and "location" in response.headers:
                location = response.headers["location"]
                try:
                    target = current.join(location)
                except httpx.InvalidURL as exc:
                    raise ToolFailureError(
                        f"{current} redirected to an invalid URL {location!r}: {exc}."
                    ) from None
                if target.scheme not in ("http", "https"):
                    raise DeniedError(
                        f"{current} redirected to {target}, which is not http(s); not followed."
                    )
                redirects.append(str(target))
                current = target
                continue
            media, charset = _media_type(response.headers.get("content-type", ""))
            if response.status_code >= 400:
                body = await _read_limited(response, 4000)
                raise ToolFailureError(
                    f"GET {current} failed with HTTP {response.status_code} "
                    f"{response.reason_phrase}." + _error_excerpt(body[0], media)
                )
            if media and not is_textual(media):
                length = response.headers.get("content-length")
                size = (
                    _size_text(int(length))
                    if length and length.isdigit()
                    else "size not given by the server"
                )
                raise InvalidArgumentsError(
                    f"{current} is binary content ({media}, {size}); fetch_url returns text, "
                    "HTML, JSON and other textual types only."
                )
            length = response.headers.get("content-length", "")
            data, truncated = await _read_limited(response, byte_limit(media, max_length))
            return FetchedBody(
                str(current),
                response.status_code,
                media,
                charset,
                data,
                truncated,
                redirects,
                int(length) if length.isdigit() else None,
            )
        finally:
            await response.aclose()
    raise ToolFailureError(
        f"Too many redirects (more than {settings.max_redirects}) starting at {url}: "
        + " -> ".join(redirects[-3:])
        + "."
    )


async def _send_pinned(
    client: httpx.AsyncClient, url: httpx.URL, addresses: list[IPAddress]
) -> httpx.Response:
    """GET ``url`` from the checked addresses, in order, until one accepts the connection.

    The URL's host is replaced by the address (so nothing resolves the name again), while
    the Host header and the TLS server name (SNI, certificate check) stay the real name.
    """
    import httpx

    headers = {"Host": url.netloc.decode("ascii"), "User-Agent": USER_AGENT}
    extensions = {"sni_hostname": url.raw_host.decode("ascii")} if url.scheme == "https" else {}
    for i, ip in enumerate(addresses):
        request = client.build_request(
            "GET", url.copy_with(host=str(ip)), headers=headers, extensions=extensions
        )
        try:
            return await client.send(request, stream=True)
        except httpx.ConnectError:
            if i == len(addresses) - 1:
                raise
    raise ToolFailureError(f"Host {url.host!r} has no addresses.")


def converts(media: str) -> bool:
    """Whether the whole body is needed before cutting (converted or pretty-printed)."""
    return media in ("text/html", "application/xhtml+xml", "", "application/json") or (
        media.endswith("+json")
    )


def byte_limit(media: str, max_length: int) -> int:
    """How many bytes to read: plain text stops right after ``max_length`` characters (UTF-8
    takes at most 4 bytes each); HTML and JSON are read further, since conversion shrinks them."""
    if converts(media):
        return max(HTML_RAW_LIMIT, max_length * 4)
    return max_length * 4 + 4


def _decode(data: bytes, charset: str | None) -> str:
    if charset:
        try:
            return data.decode(charset, "replace")
        except LookupError:  # a charset Python does not know: fall through to the guesses
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # A cut in the middle of a character is not a reason to leave UTF-8.
        try:
            return data[:-3].decode("utf-8") + data[-3:].decode("utf-8", "ignore")
        except UnicodeDecodeError:
            return data.decode("latin-1")


def _error_excerpt(data: bytes, media: str) -> str:
    if not data or not is_textual(media or "text/plain"):
        return ""
    text = data.decode("utf-8", "replace").strip()
    if media == "text/html":
        text = html_to_markdown(text)
    return f" Response: {text[:500]}" if text else ""


async def _read_limited(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    total = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False


def render_body(body: FetchedBody, max_length: int) -> str:
    data = body.data
    if b"\x00" in data[:8192] and not body.media.startswith("text/html"):
        raise InvalidArgumentsError(
            f"{body.url} looks binary ({body.media or 'no content type'}, "
            f"{_size_text(len(data))} read, NUL bytes); fetch_url returns text only."
        )
    text = _decode(data, body.charset)
    media = body.media or "text/plain"
    kind = media
    #: Set when only a prefix of the page was converted: the Markdown goes on past the cut.
    partial: Converted | None = None
    if media in ("text/html", "application/xhtml+xml") or (
        not body.media and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))
    ):
        converted = convert_html(text, max_length)
        text = converted.markdown
        partial = None if converted.complete else converted
        kind = f"{media}, converted to Markdown"
    elif (media == "application/json" or media.endswith("+json")) and not body.truncated:
        try:
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
            kind = f"{media}, pretty-printed"
        except json.JSONDecodeError:
            kind = f"{media}, not valid JSON, shown as is"
    header = [f"URL: {body.url}"]
    if body.redirects:
        header.append(f"Redirected {len(body.redirects)} time(s); final URL shown above.")
    header.append(f"Status: {body.status} | Content: {kind}")
    notes = []
    more = f"Pass a larger max_length (at most {FETCH_MAX_LENGTH}) to see more."
    size = (
        f"{_size_text(body.announced)} in all"
        if body.announced
        else f"more than the {_size_text(len(data))} read"
    )
    if partial is not None:
        notes.append(
            f"[Cut: showing the first {max_length} characters; the page goes on (only the "
            f"first {_size_text(partial.html_chars)} of its {_size_text(len(data))} of HTML "
            f"were converted to get them). {more}]"
        )
        text = text[:max_length]
    elif len(text) > max_length:
        total = f"the response is longer ({size})" if body.truncated else f"of {len(text)}"
        if body.truncated:
            notes.append(f"[Cut: showing the first {max_length} characters; {total}. {more}]")
        else:
            notes.append(f"[Cut: showing the first {max_length} {total} characters. {more}]")
        text = text[:max_length]
    elif body.truncated:
        notes.append(
            f"[Cut: the page is larger than fetch_url reads ({size}); this is its first "
            f"{_size_text(len(data))}, converted.]"
        )
    return "\n".join(header) + "\n\n" + text + ("\n\n" + "\n".join(notes) if notes else "")


def _client(timeout_s: float) -> httpx.AsyncClient:
    import httpx

    # trust_env=False: a proxy from the environment would make the address check meaningless
    # (the proxy, not we, would resolve and connect).
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
        follow_redirects=False,
        trust_env=False,
    )


async def fetch_url(args: FetchUrlArgs, ctx: ToolExecCtx) -> str:
    url = parse_http_url(args.url)
    loaded = load_web_settings(ctx.session_workspace())
    settings = loaded.settings.fetch
    gate = network_gate(ctx.session_workspace(), ctx.capabilities)
    import httpx

    async def go() -> str:
        async with _client(settings.timeout_s) as client:
            try:
                with anyio.fail_after(settings.timeout_s * (settings.max_redirects + 1)):
                    body = await fetch_raw(url, args.max_length, settings, client=client, gate=gate)
            except TimeoutError:
                raise ToolTimeoutError(
                    f"GET {url} took longer than the time limit and was stopped."
                ) from None
            except httpx.TimeoutException:
                raise ToolTimeoutError(
                    f"GET {url} timed out (no answer within {settings.timeout_s:g}s)."
                ) from None
            except httpx.HTTPError as exc:
                raise ToolFailureError(f"GET {url} failed: {type(exc).__name__}: {exc}.") from None
        # Converting megabytes of HTML takes a while: off the event loop, so parallel calls
        # and Ctrl-C stay responsive.
        return await anyio.to_thread.run_sync(render_body, body, args.max_length)

    try:
        return await run_cancellable(go, ctx, f"fetch_url {url}")
    except DeniedError as exc:
        if loaded.ignored:
            raise DeniedError(exc.message + loaded.ignored_note()) from None
        raise
