"""Hook leftovers of issue 17: Claude Code's tool names in matchers (``Read``,
``mcp__server__tool``), and PostToolUse for calls that failed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codingcode.errors import AgentError
from codingcode.hooks.bus import HookBus
from codingcode.hooks.lifecycle import HookEvent
from codingcode.hooks.settings import matcher_matches
from codingcode.runner import build_runner
from codingcode.workspace import Workspace


def test_claude_code_names_match_our_tools() -> None:
    assert matcher_matches("Read", "read_file")
    assert matcher_matches("Edit|MultiEdit|Write", "edit_file")
    assert matcher_matches("Edit|MultiEdit|Write", "write_file")
    assert matcher_matches("Bash", "execute_command")
    assert not matcher_matches("Bash", "read_file")
    assert matcher_matches("mcp__github__.*", "github:create_issue")
    assert matcher_matches("mcp__github__create_issue", "github:create_issue")
    assert matcher_matches("github:.*", "github:create_issue")  # ours still works
    assert not matcher_matches("mcp__gitlab__.*", "github:create_issue")
    # As in Claude Code: `mcp__memory` alone is an exact name and matches no tool.
    assert not matcher_matches("mcp__memory", "memory:create_entities")
    # The aliases are for tools: a session source is matched as it is.
    assert matcher_matches("startup", "startup") and not matcher_matches("Read", "startup")


_PART = st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True)


@given(_PART, _PART, _PART)
def test_mcp_matchers_match_exactly_their_server(server: str, tool: str, other: str) -> None:
    name = f"{server}:{tool}"
    assert matcher_matches(f"mcp__{re.escape(server)}__.*", name)
    assert matcher_matches(f"mcp__{server}__{tool}", name)
    if other != server:
        assert not matcher_matches(f"mcp__{re.escape(other)}__.*", name)


@pytest.mark.anyio
async def test_post_tool_use_sees_a_failed_call(project: Path) -> None:
    bus = HookBus()
    seen: list[dict[str, Any]] = []

    async def formatter(event: HookEvent) -> dict[str, Any]:
        seen.append(event.payload)
        return {"hookSpecificOutput": {"additionalContext": "hint: list the directory first"}}

    bus.add_hook("PostToolUse", formatter, matcher="Read")  # Claude Code's name
    runner = build_runner(Workspace.load(project), hooks=bus, mode="bypass")
    with pytest.raises(AgentError) as failed:
        await runner.run("read_file", {"path": "missing.txt"}, runner.context())
    assert "missing.txt" in failed.value.message
    assert "hint: list the directory first" in failed.value.message
    assert len(seen) == 1
    assert seen[0]["is_error"] is True and "missing.txt" in seen[0]["tool_response"]
    (project / "there.txt").write_text("here\n")
    out = await runner.run("read_file", {"path": "there.txt"}, runner.context())
    assert "here" in out and "hint: list the directory first" in out
    assert seen[1]["is_error"] is False
    # A denied call never ran: no PostToolUse.
    runner = build_runner(Workspace.load(project), hooks=bus)  # default mode, headless
    with pytest.raises(AgentError, match="denied"):
        await runner.run("write_file", {"path": "x", "content": "y"}, runner.context())
    assert len(seen) == 2


@pytest.mark.anyio
async def test_suppress_output_keeps_a_hooks_words_from_the_user(project: Path) -> None:
    from codingcode.hooks.lifecycle import LifecycleHooks

    shown: list[str] = []
    bus = HookBus()
    answer: dict[str, Any] = {}

    async def ender(event: HookEvent) -> dict[str, Any]:
        return answer

    bus.add_hook("SessionEnd", ender)
    hooks = LifecycleHooks([], bus, project, notify=shown.append)
    answer.update(decision="block", reason="cannot stop an ending")
    await hooks.fire("SessionEnd", {"reason": "other"})
    assert shown == ["SessionEnd hook: cannot stop an ending"]
    answer.update(suppressOutput=True)
    await hooks.fire("SessionEnd", {"reason": "other"})
    assert len(shown) == 1  # suppressed
    answer.update(systemMessage="saved the transcript")
    await hooks.fire("SessionEnd", {"reason": "other"})
    assert shown[1:] == ["saved the transcript"]  # a message for the user still shows
