"""tool_search over 10,000 deferred tools: each query must answer in at most 5 ms.

Prints the median time of a query through the session resolver (what the model's call
costs, the registry snapshot check included) and of the raw FTS5 index, against a reference
measured in the same run: a plain Python substring scan over the same 10,000 descriptions.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

from pydantic import BaseModel

from codingcode.tools import ToolDefinition, ToolExecCtx, ToolService
from codingcode.tools.resolver import create_session_tool_resolver
from codingcode.tools.search import ToolSearchIndex

N_TOOLS = 10_000
TARGET_MS = 5.0
WORDS = [
    "issue",
    "commit",
    "branch",
    "repository",
    "file",
    "directory",
    "message",
    "channel",
    "user",
    "ticket",
    "deploy",
    "build",
    "test",
    "log",
    "metric",
    "alert",
    "calendar",
    "event",
    "email",
    "invoice",
    "payment",
    "customer",
    "order",
    "product",
    "image",
    "video",
    "audio",
    "database",
    "table",
    "query",
    "index",
    "cache",
    "queue",
    "topic",
    "schema",
]
VERBS = [
    "create",
    "list",
    "get",
    "update",
    "delete",
    "search",
    "send",
    "read",
    "write",
    "run",
    "sync",
]
QUERIES = [
    "create issue",
    "list commits branch",
    "send message channel",
    "database query",
    "payment invoice customer",
    "xyzzy nothing",
    "deploy",
    "read file directory",
]


class _Args(BaseModel):
    pass


async def _noop(args: BaseModel, ctx: ToolExecCtx) -> str:
    return ""


def vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    """A Zipf-distributed vocabulary of 3,000 words, as in real prose.

    Function words take the first ranks (the query drops them as stop words); the domain
    words sit at ranks 20-60, so each appears in roughly 5-15% of the descriptions, which
    is how often "file" or "issue" appears across a real registry.
    """
    function_words = [
        "the",
        "a",
        "an",
        "to",
        "of",
        "for",
        "in",
        "on",
        "and",
        "or",
        "with",
        "by",
        "from",
        "is",
        "it",
        "this",
        "that",
    ]
    filler = [f"{rng.choice('bcdfghklmnprstvz')}{rng.choice('aeiou')}{n}x" for n in range(3000)]
    words = function_words + filler[: 20 - len(function_words)]
    words += WORDS + filler[100:]
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    return words, weights


def make_tools(rng: random.Random) -> list[ToolDefinition]:
    words, weights = vocabulary(rng)
    tools = []
    for i in range(N_TOOLS):
        verb, noun = rng.choice(VERBS), rng.choice(WORDS)
        prose = " ".join(rng.choices(words, weights, k=25))
        params = {w: {"type": "string"} for w in rng.sample(WORDS, 3)}
        tools.append(
            ToolDefinition(
                name=f"server{i % 50}:{verb}_{noun}_{i}",
                description=f"{verb.title()} a {noun}. {prose}",
                short_description=f"{verb.title()} a {noun}",
                parameters=_Args,
                execute=_noop,
                deferred=True,
                json_schema={"type": "object", "properties": params},
            )
        )
    return tools


def median_ms(fn: Callable[[str], object], rounds: int = 30) -> float:
    times = []
    for _ in range(rounds):
        for q in QUERIES:
            t0 = time.perf_counter()
            fn(q)
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    rng = random.Random(7)
    tools = make_tools(rng)
    index = ToolSearchIndex(tools)
    resolver = create_session_tool_resolver(ToolService(tools))
    resolver.search("warm up")  # builds the session's index once
    texts = [f"{t.name} {t.description}".lower() for t in tools]

    def scan(q: str) -> list[int]:
        words = q.split()
        return [i for i, t in enumerate(texts) if any(w in t for w in words)][:5]

    raw = median_ms(lambda q: index.search(q))
    session = median_ms(lambda q: resolver.search(q))
    reference = median_ms(scan)
    print(f"tools: {N_TOOLS}, queries: {len(QUERIES)} x 30")
    print(f"reference (python substring scan): median {reference:.3f} ms")
    print(f"index.search (FTS5 BM25):          median {raw:.3f} ms  ratio {raw / reference:.3f}")
    print(
        f"resolver.search (session):         median {session:.3f} ms  ratio {session / reference:.3f}"
    )
    verdict = "OK" if session <= TARGET_MS else "TOO SLOW"
    print(f"target <= {TARGET_MS} ms per query: {verdict}")


if __name__ == "__main__":
    main()
