"""The session resolver: which tools one session offers, may call and may find (SPEC L4, V).

:func:`create_session_tool_resolver` merges the service's tools (the built-ins, every MCP
tool registered there as ``server:tool``, custom tools), ``tool_search`` and an optional
``dispatch_agent``, then filters them by the :class:`AgentProfile` and the
:class:`ToolVisibilityPolicy`. The agent loop, the CLI and the MCP server all ask it for "the
tools of this session".

The exact effect of each filter (each has a test):

* ``AgentProfile.tools`` — ``None`` means every tool; otherwise only tools whose name equals
  an entry or matches it as a glob (``github:*``, ``read_*``) exist for the session.
* ``ToolVisibilityPolicy.allowed_tools`` — the same, as a second allow-list (both must pass).
* ``ToolVisibilityPolicy.allowed_mcp_servers`` — ``None`` means every server; otherwise an MCP
  tool ``server:tool`` exists only if ``server`` is listed. Other tools are unaffected.
* ``ToolVisibilityPolicy.allow_deferred_tools`` — ``False``: deferred tools do not exist for
  the session (not offered, not searchable, not callable), so ``tool_search`` is not offered.
* ``ToolVisibilityPolicy.allow_tool_search`` — ``False``: ``tool_search`` is not offered, and
  since nothing could load the deferred tools, the allowed ones are offered from the start.

``tool_search`` itself is governed only by ``allow_tool_search`` (and is offered only while
some allowed deferred tool is still unloaded): profiles and allow-lists name capabilities,
and a profile listing ``github:*`` needs the search to reach github's deferred tools.

What a search (or ``select:``) finds is loaded: offered and callable for the rest of the
session. The resolver follows the service as it changes (an MCP server's list_changed
re-registers its tools): every query compares a cheap snapshot of the registry first.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from codingcode.errors import NotFoundError
from codingcode.tools.definition import ToolDefinition, ToolExecCtx
from codingcode.tools.search import (
    MAX_SEARCH_HITS,
    TOOL_SEARCH_NAME,
    ToolSearchIndex,
    describe_hits,
    make_tool_search_tool,
    parse_select,
)
from codingcode.tools.service import ToolService

DISPATCH_AGENT_NAME = "dispatch_agent"


def mcp_server_of(name: str) -> str | None:
    """The server part of an MCP tool name ``server:tool``, or None for other tools."""
    server, sep, rest = name.partition(":")
    return server if sep and server and rest else None


def server_of(definition: ToolDefinition) -> str | None:
    """The MCP server a tool comes from: its origin says so (a field, not a character in
    its name); a built-in has none; a tool registered by hand under a ``server:tool`` name
    (no origin given) is taken at its name's word."""
    origin = definition.origin
    if origin.kind == "mcp":
        return origin.server or mcp_server_of(definition.name)
    if origin.kind == "builtin":
        return None
    return mcp_server_of(definition.name)


def name_matches(name: str, patterns: Iterable[str]) -> bool:
    """Whether ``name`` equals a pattern or matches it as a case-sensitive glob."""
    return any(name == p or fnmatch.fnmatchcase(name, p) for p in patterns)


@dataclass(frozen=True)
class AgentProfile:
    """A kind of agent: its name and the tools it may use (names and globs; None = all)."""

    name: str = "default"
    tools: tuple[str, ...] | None = None
    description: str = ""
    model: str | None = None

    def __post_init__(self) -> None:
        # A list from YAML front matter is accepted and frozen.
        tools: Any = self.tools
        if tools is not None and not isinstance(tools, tuple):
            object.__setattr__(self, "tools", tuple(tools))

    def allows(self, tool_name: str) -> bool:
        return self.tools is None or name_matches(tool_name, self.tools)


@dataclass(frozen=True)
class ToolVisibilityPolicy:
    """What a session may see (SPEC V); ``None`` allow-lists mean "no restriction"."""

    allowed_tools: frozenset[str] | None = None
    allowed_mcp_servers: frozenset[str] | None = None
    allow_tool_search: bool = True
    allow_deferred_tools: bool = True

    def __post_init__(self) -> None:
        for attr in ("allowed_tools", "allowed_mcp_servers"):
            value = getattr(self, attr)
            if value is not None and not isinstance(value, frozenset):
                object.__setattr__(self, attr, frozenset(value))

    def allows(self, definition: ToolDefinition) -> bool:
        name = definition.name
        if self.allowed_tools is not None and not name_matches(name, self.allowed_tools):
            return False
        server = server_of(definition)
        if (
            server is not None
            and self.allowed_mcp_servers is not None
            and server not in self.allowed_mcp_servers
        ):
            return False
        return self.allow_deferred_tools or not definition.deferred


@dataclass
class SessionToolResolver:
    """The tools of one session: offered now, callable, and findable by ``tool_search``."""

    service: ToolService
    profile: AgentProfile = field(default_factory=AgentProfile)
    policy: ToolVisibilityPolicy = field(default_factory=ToolVisibilityPolicy)
    #: Deferred tools this session has loaded (by search or select).
    loaded: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.tool_search = make_tool_search_tool(self._search)
        self._snapshot: tuple[int, ...] | None = None
        self._pending: list[ToolDefinition] | None = None
        self._eligible: dict[str, ToolDefinition] = {}
        self._index = ToolSearchIndex()
        self._index_fresh = False
        self._pending_loaded = -1

    # -- the registry, filtered ------------------------------------------------------
    def _sync(self) -> None:
        """Re-filter (and re-index) when the service's set of definitions changed."""
        current = self.service.list()
        snapshot = tuple(map(id, current))  # C speed: ~0.2 ms for 10,000 tools
        if snapshot == self._snapshot:
            return
        self._snapshot = snapshot
        self._pending = None
        self._index_fresh = False
        self._eligible = {
            d.name: d
            for d in current
            if d.name != TOOL_SEARCH_NAME and self.profile.allows(d.name) and self.policy.allows(d)
        }
        # ``loaded`` keeps names that vanished: a server that restarts re-registers its
        # tools, and what the model loaded stays loaded for the session.

    def _searching(self) -> bool:
        return self.policy.allow_tool_search and self.policy.allow_deferred_tools

    def eligible(self) -> list[ToolDefinition]:
        """Every tool this session may use, loaded or not (tool_search excluded)."""
        self._sync()
        return list(self._eligible.values())

    def deferred(self) -> list[ToolDefinition]:
        """The allowed deferred tools that are not loaded yet (what tool_search can find)."""
        self._sync()
        if self._pending is None or self._pending_loaded != len(self.loaded):
            # ``loaded`` may grow from outside (the session state shares it).
            self._pending_loaded = len(self.loaded)
            self._pending = [
                d for d in self._eligible.values() if d.deferred and d.name not in self.loaded
            ]
        return list(self._pending)

    def _offered(self, definition: ToolDefinition) -> bool:
        return not definition.deferred or definition.name in self.loaded or not self._searching()

    def tools(self) -> list[ToolDefinition]:
        """The tools to offer the model now: core + loaded deferred (+ tool_search)."""
        self._sync()
        offered = [d for d in self._eligible.values() if self._offered(d)]
        if self._searching() and self.deferred():
            offered.append(self.tool_search)
        return offered

    def names(self) -> list[str]:
        return [d.name for d in self.tools()]

    def is_callable(self, name: str) -> bool:
        if name == TOOL_SEARCH_NAME:
            return self._searching()
        self._sync()
        definition = self._eligible.get(name)
        return definition is not None and self._offered(definition)

    def ensure_callable(self, name: str) -> ToolDefinition:
        """The definition to run for ``name``, or a NotFoundError saying how to get it."""
        if self.is_callable(name):
            return self.tool_search if name == TOOL_SEARCH_NAME else self._eligible[name]
        definition = self._eligible.get(name)
        if definition is not None:  # eligible but deferred and not loaded
            raise NotFoundError(
                f"{name} is a deferred tool that is not loaded yet; call {TOOL_SEARCH_NAME} "
                f"with query 'select:{name}' first, then call it."
            )
        if name in self.service:
            raise NotFoundError(
                f"Tool {name!r} is not available in this session (agent profile "
                f"{self.profile.name!r} and the visibility policy exclude it). Available "
                f"tools: {', '.join(self.names()) or '(none)'}."
            )
        why = self.service.why_missing(name)
        if why is not None:  # e.g. its MCP server failed to start or needs a login
            raise why
        raise NotFoundError(
            f"Unknown tool {name!r}. Available tools: {', '.join(self.names()) or '(none)'}."
        )

    def deferred_summary(self) -> str:
        """One line for a system prompt: how many tools tool_search can still load, and where."""
        pending = self.deferred()
        if not pending or not self._searching():
            return ""
        servers = sorted({s for d in pending if (s := server_of(d))})
        where = f" (MCP servers: {', '.join(servers)})" if servers else ""
        return (
            f"{len(pending)} more tools are available through {TOOL_SEARCH_NAME}{where}; "
            "search for a capability to load them."
        )

    # -- loading -------------------------------------------------------------------------
    def load(self, names: Collection[str]) -> tuple[list[ToolDefinition], list[str]]:
        """Load deferred tools by exact name: (definitions now callable, names not found)."""
        self._sync()
        found: list[ToolDefinition] = []
        missing: list[str] = []
        for name in names:
            definition = self._eligible.get(name)
            if definition is None:
                missing.append(name)
                continue
            if definition.deferred:
                self.loaded.add(name)
                self._pending = None
            found.append(definition)
        return found, missing

    def search(self, query: str, limit: int = MAX_SEARCH_HITS) -> list[ToolDefinition]:
        """The best unloaded deferred tools for the keywords (not loaded by this call)."""
        self._sync()
        if not self._index_fresh:
            # Every allowed deferred tool, loaded or not: a load needs no rebuild, the loaded
            # ones are skipped below. Rebuilt only when the registry changed.
            self._index.replace(d for d in self._eligible.values() if d.deferred)
            self._index_fresh = True
        hits = self._index.search(query, limit + len(self.loaded))
        found = [self._eligible[h.name] for h in hits if h.name not in self.loaded]
        return found[:limit]

    def _search(self, query: str, ctx: ToolExecCtx) -> str:
        """The body of the session's tool_search."""
        if not self._searching():
            raise NotFoundError(f"{TOOL_SEARCH_NAME} is not available in this session.")
        selected = parse_select(query)
        if selected is not None:
            found, missing = self.load(selected)
            parts = [describe_hits(found)] if found else []
            if missing:
                parts.append(
                    f"Not available in this session: {', '.join(missing)}. Search by keyword "
                    "to find the right names."
                )
            return "\n".join(parts)
        hits = self.search(query)
        if not hits:
            pending = self.deferred()
            if not pending:
                return "No deferred tools are left to load; every available tool is offered."
            sample = ", ".join(d.name for d in pending[:30])
            more = f" and {len(pending) - 30} more" if len(pending) > 30 else ""
            return (
                f"No deferred tool matches {query!r}. Try other keywords. Deferred tools: "
                f"{sample}{more}."
            )
        self.load([d.name for d in hits])
        return describe_hits(hits)


def create_session_tool_resolver(
    service: ToolService,
    *,
    profile: AgentProfile | None = None,
    policy: ToolVisibilityPolicy | None = None,
    dispatch_agent: ToolDefinition | None = None,
    extra_tools: Sequence[ToolDefinition] = (),
) -> SessionToolResolver:
    """The resolver for one session over ``service`` (which should be that session's own).

    ``dispatch_agent`` (built by ``codingcode.agent``) and ``extra_tools`` are registered in
    the service so :class:`~codingcode.runner.ToolRunner` can run them like any other tool;
    the session's ``tool_search`` is registered too, bound to this resolver.
    """
    for extra in [*([dispatch_agent] if dispatch_agent else []), *extra_tools]:
        service.register(extra, replace=True)
    resolver = SessionToolResolver(
        service, profile=profile or AgentProfile(), policy=policy or ToolVisibilityPolicy()
    )
    service.register(resolver.tool_search, replace=True)
    return resolver
