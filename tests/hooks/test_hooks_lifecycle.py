"""Lifecycle hooks (issue 17): matchers, the I/O contract, parallel and deduplicated runs,
the Python bus, and failures that never allow."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codingcode.approval.pipeline import ToolCall
from codingcode.config import Scope
from codingcode.errors import AgentError
from codingcode.hooks.bus import HookBus
from codingcode.hooks.lifecycle import HookEvent, LifecycleHooks, post_tool_use
from codingcode.hooks.settings import CommandHook, matcher_matches

pytestmark = pytest.mark.anyio


def hook(
    project: Path, event: str, script: str, matcher: str = "", timeout: float = 10
) -> CommandHook:
    path = project / f"hook{abs(hash(script))}.py"
    path.write_text(script)
    return CommandHook(
        f"{sys.executable} {path}", matcher, timeout, Scope.USER, "test", True, event
    )


def test_matchers_are_claude_code_regexes() -> None:
    assert matcher_matches("Edit|Write", "Write") and not matcher_matches("Edit|Write", "Read")
    assert matcher_matches("", "anything") and matcher_matches("*", "anything")
    assert matcher_matches("github:.*", "github:create_issue")
    assert not matcher_matches("github:.*", "gitlab:create_issue")
    assert matcher_matches("read_.*", "read_file") and not matcher_matches("read", "read_file")
    # the glob form earlier settings used still works, and a bad regex is no crash
    assert matcher_matches("mcp_*", "mcp_x") and not matcher_matches("(", "x")


@given(st.text(max_size=30), st.from_regex(r"[A-Za-z0-9_:.*+()\[\]-]{1,30}", fullmatch=True))
def test_matcher_never_raises_and_exact_names_match(pattern: str, name: str) -> None:
    matcher_matches(pattern, name)
    assert matcher_matches(re.escape(name), name)


async def test_payload_env_and_context(project: Path) -> None:
    h = hook(
        project,
        "SessionStart",
        "import json,os,sys\nd=json.load(sys.stdin)\n"
        "print(d['hook_event_name'], d['source'], d['session_id'], os.environ['CODINGCODE_PROJECT_DIR'],"
        " os.environ['CLAUDE_PROJECT_DIR'], d['cwd'])\n",
        matcher="startup|resume",
    )
    lc = LifecycleHooks([h], None, project)
    r = await lc.fire("SessionStart", {"source": "startup"}, session_id="s9")
    assert r.context == [f"SessionStart startup s9 {project} {project} {project}"]
    assert (await lc.fire("SessionStart", {"source": "clear"})).context == []  # matcher


async def test_hooks_run_in_parallel_and_deduplicated(project: Path) -> None:
    slow = 'import sys,time\nsys.stdin.read()\ntime.sleep(1.5)\nprint(\'{"hookSpecificOutput": {"additionalContext": "x"}}\')\n'
    a = hook(project, "Stop", slow)
    b = hook(project, "Stop", slow + "\n")
    lc = LifecycleHooks([a, b, a], None, project)
    start = time.monotonic()
    r = await lc.fire("Stop", {"stop_hook_active": False})
    assert r.context == ["x", "x"]  # a ran once, b once
    assert time.monotonic() - start < 2.9  # together, not one after the other


async def test_failures_are_reported_once_and_never_allow(project: Path) -> None:
    told: list[str] = []
    bad = hook(project, "PermissionRequest", "import sys\nsys.exit(3)\n")
    good = hook(
        project,
        "PermissionRequest",
        "import json,sys\nsys.stdin.read()\n"
        "print(json.dumps({'hookSpecificOutput': {'decision': {'behavior': 'allow'}}}))\n",
    )
    lc = LifecycleHooks([bad, good], None, project, notify=told.append)
    for _ in range(2):
        r = await lc.fire("PermissionRequest", {"tool_name": "write_file", "tool_input": {}})
        assert r.permission is None and r.failed
    assert len(told) == 1 and "exit code 3" in told[0]
    lc = LifecycleHooks([good], None, project)
    r = await lc.fire("PermissionRequest", {"tool_name": "write_file", "tool_input": {}})
    assert r.permission == "allow"


async def test_exit_2_blocks_where_the_event_can_block(project: Path) -> None:
    told: list[str] = []
    two = "import sys\nsys.stdin.read()\nsys.stderr.write('nope')\nsys.exit(2)\n"
    lc = LifecycleHooks(
        [hook(project, "UserPromptSubmit", two), hook(project, "SessionEnd", two)],
        None,
        project,
        notify=told.append,
    )
    r = await lc.fire("UserPromptSubmit", {"prompt": "p"})
    assert r.blocked and r.reason == "nope"
    r = await lc.fire("SessionEnd", {"reason": "other"})
    assert not r.blocked and told == ["SessionEnd hook: nope"]


async def test_post_tool_use_context_and_block(project: Path) -> None:
    call = ToolCall("read_file", {"path": "a"}, project, "s", 1, "default", call_id="c1")
    ctx = hook(
        project,
        "PostToolUse",
        "import json,sys\nd=json.load(sys.stdin)\n"
        "print(json.dumps({'hookSpecificOutput': {'additionalContext': 'saw ' + d['tool_response']}}))\n",
        matcher="read_file",
    )
    lc = LifecycleHooks([ctx], None, project)
    assert await post_tool_use(lc, call, "DATA") == "DATA\n\n[PostToolUse hook] saw DATA"
    other = ToolCall("write_file", {}, project)
    assert await post_tool_use(lc, other, "DATA") == "DATA"
    block = hook(
        project,
        "PostToolUse",
        'import sys\nsys.stdin.read()\nprint(\'{"decision": "block", "reason": "bad"}\')\n',
    )
    with pytest.raises(AgentError) as err:
        await post_tool_use(LifecycleHooks([block], None, project), call, "DATA")
    assert "bad" in err.value.message and "DATA" in err.value.message


async def test_python_bus_gets_every_event(project: Path) -> None:
    bus = HookBus()
    seen: list[HookEvent] = []
    heard: list[dict[str, Any]] = []

    async def on_stop(event: HookEvent) -> dict[str, Any] | None:
        seen.append(event)
        return {"decision": "block", "reason": "more"}

    async def broken(event: HookEvent) -> dict[str, Any] | None:
        raise RuntimeError("boom")

    bus.add_hook("Stop", on_stop)
    bus.add_hook("PermissionRequest", broken)
    bus.on("SessionEnd", heard.append)
    with pytest.raises(ValueError):
        bus.add_hook("NoSuchEvent", on_stop)
    lc = LifecycleHooks([], bus, project, notify=lambda _: None)
    r = await lc.fire("Stop", {"stop_hook_active": False}, session_id="s1")
    assert r.blocked and r.reason == "more"
    assert seen[0].name == "Stop" and seen[0].payload["session_id"] == "s1"
    r = await lc.fire("PermissionRequest", {"tool_name": "x"})
    assert r.permission is None and r.failed
    await lc.fire("SessionEnd", {"reason": "other"})
    assert heard and heard[0]["hook_event_name"] == "SessionEnd"


@pytest.mark.parametrize(
    "stdout",
    ["[1]", "{bad", '{"decision": "maybe"}', '{"hookSpecificOutput": 3}'],
)
async def test_nonsense_is_a_failure(project: Path, stdout: str) -> None:
    h = hook(project, "PermissionRequest", f"import sys\nsys.stdin.read()\nprint({stdout!r})\n")
    r = await LifecycleHooks([h], None, project, notify=lambda _: None).fire(
        "PermissionRequest", {"tool_name": "x"}
    )
    assert r.failed and r.permission is None


def test_hooks_list_shows_every_event_with_its_source(project: Path, tmp_path: Path) -> None:
    import os
    import subprocess

    settings = project / ".codingcode" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "PostToolUse": [
                        {
                            "matcher": "Edit|Write",
                            "hooks": [{"type": "command", "command": "fmt", "timeout": 30}],
                        }
                    ],
                    "Stop": [{"hooks": [{"type": "command", "command": "check"}]}],
                }
            }
        )
    )
    env = dict(
        os.environ,
        CODINGCODE_CONFIG_DIR=str(tmp_path / "cfg"),
        CODINGCODE_STATE_DIR=str(tmp_path / "st"),
    )
    out = subprocess.run(
        [sys.executable, "-m", "codingcode", "hooks", "list", "-p", str(project), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [(r["event"], r["matcher"], r["command"], r["runs"]) for r in rows] == [
        ("PostToolUse", "Edit|Write", "fmt", False),
        ("Stop", "*", "check", False),
    ]
    assert rows[0]["source"] == str(settings) and rows[0]["timeout"] == 30
    text = subprocess.run(
        [sys.executable, "-m", "codingcode", "hooks", "list", "-p", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert "PostToolUse [Edit|Write] fmt" in text.stdout and "not trusted" in text.stdout


def test_slash_hooks_shows_them(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from rich.console import Console

    from codingcode.tui.slash import SlashHandler

    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "cfg"))
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "settings.json").write_text(
        json.dumps(
            {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "ctx.sh"}]}]}}
        )
    )
    console = Console(record=True, width=200)
    handler = SlashHandler(console, SimpleNamespace(project=project))  # type: ignore[arg-type]
    handler.cmd_hooks("")
    out = console.export_text()
    assert "UserPromptSubmit [*] ctx.sh" in out and str(tmp_path / "cfg" / "settings.json") in out


def test_pre_tool_use_accepts_claude_code_answers() -> None:
    from codingcode.hooks.pre_tool_use import parse_hook_output

    assert parse_hook_output('{"decision": "block", "reason": "r"}', "x").decision == "deny"
    assert parse_hook_output('{"decision": "approve"}', "x").decision == "allow"
    specific = (
        '{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "why"}}'
    )
    answer = parse_hook_output(specific, "x")
    assert (answer.decision, answer.reason) == ("deny", "why")
    assert parse_hook_output('{"decision": "maybe"}', "x").decision == "ask"
    assert parse_hook_output('{"decision": ["allow"]}', "x").decision == "ask"


async def test_many_hooks_and_huge_output_stay_bounded(project: Path) -> None:
    many = [
        CommandHook(
            f'cat >/dev/null; echo \'{{"hookSpecificOutput": {{"additionalContext": "c{i}"}}}}\'',
            "",
            30,
            Scope.USER,
            "test",
            True,
            "Stop",
        )
        for i in range(60)
    ]
    r = await LifecycleHooks(many, None, project).fire("Stop", {"stop_hook_active": False})
    assert sorted(r.context) == sorted(f"c{i}" for i in range(60))
    # 50 MB of plain stdout: read up to the 1 MiB cap, the rest dropped, nothing hangs.
    huge = hook(
        project,
        "UserPromptSubmit",
        "import sys\nsys.stdin.read()\nsys.stdout.write('x' * (50 << 20))\n",
        timeout=60,
    )
    r = await LifecycleHooks([huge], None, project).fire("UserPromptSubmit", {"prompt": "p"})
    assert len(r.context) == 1 and len(r.context[0]) == 1 << 20


async def test_python_payloads_have_exactly_their_typed_fields(project: Path) -> None:
    from typing import get_type_hints

    from codingcode.hooks.lifecycle import PAYLOADS, permission_layer

    bus = HookBus()
    got: dict[str, dict[str, Any]] = {}

    async def record(event: HookEvent) -> None:
        got[event.name] = event.payload

    for name in PAYLOADS:
        bus.add_hook(name, record)
    lc = LifecycleHooks([], bus, project)
    call = ToolCall("read_file", {"path": "a"}, project, "s", 1, "default", call_id="c1")
    await post_tool_use(lc, call, "out")
    await permission_layer(lc)(call, "asked")
    for name, fields in [
        ("UserPromptSubmit", {"prompt": "p", "permission_mode": "default"}),
        ("Stop", {"stop_hook_active": False, "last_assistant_message": "a"}),
        ("SessionStart", {"source": "startup"}),
        ("SessionEnd", {"reason": "other"}),
        ("PreCompact", {"trigger": "auto", "custom_instructions": ""}),
    ]:
        await lc.fire(name, fields)
    for name, payload in got.items():
        assert set(payload) == set(get_type_hints(PAYLOADS[name])), name
    assert len(got) == 7
