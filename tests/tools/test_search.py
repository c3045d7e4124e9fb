from __future__ import annotations

import pytest
from pydantic import BaseModel

from codingcode.errors import InvalidArgumentsError
from codingcode.tools import ToolDefinition, ToolExecCtx
from codingcode.tools.search import (
    MAX_SEARCH_HITS,
    ToolSearchIndex,
    fts_query,
    make_tool_search_tool,
    parse_select,
)


class _Args(BaseModel):
    pass


def _tool(
    name: str, description: str, *, short: str = "", params: dict | None = None
) -> ToolDefinition:
    async def run(args: BaseModel, ctx: ToolExecCtx) -> str:
        return name

    schema = {"type": "object", "properties": params or {}}
    return ToolDefinition(
        name=name,
        description=description,
        short_description=short,
        parameters=_Args,
        execute=run,
        deferred=True,
        json_schema=schema,
    )


TOOLS = [
    _tool(
        "github:create_issue", "Open a new issue in a repository.", params={"repo": {}, "title": {}}
    ),
    _tool("github:list_commits", "List the commits of a branch.", params={"branch": {}}),
    _tool("slack:post_message", "Send a message to a channel.", params={"channel": {}, "text": {}}),
    _tool("time:get_current_time", "Current time in a timezone.", params={"timezone": {}}),
    _tool("weather:forecast", "Forecast for a city; mentions github once in prose."),
]


def test_name_hit_outranks_description_hit() -> None:
    index = ToolSearchIndex(TOOLS)
    names = [h.name for h in index.search("github")]
    assert names[:2] == ["github:create_issue", "github:list_commits"] or names[:2] == [
        "github:list_commits",
        "github:create_issue",
    ]
    assert names[-1] == "weather:forecast"


def test_more_matching_words_rank_higher() -> None:
    index = ToolSearchIndex(TOOLS)
    assert index.search("create issue")[0].name == "github:create_issue"


def test_stemming_and_prefixes() -> None:
    index = ToolSearchIndex(TOOLS)
    assert index.search("commit")[0].name == "github:list_commits"  # stem
    assert index.search("timez")[0].name == "time:get_current_time"  # prefix of a parameter


def test_parameter_names_are_indexed() -> None:
    index = ToolSearchIndex(TOOLS)
    assert [h.name for h in index.search("channel")] == ["slack:post_message"]


def test_camel_case_names_split() -> None:
    index = ToolSearchIndex([_tool("fs:readMediaFile", "x")])
    assert [h.name for h in index.search("media")] == ["fs:readMediaFile"]


def test_no_match_and_punctuation_only() -> None:
    index = ToolSearchIndex(TOOLS)
    assert index.search("kubernetes") == []
    assert index.search("!!! ---") == []
    assert fts_query('ab" NEAR cd*') == '"ab"* OR "near"* OR "cd"*'  # quotes cannot break out
    assert fts_query("a tool to send the message") == '"send"* OR "message"*'  # stop words
    assert fts_query("the") == '"the"*'  # ...unless nothing else is left


def test_limit_and_replace() -> None:
    many = [_tool(f"srv:t{i}", "common word") for i in range(20)]
    index = ToolSearchIndex(many)
    assert len(index.search("common")) == MAX_SEARCH_HITS
    index.replace(TOOLS)
    assert index.search("common") == []
    assert len(index) == len(TOOLS)


def test_parse_select() -> None:
    assert parse_select("create issue") is None
    assert parse_select(" select:a:b, c ,a:b") == ["a:b", "c"]
    with pytest.raises(InvalidArgumentsError, match="at least one tool name"):
        parse_select("select: , ")


async def _call(definition: ToolDefinition, query: str) -> str:
    model = definition.parameters.model_validate({"query": query})
    return await definition.execute(model, ToolExecCtx())


@pytest.mark.anyio
async def test_tool_definition_runs_bound_search() -> None:
    seen: list[str] = []
    definition = make_tool_search_tool(lambda q, ctx: seen.append(q) or "ok")
    assert definition.name == "tool_search"
    assert definition.annotations.read_only
    assert definition.input_schema()["properties"]["query"]["minLength"] == 1
    assert await _call(definition, "github") == "ok"
    assert seen == ["github"]
