"""Network tools: fetch_url (SPEC T7) and web_search (SPEC T8).

``fetch_url`` is an HTTP GET with guards: every hop (the first request and each redirect)
has its host resolved and every address checked before anything connects, and the
connection then goes to exactly the address that was checked (the name is not resolved a
second time, so DNS rebinding cannot swap in a private address). Loopback, private,
link-local, cloud-metadata and other non-public addresses are refused unless the settings
name the host (``web.fetch.allow_private_hosts``), because a local dev server is a
legitimate target when the user says so.

``web_search`` asks a configured provider: a self-hosted SearXNG (its JSON API), Brave
Search or Tavily (keyed APIs, the key read from an environment variable).
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import anyio
import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codingcode.config import Scope, SettingsError, load_settings, merge_values
from codingcode.errors import (
    CancelledError,
    DeniedError,
    InvalidArgumentsError,
    ToolFailureError,
    ToolTimeoutError,
)
from codingcode.tools.definition import BUILTIN, ToolAnnotations, ToolDefinition, ToolExecCtx

FETCH_DEFAULT_LENGTH = 100_000
FETCH_MAX_LENGTH = 500_000
SEARCH_DEFAULT_RESULTS = 8
SEARCH_MAX_RESULTS = 20
#: Raw bytes read from an HTML page before conversion; markup shrinks a lot in Markdown.
HTML_RAW_LIMIT = 5_000_000
USER_AGENT = "codingcode-fetch/0.1 (+https://github.com/codingcode)"

#: Addresses that answer "who am I, what are my credentials" on cloud machines; named so
#: the refusal can say what it protected.
METADATA_ADDRESSES = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack, ...
    ipaddress.ip_address("169.254.170.2"),  # AWS ECS task credentials
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("fd00:ec2::254"),  # AWS IPv6
}

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


# -- settings ---------------------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FetchSettings(_Strict):
    allow_private_hosts: list[str] = Field(
        default_factory=list,
        description="Host names, IP addresses or CIDR ranges fetch_url may reach although "
        "they are not public (e.g. 127.0.0.1, localhost, 10.0.0.0/8).",
    )
    timeout_s: float = Field(default=30.0, gt=0, le=300)
    max_redirects: int = Field(default=5, ge=0, le=20)


class SearchSettings(_Strict):
    provider: Literal["searxng", "brave", "tavily"] | None = None
    #: SearXNG: the instance's base URL (required). Brave/Tavily: an API base override.
    url: str | None = None
    #: The environment variable holding the key (Brave/Tavily).
    api_key_env: str | None = None
    timeout_s: float = Field(default=20.0, gt=0, le=120)


class WebSettings(_Strict):
    fetch: FetchSettings = Field(default_factory=FetchSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)


@dataclass
class LoadedWebSettings:
    """The merged ``web`` section, with the scope each private-host grant came from.

    Allowing a private host is a grant, and so is a search provider (it receives every query):
    from a project file the user has not trusted (workspace trust), both are ignored, and
    ``ignored`` says what was, so a refusal can tell the user how to enable it.
    """

    settings: WebSettings
    private_host_scopes: dict[str, Scope] = field(default_factory=dict)
    search_scope: Scope | None = None
    ignored: list[str] = field(default_factory=list)

    def ignored_note(self) -> str:
        if not self.ignored:
            return ""
        return (
            f" (Ignored from untrusted project settings: {'; '.join(self.ignored)}. Review "
            "them, then run `codingcode trust` to apply them.)"
        )


def load_web_settings(project: Path) -> LoadedWebSettings:
    settings = load_settings(project)
    merged: dict[str, Any] = {}
    scopes: dict[str, Scope] = {}
    search_scope: Scope | None = None
    ignored: list[str] = []
    for f, value in settings.sources("web"):
        try:
            part = WebSettings.model_validate(value)
        except ValidationError as exc:
            problems = "; ".join(
                f"web.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                for e in exc.errors(include_url=False)
            )
            raise SettingsError(f"Settings file {f.path}: {problems}.") from None
        value = dict(value)
        if not f.trusted:
            if part.fetch.allow_private_hosts:
                ignored.append(
                    f"web.fetch.allow_private_hosts {part.fetch.allow_private_hosts} in {f.path}"
                )
                value["fetch"] = {
                    k: v for k, v in value.get("fetch", {}).items() if k != "allow_private_hosts"
                }
            if "search" in value:
                ignored.append(f"web.search in {f.path}")
                value.pop("search")
        for host in part.fetch.allow_private_hosts if f.trusted else []:
            scopes.setdefault(host, f.scope)
        if "search" in value:
            search_scope = f.scope
        merged = merge_values(merged, value)
    return LoadedWebSettings(WebSettings.model_validate(merged), scopes, search_scope, ignored)


# -- address checks ---------------------------------------------------------------------
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def address_problem(ip: IPAddress) -> str | None:
    """Why an address is not a public one (None when it is)."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
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
    return None


def host_allowed(host: str, ip: IPAddress, allowed: list[str]) -> bool:
    host = host.lower().rstrip(".")
    for entry in allowed:
        entry = entry.strip().lower()
        if entry.startswith("[") and entry.endswith("]"):
            entry = entry[1:-1]
        if entry == host:
            return True
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


async def resolve_checked(host: str, port: int, allowed: list[str]) -> list[IPAddress]:
    """Resolve ``host`` and check every address; return them all (connect in this order)."""
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise ToolFailureError(f"Cannot resolve host {host!r}: {exc}.") from None
        addresses = []
        for info in infos:
            ip = ipaddress.ip_address(info[4][0].split("%", 1)[0])
            if ip not in addresses:
                addresses.append(ip)
        if not addresses:
            raise ToolFailureError(f"Host {host!r} has no addresses.")
    for ip in addresses:
        problem = address_problem(ip)
        if problem and not host_allowed(host, ip, allowed):
            raise DeniedError(
                f"Refused to fetch from {host} ({ip}): it is {problem}. fetch_url only reaches "
                "public hosts; to allow a local or internal host, add it to "
                '`web.fetch.allow_private_hosts` in settings (e.g. {"web": {"fetch": '
                f'{{"allow_private_hosts": ["{host}"]}}}}}}).'
            )
    return addresses


# -- fetch_url --------------------------------------------------------------------------
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


def html_to_markdown(html: str) -> str:
    import markdownify

    text: str = markdownify.markdownify(html, heading_style="ATX")
    lines = [line.rstrip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if not line and out and not out[-1]:
            continue
        out.append(line)
    return "\n".join(out).strip()


def _strip_invisible(html: str) -> str:
    """Remove elements whose text is not content (scripts, styles) before converting."""
    from html.parser import HTMLParser

    skip_tags = {"script", "style", "noscript", "template"}

    class _Filter(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=False)
            self.parts: list[str] = []
            self.depth = 0

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag in skip_tags:
                self.depth += 1
            elif not self.depth:
                self.parts.append(self.get_starttag_text() or "")

        def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if not self.depth:
                self.parts.append(self.get_starttag_text() or "")

        def handle_endtag(self, tag: str) -> None:
            if tag in skip_tags:
                self.depth = max(0, self.depth - 1)
            elif not self.depth:
                self.parts.append(f"</{tag}>")

        def handle_data(self, data: str) -> None:
            if not self.depth:
                self.parts.append(data)

        def handle_entityref(self, name: str) -> None:
            if not self.depth:
                self.parts.append(f"&{name};")

        def handle_charref(self, name: str) -> None:
            if not self.depth:
                self.parts.append(f"&#{name};")

    parser = _Filter()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


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
    url: httpx.URL, max_length: int, settings: FetchSettings, *, client: httpx.AsyncClient
) -> FetchedBody:
    redirects: list[str] = []
    current = url
    for _hop in range(settings.max_redirects + 1):
        # The ASCII (IDNA) form: what DNS, the Host header and TLS all use.
        host = current.raw_host.decode("ascii")
        port = current.port or (443 if current.scheme == "https" else 80)
        addresses = await resolve_checked(host, port, settings.allow_private_hosts)
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
        text = html_to_markdown(_strip_invisible(text))
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
    if media in ("text/html", "application/xhtml+xml") or (
        not body.media and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))
    ):
        text = html_to_markdown(_strip_invisible(text))
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
    if len(text) > max_length:
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
    # trust_env=False: a proxy from the environment would make the address check meaningless
    # (the proxy, not we, would resolve and connect).
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
        follow_redirects=False,
        trust_env=False,
    )


async def fetch_url(args: FetchUrlArgs, ctx: ToolExecCtx) -> str:
    url = parse_http_url(args.url)
    loaded = load_web_settings(ctx.project_path)
    settings = loaded.settings.fetch

    async def go() -> str:
        async with _client(settings.timeout_s) as client:
            try:
                with anyio.fail_after(settings.timeout_s * (settings.max_redirects + 1)):
                    body = await fetch_raw(url, args.max_length, settings, client=client)
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


# -- web_search -------------------------------------------------------------------------
class WebSearchArgs(_Strict):
    query: str = Field(min_length=1, description="What to search the web for.")
    max_results: int = Field(
        default=SEARCH_DEFAULT_RESULTS,
        ge=1,
        le=SEARCH_MAX_RESULTS,
        description=f"Number of results (default {SEARCH_DEFAULT_RESULTS}, at most {SEARCH_MAX_RESULTS}).",
    )


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str


class SearchProvider(Protocol):
    name: str

    async def search(
        self, client: httpx.AsyncClient, query: str, max_results: int
    ) -> list[SearchResult]: ...


def _results(items: Any, snippet_key: str) -> list[SearchResult]:
    out: list[SearchResult] = []
    if not isinstance(items, list):
        return out
    for item in items:
        if isinstance(item, dict) and item.get("url"):
            out.append(
                SearchResult(
                    str(item.get("title") or item["url"]),
                    str(item["url"]),
                    str(item.get(snippet_key) or "").strip(),
                )
            )
    return out


def _json_of(response: httpx.Response, provider: str) -> Any:
    if response.status_code >= 400:
        raise ToolFailureError(
            f"The {provider} search request failed with HTTP {response.status_code}: "
            f"{response.text[:300].strip()}"
        )
    try:
        return response.json()
    except ValueError:
        raise ToolFailureError(
            f"The {provider} search answer was not JSON (content type "
            f"{response.headers.get('content-type', 'none')})."
        ) from None


@dataclass
class SearxngProvider:
    """A self-hosted SearXNG instance: ``GET /search?q=...&format=json`` (json must be enabled)."""

    base_url: str
    name: str = "searxng"

    async def search(
        self, client: httpx.AsyncClient, query: str, max_results: int
    ) -> list[SearchResult]:
        response = await client.get(
            self.base_url.rstrip("/") + "/search", params={"q": query, "format": "json"}
        )
        if response.status_code == 403:
            raise ToolFailureError(
                "SearXNG refused the JSON format (HTTP 403); enable it in the instance's "
                "settings.yml under `search.formats: [html, json]`."
            )
        data = _json_of(response, "SearXNG")
        return _results(data.get("results") if isinstance(data, dict) else None, "content")[
            :max_results
        ]


@dataclass
class BraveProvider:
    """Brave Search API: ``GET /res/v1/web/search`` with ``X-Subscription-Token``."""

    api_key: str
    base_url: str = "https://api.search.brave.com"
    name: str = "brave"

    async def search(
        self, client: httpx.AsyncClient, query: str, max_results: int
    ) -> list[SearchResult]:
        response = await client.get(
            self.base_url.rstrip("/") + "/res/v1/web/search",
            params={"q": query, "count": max_results},
            headers={"X-Subscription-Token": self.api_key, "Accept": "application/json"},
        )
        data = _json_of(response, "Brave")
        web = data.get("web") if isinstance(data, dict) else None
        items = web.get("results") if isinstance(web, dict) else None
        return _results(items, "description")[:max_results]


@dataclass
class TavilyProvider:
    """Tavily: ``POST /search`` with a bearer key."""

    api_key: str
    base_url: str = "https://api.tavily.com"
    name: str = "tavily"

    async def search(
        self, client: httpx.AsyncClient, query: str, max_results: int
    ) -> list[SearchResult]:
        response = await client.post(
            self.base_url.rstrip("/") + "/search",
            json={"query": query, "max_results": max_results},
            headers={"Authorization": f"Bearer {self.api_key}"},
        )
        data = _json_of(response, "Tavily")
        return _results(data.get("results") if isinstance(data, dict) else None, "content")[
            :max_results
        ]


_HOW_TO_CONFIGURE = (
    "Configure one in settings (.codingcode/settings.json or your user settings), e.g. "
    '{"web": {"search": {"provider": "searxng", "url": "http://localhost:8888"}}} for a '
    'self-hosted SearXNG, or {"web": {"search": {"provider": "brave"}}} with BRAVE_API_KEY '
    'set, or {"web": {"search": {"provider": "tavily"}}} with TAVILY_API_KEY set.'
)

_DEFAULT_KEY_ENV = {"brave": "BRAVE_API_KEY", "tavily": "TAVILY_API_KEY"}


def make_provider(settings: SearchSettings) -> SearchProvider:
    if settings.provider is None:
        raise ToolFailureError("No web search provider is configured. " + _HOW_TO_CONFIGURE)
    if settings.provider == "searxng":
        if not settings.url:
            raise ToolFailureError(
                "web.search.provider is searxng but web.search.url is not set; set it to the "
                'instance\'s base URL, e.g. {"web": {"search": {"provider": "searxng", '
                '"url": "http://localhost:8888"}}}.'
            )
        return SearxngProvider(settings.url)
    env = settings.api_key_env or _DEFAULT_KEY_ENV[settings.provider]
    key = os.environ.get(env, "").strip()
    if not key:
        raise ToolFailureError(
            f"web.search.provider is {settings.provider} but the environment variable {env} "
            "(its API key) is not set."
        )
    if settings.provider == "brave":
        return BraveProvider(key, settings.url or BraveProvider.base_url)
    return TavilyProvider(key, settings.url or TavilyProvider.base_url)


def render_results(query: str, provider: str, results: list[SearchResult]) -> str:
    if not results:
        return f"No results for {query!r} ({provider})."
    lines = [f"{len(results)} result(s) for {query!r} ({provider}):"]
    for i, r in enumerate(results, 1):
        lines.append(f"\n{i}. {r.title}\n   {r.url}")
        if r.snippet:
            lines.append(f"   {r.snippet[:500]}")
    return "\n".join(lines)


async def web_search(args: WebSearchArgs, ctx: ToolExecCtx) -> str:
    loaded = load_web_settings(ctx.project_path)
    settings = loaded.settings.search
    try:
        provider = make_provider(settings)
    except ToolFailureError as exc:
        raise ToolFailureError(exc.message + loaded.ignored_note()) from None

    async def go() -> str:
        async with httpx.AsyncClient(timeout=settings.timeout_s, trust_env=True) as client:
            try:
                results = await provider.search(client, args.query, args.max_results)
            except httpx.TimeoutException:
                raise ToolTimeoutError(
                    f"The {provider.name} search timed out after {settings.timeout_s:g}s."
                ) from None
            except httpx.HTTPError as exc:
                raise ToolFailureError(
                    f"The {provider.name} search failed: {type(exc).__name__}: {exc}."
                ) from None
        return render_results(args.query, provider.name, results)

    return await run_cancellable(go, ctx, "web_search")


def web_tools() -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name="fetch_url",
            description=(
                "HTTP GET a public URL and return its content as text: HTML converted to "
                "Markdown, JSON pretty-printed, other text as is. Binary content is refused. "
                f"At most `max_length` characters (default {FETCH_DEFAULT_LENGTH}, max "
                f"{FETCH_MAX_LENGTH}) are returned and a cut is said. Redirects are followed "
                "(each checked); local and private addresses are refused unless allowed in settings."
            ),
            short_description="Fetch a URL as text or Markdown",
            parameters=FetchUrlArgs,
            execute=fetch_url,
            annotations=ToolAnnotations(read_only=True, idempotent=True, open_world=True),
            arg_roles={"url": "url"},
            effects=frozenset({"network"}),
            origin=BUILTIN,
        ),
        ToolDefinition(
            name="web_search",
            description=(
                "Search the web with the configured provider (SearXNG, Brave or Tavily). Returns "
                f"title, URL and snippet of up to `max_results` results (default "
                f"{SEARCH_DEFAULT_RESULTS}, max {SEARCH_MAX_RESULTS})."
            ),
            short_description="Search the web",
            parameters=WebSearchArgs,
            execute=web_search,
            annotations=ToolAnnotations(read_only=True, open_world=True),
            arg_roles={"query": "text"},
            effects=frozenset({"network"}),
            origin=BUILTIN,
        ),
    ]
