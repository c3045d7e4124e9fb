"""web_search (SPEC T8): a self-hosted SearXNG (its JSON API), Brave Search or Tavily (keyed
APIs, the key read from an environment variable)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import Field

from codingcode.errors import ToolFailureError, ToolTimeoutError
from codingcode.tools.builtin.web.fetch import run_cancellable
from codingcode.tools.builtin.web.settings import SearchSettings, _Strict, load_web_settings
from codingcode.tools.definition import ToolExecCtx

if TYPE_CHECKING:
    import httpx

SEARCH_DEFAULT_RESULTS = 8
SEARCH_MAX_RESULTS = 20


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
    loaded = load_web_settings(ctx.session_workspace())
    settings = loaded.settings.search
    try:
        provider = make_provider(settings)
    except ToolFailureError as exc:
        raise ToolFailureError(exc.message + loaded.ignored_note()) from None
    import httpx  # on first use: a command that searches nothing does not pay for it

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
