from __future__ import annotations

import pytest
from pydantic import BaseModel

from codingcode.errors import NotFoundError
from codingcode.runner import ToolRunner
from codingcode.tools import ToolDefinition, ToolExecCtx, ToolService
from codingcode.tools.resolver import (
    AgentProfile,
    ToolVisibilityPolicy,
    create_session_tool_resolver,
    mcp_server_of,
)
from codingcode.workspace import Workspace


class _Args(BaseModel):
    pass


def _tool(name: str, description: str = "does things", *, deferred: bool = False) -> ToolDefinition:
    async def run(args: BaseModel, ctx: ToolExecCtx) -> str:
        return f"ran {name}"

    return ToolDefinition(
        name=name, description=description, parameters=_Args, execute=run, deferred=deferred
    )


def _service() -> ToolService:
    return ToolService(
        [
            _tool("read_file", "Read a file"),
            _tool("execute_command", "Run a command"),
            _tool("github:create_issue", "Open an issue", deferred=True),
            _tool("github:list_commits", "List commits", deferred=True),
            _tool("slack:post_message", "Post a message", deferred=True),
            _tool("time:now", "Current time"),  # an MCP tool that is not deferred
        ]
    )


def test_mcp_server_of() -> None:
    assert mcp_server_of("github:create_issue") == "github"
    assert mcp_server_of("read_file") is None
    assert mcp_server_of(":x") is None


def test_default_offers_core_and_tool_search_hides_deferred() -> None:
    r = create_session_tool_resolver(_service())
    assert r.names() == ["read_file", "execute_command", "time:now", "tool_search"]
    assert r.is_callable("read_file")
    assert not r.is_callable("github:create_issue")
    with pytest.raises(NotFoundError, match="select:github:create_issue"):
        r.ensure_callable("github:create_issue")


def test_search_loads_for_the_rest_of_the_session() -> None:
    r = create_session_tool_resolver(_service())
    out = r.tool_search.execute  # bound to the resolver
    assert out is not None
    text = r._search("create an issue", ToolExecCtx())
    assert "github:create_issue" in text and "parameters:" in text
    assert r.is_callable("github:create_issue")
    assert "github:create_issue" in r.names()
    # Found once, it stays: later searches do not unload it.
    r._search("message", ToolExecCtx())
    assert r.is_callable("github:create_issue") and r.is_callable("slack:post_message")


def test_select_loads_exact_names_and_reports_unknown() -> None:
    r = create_session_tool_resolver(_service())
    text = r._search("select:github:list_commits,nope:x", ToolExecCtx())
    assert "Loaded 1 tool" in text and "nope:x" in text
    assert r.loaded == {"github:list_commits"}


def test_tool_search_disappears_when_nothing_is_left() -> None:
    r = create_session_tool_resolver(_service())
    r.load(["github:create_issue", "github:list_commits", "slack:post_message"])
    assert "tool_search" not in r.names()


def test_profile_tools_names_and_globs() -> None:
    r = create_session_tool_resolver(
        _service(), profile=AgentProfile("reviewer", tools=("read_file", "github:*"))
    )
    assert r.names() == ["read_file", "tool_search"]
    assert {d.name for d in r.deferred()} == {"github:create_issue", "github:list_commits"}
    assert "slack" not in r._search("message post", ToolExecCtx())
    with pytest.raises(NotFoundError, match="not available in this session"):
        r.ensure_callable("execute_command")


def test_profile_with_no_tools() -> None:
    r = create_session_tool_resolver(_service(), profile=AgentProfile("none", tools=()))
    assert r.names() == []


def test_policy_allowed_tools() -> None:
    r = create_session_tool_resolver(
        _service(), policy=ToolVisibilityPolicy(allowed_tools=frozenset({"read_file", "slack:*"}))
    )
    assert r.names() == ["read_file", "tool_search"]
    assert [d.name for d in r.deferred()] == ["slack:post_message"]


def test_policy_allowed_mcp_servers_leaves_builtins_alone() -> None:
    r = create_session_tool_resolver(
        _service(), policy=ToolVisibilityPolicy(allowed_mcp_servers=frozenset({"github"}))
    )
    assert r.names() == ["read_file", "execute_command", "tool_search"]
    assert {d.name for d in r.deferred()} == {"github:create_issue", "github:list_commits"}
    assert not r.is_callable("time:now")


def test_policy_allow_deferred_tools_false() -> None:
    r = create_session_tool_resolver(
        _service(), policy=ToolVisibilityPolicy(allow_deferred_tools=False)
    )
    assert r.names() == ["read_file", "execute_command", "time:now"]
    assert r.deferred() == []
    assert r.load(["github:create_issue"]) == ([], ["github:create_issue"])
    with pytest.raises(NotFoundError, match="not available"):
        r.ensure_callable("github:create_issue")
    assert not r.is_callable("tool_search")


def test_policy_allow_tool_search_false_offers_deferred_up_front() -> None:
    r = create_session_tool_resolver(
        _service(), policy=ToolVisibilityPolicy(allow_tool_search=False)
    )
    assert "tool_search" not in r.names()
    assert "github:create_issue" in r.names() and r.is_callable("slack:post_message")
    with pytest.raises(NotFoundError):
        r._search("issue", ToolExecCtx())


def test_dispatch_agent_is_merged_and_filtered() -> None:
    service = _service()
    r = create_session_tool_resolver(service, dispatch_agent=_tool("dispatch_agent", "Delegate"))
    assert "dispatch_agent" in r.names() and "dispatch_agent" in service
    r2 = create_session_tool_resolver(
        _service(),
        profile=AgentProfile("sub", tools=("read_file",)),
        dispatch_agent=_tool("dispatch_agent"),
    )
    assert "dispatch_agent" not in r2.names()


def test_follows_service_changes() -> None:
    service = _service()
    r = create_session_tool_resolver(service)
    r.load(["github:create_issue"])
    service.register(_tool("github:new_tool", "Brand new", deferred=True))
    assert "github:new_tool" in {d.name for d in r.deferred()}
    assert "github:new_tool" in r._search("brand", ToolExecCtx())
    service.unregister("github:create_issue")
    assert "github:create_issue" not in r.names()
    service.register(_tool("github:create_issue", "Back after a restart", deferred=True))
    assert r.is_callable("github:create_issue")  # still loaded for the session


@pytest.mark.anyio
async def test_tool_search_runs_through_the_runner(tmp_path) -> None:
    service = _service()
    r = create_session_tool_resolver(service)
    runner = ToolRunner(service, workspace=Workspace.load(tmp_path))
    text = await runner.run("tool_search", {"query": "commits"})
    assert "github:list_commits" in text
    assert r.is_callable("github:list_commits")
