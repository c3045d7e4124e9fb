"""Hook input in Claude Code's names (``file_path``) and ``continue: false`` on the bus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codingcode.approval.pipeline import ToolCall
from codingcode.hooks.bus import HookAnswer, HookBus
from codingcode.hooks.lifecycle import HookEvent, LifecycleHooks, post_tool_use
from codingcode.hooks.pre_tool_use import (
    PreToolUseHooks,
    from_hook_input,
    hook_input,
    hook_tool_input,
    parse_hook_output,
)

ROOT = Path("/work/proj")


def call(tool: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(tool, args, ROOT, session_id="s1")


def test_file_tools_get_an_absolute_file_path_and_keep_path() -> None:
    got = hook_tool_input(call("read_file", {"path": "src/../a.py", "offset": 3}))
    assert got == {"path": "src/../a.py", "offset": 3, "file_path": "/work/proj/a.py"}
    assert (
        hook_tool_input(call("write_file", {"path": "/etc/x", "content": "y"}))["file_path"]
        == "/etc/x"
    )
    assert hook_tool_input(
        call("edit_file", {"path": "~/n", "old_string": "a", "new_string": "b"})
    )["file_path"] == str(Path.home() / "n")
    # Tools whose Claude Code twins take `path` (Glob, Grep) or no path are unchanged.
    for tool, args in [
        ("search_files", {"pattern": "*.py", "path": "src"}),
        ("execute_command", {"command": "ls"}),
        ("github:get_file", {"path": "a.py"}),
    ]:
        assert hook_tool_input(call(tool, args)) == args
    assert hook_input(call("read_file", {"path": "a"}))["tool_input"]["file_path"] == "/work/proj/a"


@given(st.text(min_size=1, max_size=40).filter(lambda p: "\x00" not in p))
def test_an_unchanged_file_path_maps_back_to_the_same_arguments(path: str) -> None:
    c = call("write_file", {"path": path, "content": "x"})
    assert from_hook_input(c, hook_tool_input(c)) == c.args


def test_a_changed_file_path_is_the_new_path() -> None:
    c = call("write_file", {"path": "a.txt", "content": "x"})
    changed = {**hook_tool_input(c), "file_path": "/work/proj/b.txt"}
    assert from_hook_input(c, changed) == {"path": "/work/proj/b.txt", "content": "x"}
    assert from_hook_input(c, {"path": "c.txt", "content": "x"}) == {
        "path": "c.txt",
        "content": "x",
    }


def test_continue_false_in_a_pre_tool_use_answer() -> None:
    answer = parse_hook_output('{"continue": false, "stopReason": "freeze"}', "h")
    assert answer.stop_reason == "freeze" and answer.decision == "continue"
    assert parse_hook_output('{"continue": false}', "h").stop_reason == (
        "the hook `h` answered continue: false"
    )
    assert parse_hook_output('{"continue": true}', "h").stop_reason is None


@pytest.mark.anyio
async def test_a_python_pre_tool_use_stop_denies_and_is_kept_for_the_session() -> None:
    bus = HookBus()

    async def allow(c: ToolCall) -> HookAnswer:
        return HookAnswer("allow")

    async def stop(c: ToolCall) -> HookAnswer:
        return HookAnswer(stop_reason="enough")

    bus.add_pre_tool_use(allow)
    bus.add_pre_tool_use(stop)
    result = await PreToolUseHooks([], bus)(call("execute_command", {"command": "ls"}))
    assert result.action == "deny" and "stopped the agent: enough" in result.reason
    assert bus.take_stop("s1") == "A PreToolUse hook stopped the agent: enough"
    assert bus.take_stop("s1") is None  # taken once
    assert bus.take_stop("other") is None


@pytest.mark.anyio
async def test_post_tool_use_stop_keeps_the_result_and_asks_the_session_to_stop() -> None:
    bus = HookBus()

    async def lint(event: HookEvent) -> dict[str, Any]:
        assert event.payload["tool_input"]["file_path"] == "/work/proj/a.py"
        return {"continue": False, "stopReason": "lint failed"}

    bus.add_hook("PostToolUse", lint)
    hooks = LifecycleHooks([], bus, ROOT, notify=lambda line: None)
    out = await post_tool_use(hooks, call("read_file", {"path": "a.py"}), "RESULT")
    assert out == "RESULT"
    assert bus.take_stop("s1") == "A PostToolUse hook stopped the agent: lint failed"


@pytest.mark.anyio
async def test_stop_and_session_end_do_not_leave_a_stop_behind() -> None:
    bus = HookBus()

    async def stop(event: HookEvent) -> dict[str, Any]:
        return {"continue": False}

    bus.add_hook("Stop", stop)
    bus.add_hook("SessionEnd", stop)
    hooks = LifecycleHooks([], bus, ROOT, notify=lambda line: None)
    await hooks.fire("Stop", {"stop_hook_active": False}, session_id="s1")
    await hooks.fire("SessionEnd", {"reason": "other"}, session_id="s1")
    assert bus.stops == {}
