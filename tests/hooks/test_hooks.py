"""Command hooks: JSON in, JSON out, exit 2 denies, a crash or a timeout never allows."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from codingcode.approval.pipeline import ToolCall
from codingcode.config import Scope, SettingsError, load_settings
from codingcode.hooks.pre_tool_use import run_command_hook
from codingcode.hooks.settings import CommandHook, load_command_hooks
from codingcode.runner import build_runner
from codingcode.workspace import Workspace

pytestmark = pytest.mark.anyio


def hook(project: Path, script: str, timeout: float = 10) -> CommandHook:
    path = project / "hook.py"
    path.write_text(script)
    return CommandHook(f"{sys.executable} {path}", "*", timeout, Scope.USER, "test")


CALL_ARGS = {"command": "echo hi"}


def call(project: Path) -> ToolCall:
    return ToolCall("execute_command", dict(CALL_ARGS), project, "s1", 4, "default")


async def test_hook_gets_the_call_and_answers_json(project: Path) -> None:
    h = hook(
        project,
        "import json,sys\n"
        "d=json.load(sys.stdin)\n"
        "open('seen.json','w').write(json.dumps(d))\n"
        "print(json.dumps({'decision':'deny','reason':'no echo','modifiedInput':None}))\n",
    )
    answer = await run_command_hook(h, call(project))
    assert (answer.decision, answer.reason) == ("deny", "no echo")
    seen = json.loads((project / "seen.json").read_text())
    assert seen["tool_name"] == "execute_command" and seen["tool_input"] == CALL_ARGS
    assert (seen["session_id"], seen["turn_id"], seen["permission_mode"]) == ("s1", 4, "default")
    assert seen["cwd"] == str(project)


async def test_exit_2_denies_with_stderr(project: Path) -> None:
    h = hook(project, "import sys\nsys.stderr.write('blocked by policy')\nsys.exit(2)\n")
    answer = await run_command_hook(h, call(project))
    assert (answer.decision, answer.reason) == ("deny", "blocked by policy")


@pytest.mark.parametrize(
    "script",
    [
        "import sys\nsys.exit(1)\n",
        "print('not json')\n",
        'print(\'{"decision": "maybe"}\')\n',
        "raise SystemExit(3)\n",
    ],
)
async def test_failure_never_allows(project: Path, script: str) -> None:
    answer = await run_command_hook(hook(project, script), call(project))
    assert answer.decision == "ask"


async def test_timeout_kills_the_hook(project: Path) -> None:
    h = hook(project, "import time\ntime.sleep(30)\n", timeout=0.5)
    started = time.monotonic()
    answer = await run_command_hook(h, call(project))
    assert time.monotonic() - started < 10
    assert answer.decision == "ask" and "longer than" in answer.reason


def _write(project: Path, data: Any) -> None:
    path = project / ".codingcode" / "settings.local.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(data))


async def test_settings_hook_modifies_input_then_rules_recheck(project: Path) -> None:
    from codingcode.trust import TrustStore

    script = project / "rewrite.py"
    script.write_text(
        "import json,sys\n"
        "print(json.dumps({'decision':'allow','modifiedInput':{'command':'echo rewritten'}}))\n"
    )
    _write(
        project,
        {
            "hooks": {
                "PreToolUse": [
                    {
                        "matcher": "execute_command",
                        "hooks": [
                            {
                                "type": "command",
                                "command": f"{sys.executable} {script}",
                                "timeout": 10,
                            }
                        ],
                    }
                ]
            }
        },
    )
    TrustStore().trust(project)
    runner = build_runner(Workspace.load(project))
    out = await runner.run("execute_command", {"command": "echo original"})
    assert "rewritten" in out and "original" not in out


async def test_untrusted_project_hook_does_not_run(project: Path) -> None:
    marker = project / "ran"
    _write(
        project,
        {"hooks": {"PreToolUse": [{"hooks": [{"command": f"touch {marker}"}]}]}},
    )
    runner = build_runner(Workspace.load(project))
    d = await runner.decide("execute_command", {"command": "make"}, dry_run=True)
    assert d.decision == "ask" and not marker.exists()
    assert any("hook" in g for g in runner.ignored_grants)


def test_invalid_hook_settings(project: Path) -> None:
    _write(project, {"hooks": {"PreToolUse": [{"hooks": [{"command": "x", "timeout": 9999}]}]}})
    with pytest.raises(SettingsError) as err:
        load_command_hooks(load_settings(project))
    assert "hooks.PreToolUse[0].hooks[0].timeout" in err.value.message


def test_a_claude_code_file_with_bad_hooks_keeps_the_good_ones(project: Path) -> None:
    """A Claude Code settings file is read as Claude Code reads it: each hook that cannot
    be used is one note naming the file, the entry and why; the rest load, the session
    starts. (codingcode's own file stays strict: the test above.)"""
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "Bash",
                            "hooks": [
                                {"type": "command", "command": "good-one"},
                                {"type": "command", "command": "slow", "timeout": 0},
                                {"type": "command", "command": "ms", "timeout": 30000},
                                {"type": "shell-script", "script": "x.sh"},
                            ],
                        },
                        {"matcher": "Write"},
                    ],
                    "PostToolUse": {"matcher": "Edit", "command": "not-a-list"},
                    "Stop": [{"hooks": [{"type": "command", "command": "good-two"}]}],
                }
            }
        )
    )
    settings = load_settings(project)
    hooks = load_command_hooks(settings)
    assert [(h.event, h.command, h.matcher, h.timeout_s) for h in hooks] == [
        ("PreToolUse", "good-one", "Bash", 60),
        ("PreToolUse", "ms", "Bash", 600),  # a timeout over the ceiling runs with it
        ("Stop", "good-two", "*", 60),
    ]
    notes = [n for n in settings.notes if str(path) in n]
    assert len(notes) == 5, notes
    assert "hooks.PreToolUse[0].hooks[2].timeout 30000 is over 600 seconds" in notes[0]
    assert "hooks.PreToolUse[0].hooks[1].timeout" in notes[1]
    assert "hooks.PreToolUse[0].hooks[3].type" in notes[2]
    assert "hooks.PreToolUse[1] has no list of `hooks`" in notes[3]
    assert "hooks.PostToolUse must be a list of matchers, not dict" in notes[4]
    build_runner(Workspace.load(project))  # the session starts


def test_a_claude_code_file_whose_hooks_are_a_list_is_one_note(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": [{"type": "SessionStart", "script": "a.sh"}]}))
    settings = load_settings(project)
    assert load_command_hooks(settings) == []
    assert [n for n in settings.notes if "hooks must be an object of events, not list" in n]
