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

Modules: ``fetch`` (the GET and rendering), ``convert`` (HTML to Markdown), ``ssrf`` (the
address guard), ``search`` (web_search and its providers), ``settings`` (the ``web`` section).
This package re-exports their public names, so ``codingcode.tools.builtin.web`` imports stay.
"""

from __future__ import annotations

from codingcode.tools.builtin.web.fetch import (
    FETCH_DEFAULT_LENGTH,
    FETCH_MAX_LENGTH,
    HTML_RAW_LIMIT,
    FetchedBody,
    FetchUrlArgs,
    fetch_raw,
    fetch_url,
    parse_http_url,
    render_body,
    run_cancellable,
)
from codingcode.tools.builtin.web.search import (
    SEARCH_DEFAULT_RESULTS,
    SEARCH_MAX_RESULTS,
    BraveProvider,
    SearchProvider,
    SearchResult,
    SearxngProvider,
    TavilyProvider,
    WebSearchArgs,
    make_provider,
    web_search,
)
from codingcode.tools.builtin.web.settings import (
    FetchSettings,
    LoadedWebSettings,
    SearchSettings,
    WebSettings,
    load_web_settings,
)
from codingcode.tools.builtin.web.ssrf import (
    METADATA_ADDRESSES,
    address_problem,
    host_allowed,
    resolve_checked,
)
from codingcode.tools.definition import BUILTIN, ToolAnnotations, ToolDefinition


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


__all__ = [
    "FETCH_DEFAULT_LENGTH",
    "FETCH_MAX_LENGTH",
    "HTML_RAW_LIMIT",
    "METADATA_ADDRESSES",
    "SEARCH_DEFAULT_RESULTS",
    "SEARCH_MAX_RESULTS",
    "BraveProvider",
    "FetchSettings",
    "FetchUrlArgs",
    "FetchedBody",
    "LoadedWebSettings",
    "SearchProvider",
    "SearchResult",
    "SearchSettings",
    "SearxngProvider",
    "TavilyProvider",
    "WebSearchArgs",
    "WebSettings",
    "address_problem",
    "fetch_raw",
    "fetch_url",
    "host_allowed",
    "load_web_settings",
    "make_provider",
    "parse_http_url",
    "render_body",
    "resolve_checked",
    "run_cancellable",
    "web_search",
    "web_tools",
]
