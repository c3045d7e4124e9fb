"""tool_search: the index over deferred tools (SPEC T10, L2).

Deferred tools are registered but not offered to the model; it finds them with
``tool_search``. The index is SQLite FTS5 (in the standard library) ranked by BM25 over four
columns, weighted so a hit in the name counts most: name, short description, description and
the parameter names. Names are also indexed split into words (``github:create_issue`` and
``createIssue`` both yield "create issue"), and the Porter stemmer lets "commits" find
"commit". The query is the model's keywords, each matched as a prefix, OR-ed together so a
tool matching more of them ranks higher. ``select:a,b`` picks tools by exact name instead.

The index knows nothing about sessions: :mod:`codingcode.tools.resolver` owns which tools a
session may see and marks what a search found as loaded.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from codingcode.errors import InvalidArgumentsError
from codingcode.tools.definition import BUILTIN, ToolAnnotations, ToolDefinition, ToolExecCtx

TOOL_SEARCH_NAME = "tool_search"
#: Hits returned for a keyword query: enough to choose from, few enough to keep the
#: schemas (which come with every hit) cheap.
MAX_SEARCH_HITS = 5
#: How many tools one ``select:`` may load at once.
MAX_SELECT = 20
SELECT_PREFIX = "select:"

#: BM25 column weights: name, short description, description, parameter names.
_WEIGHTS = (10.0, 4.0, 1.0, 2.0)
_WORD = re.compile(r"[0-9A-Za-z]+|[^\W_]+", re.UNICODE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _name_words(name: str) -> str:
    """The name as written plus its words: ``gh:createIssue`` -> ``gh:createIssue gh create issue``."""
    return f"{name} {_CAMEL.sub(' ', name)}"


def _parameter_names(definition: ToolDefinition) -> str:
    try:
        props = definition.input_schema().get("properties") or {}
    except Exception:  # a broken schema must not break the whole index
        return ""
    names = [str(k) for k in props] if isinstance(props, dict) else []
    return " ".join(_CAMEL.sub(" ", n) for n in names)


#: Words a model puts in a query that say nothing about a tool ("a tool to send a message").
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "any",
        "are",
        "by",
        "can",
        "find",
        "for",
        "from",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "some",
        "that",
        "the",
        "this",
        "to",
        "tool",
        "tools",
        "use",
        "with",
    ]
)


def fts_query(text: str) -> str:
    """Turn free keywords into an FTS5 query: every word a quoted prefix term, OR-ed."""
    words = [w.lower() for w in _WORD.findall(_CAMEL.sub(" ", text))]
    words = [w for w in words if w not in STOP_WORDS] or words
    unique = list(dict.fromkeys(words))[:16]
    return " OR ".join(f'"{w}"*' for w in unique)


@dataclass(frozen=True)
class SearchHit:
    name: str
    score: float


class ToolSearchIndex:
    """An in-memory FTS5 index over a set of tool definitions, rebuilt when the set changes."""

    def __init__(self, definitions: Iterable[ToolDefinition] = ()) -> None:
        # check_same_thread=False: the index is used from one event loop, but a caller may
        # build it in a worker thread; every use is synchronous and short.
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE tools USING fts5("
            "name, short_description, description, parameters, "
            "tokenize = 'porter unicode61')"
        )
        self._names: list[str] = []
        self.replace(definitions)

    def replace(self, definitions: Iterable[ToolDefinition]) -> None:
        rows = []
        self._names = []
        for i, d in enumerate(definitions):
            self._names.append(d.name)
            rows.append(
                (i, _name_words(d.name), d.short_description, d.description, _parameter_names(d))
            )
        with self._db:
            self._db.execute("DELETE FROM tools")
            self._db.executemany(
                "INSERT INTO tools(rowid, name, short_description, description, parameters) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )

    def __len__(self) -> int:
        return len(self._names)

    def search(self, query: str, limit: int = MAX_SEARCH_HITS) -> list[SearchHit]:
        """The best ``limit`` tools for the keywords, best first (empty if none matches).

        Two passes, because ranking costs time per matching row: first only the rows whose
        name, short description or parameter names match (ranked by BM25 over every column),
        then, if those are fewer than ``limit``, the rows that match in the long description
        alone. A keyword in a tool's name or summary is the stronger signal anyway; this keeps
        a query over 10,000 tools within a few milliseconds (``bench/bench_tool_search.py``).
        """
        match = fts_query(query)
        if not match:
            return []
        hits = self._ranked(f"{{name short_description parameters}} : ({match})", limit)
        if len(hits) < limit:
            seen = {h.name for h in hits}
            more = self._ranked(match, limit + len(hits))
            hits += [h for h in more if h.name not in seen][: limit - len(hits)]
        return hits

    def _ranked(self, match: str, limit: int) -> list[SearchHit]:
        weights = ", ".join(str(w) for w in _WEIGHTS)
        cursor = self._db.execute(
            f"SELECT rowid, bm25(tools, {weights}) AS score FROM tools "
            "WHERE tools MATCH ? ORDER BY score LIMIT ?",
            (match, limit),
        )
        # bm25() is negative, lower is better; report a positive "higher is better" score.
        return [SearchHit(self._names[rowid], -score) for rowid, score in cursor]


class ToolSearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(
        min_length=1,
        description=(
            "Keywords describing the capability you need (e.g. 'create github issue'), or "
            "'select:NAME1,NAME2' to load tools by exact name."
        ),
    )


def parse_select(query: str) -> list[str] | None:
    """The names of a ``select:a,b`` query, or None for a keyword query."""
    stripped = query.strip()
    if not stripped.lower().startswith(SELECT_PREFIX):
        return None
    names = [n.strip() for n in stripped[len(SELECT_PREFIX) :].split(",")]
    names = [n for n in names if n]
    if not names:
        raise InvalidArgumentsError(
            "tool_search: 'select:' needs at least one tool name, e.g. 'select:github:create_issue'."
        )
    if len(names) > MAX_SELECT:
        raise InvalidArgumentsError(
            f"tool_search: at most {MAX_SELECT} names per 'select:', got {len(names)}."
        )
    return list(dict.fromkeys(names))


def describe_hits(definitions: Sequence[ToolDefinition]) -> str:
    """Each loaded tool's name, short description and JSON Schema, for the model."""
    lines = [
        f"Loaded {len(definitions)} tool{'s' if len(definitions) != 1 else ''}; "
        "they are callable from now on in this session:"
    ]
    for d in definitions:
        lines.append(f"- {d.name}: {d.short_description}")
        lines.append(f"  parameters: {json.dumps(d.input_schema(), separators=(',', ':'))}")
    return "\n".join(lines)


#: ``execute`` of the session's tool_search: the query in, the text for the model out.
SearchFn = Callable[[str, ToolExecCtx], str]


def make_tool_search_tool(search: SearchFn, *, deferred_summary: str = "") -> ToolDefinition:
    """The ``tool_search`` definition bound to one session's search function."""

    async def execute(args: ToolSearchArgs, ctx: ToolExecCtx) -> str:
        return search(args.query, ctx)

    summary = f" {deferred_summary}" if deferred_summary else ""
    return ToolDefinition(
        name=TOOL_SEARCH_NAME,
        description=(
            "Find and load tools that are available but not yet offered (deferred tools, such "
            "as most MCP server tools). Give keywords for the capability you need; the best "
            f"matches (at most {MAX_SEARCH_HITS}) are returned with their parameters and become "
            "callable for the rest of the session. Use 'select:NAME1,NAME2' to load tools "
            f"whose exact names you know.{summary}"
        ),
        short_description="Find and load deferred tools by keyword or select:NAME",
        parameters=ToolSearchArgs,
        execute=execute,
        annotations=ToolAnnotations(read_only=True, idempotent=True),
        arg_roles={"query": "text"},
        effects=frozenset(),
        origin=BUILTIN,
    )
