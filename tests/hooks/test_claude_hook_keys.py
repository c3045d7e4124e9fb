"""Hooks as Claude Code's reference writes them: every documented event accepted (those not
raised kept inactive, noted once), an unknown event a note, the handler keys ``if``,
``once``, ``async``, ``shell`` honoured, and the pipeline running PreToolUse for every call
in every mode (a hook's deny wins in bypass and over an allow rule)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from codingcode.approval.pipeline import HOOK, ToolCall
from codingcode.config import Scope, Settings, SettingsFile, user_config_dir
from codingcode.hooks.pre_tool_use import PreToolUseHooks
from codingcode.hooks.settings import INACTIVE_EVENTS, load_command_hooks
from codingcode.runner import build_runner
from codingcode.workspace import Workspace
from tests.conftest import run_cli


def settings_with(project: Path, hooks: dict[str, Any]) -> Settings:
    path = project / ".claude" / "settings.json"
    return Settings(project, [SettingsFile(Scope.USER, path, {"hooks": hooks}, dialect="claude")])


def logging_hook(log: Path, **keys: Any) -> dict[str, Any]:
    return {"type": "command", "command": f"cat >> {log}; echo >> {log}", **keys}


def test_every_documented_event_is_accepted_and_unknown_ones_are_a_note(project: Path) -> None:
    hooks = {event: [{"hooks": [{"command": "true"}]}] for event in INACTIVE_EVENTS}
    hooks["PreToolUse"] = [
        {"matcher": "Bash", "hooks": [{"command": "true", "statusMessage": "x"}]}
    ]
    hooks["PreToolUze"] = [{"hooks": [{"command": "true"}]}]
    settings = settings_with(project, hooks)
    loaded = load_command_hooks(settings)
    assert {h.event for h in loaded} == {*INACTIVE_EVENTS, "PreToolUse"}
    assert [h.active for h in loaded if h.event == "PreToolUse"] == [True]
    assert not any(h.active for h in loaded if h.event in INACTIVE_EVENTS)
    assert len(settings.notes) == 2
    assert "hooks.PreToolUze is not a hook event (did you mean 'PreToolUse'?)" in settings.notes[0]
    assert "kept but never run here" in settings.notes[1] and "Setup" in settings.notes[1]
    load_command_hooks(settings)
    assert len(settings.notes) == 2  # noted once


def call(project: Path, tool: str, args: dict[str, Any], mode: str = "default") -> ToolCall:
    return ToolCall(tool, args, project, "s", 1, mode, call_id="c")


@pytest.mark.anyio
async def test_if_once_shell_and_async(project: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    bash_log = tmp_path / "bash"
    async_dir = tmp_path / "async"
    async_dir.mkdir()
    settings = settings_with(
        project,
        {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        logging_hook(log, **{"if": "Bash(git commit:*)"}),
                        {
                            "command": f"echo $BASH_VERSION > {bash_log}",
                            "shell": "bash",
                            "once": True,
                        },
                        {
                            "command": f"sleep 1; cat > {async_dir}/$$.tmp && mv {async_dir}/$$.tmp {async_dir}/$$.json",
                            "async": True,
                            "timeout": 10,
                        },
                    ],
                }
            ]
        },
    )
    hooks = PreToolUseHooks(load_command_hooks(settings))
    started = time.monotonic()
    for command in ("ls", "git commit -m x", "git commit -m y"):
        result = await hooks(call(project, "execute_command", {"command": command}))
        assert result.action == "continue"
    assert time.monotonic() - started < 3  # the async hook was not waited for
    seen = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [s["tool_input"]["command"] for s in seen] == ["git commit -m x", "git commit -m y"]
    assert bash_log.read_text().strip()  # bash ran it (sh has no $BASH_VERSION)
    bash_log.unlink()
    await hooks(call(project, "execute_command", {"command": "ls"}))
    assert not bash_log.exists()  # once: not again
    deadline = time.monotonic() + 10
    while len(list(async_dir.glob("*.json"))) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    answers = [json.loads(p.read_text()) for p in async_dir.glob("*.json")]
    assert len(answers) == 4  # each call started it, none waited for it
    assert {a["hook_event_name"] for a in answers} == {"PreToolUse"}


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["bypass", "acceptEdits", "default", "plan"])
async def test_pre_tool_use_runs_before_every_layer_and_its_deny_wins(
    project: Path, tmp_path: Path, mode: str
) -> None:
    log = tmp_path / "seen"
    guard = tmp_path / "guard.sh"
    guard.write_text(
        f'#!/bin/sh\ninput=$(cat)\necho "$input" >> {log}\n'
        'case "$input" in *secret*) echo "no secrets" >&2; exit 2;; esac\n'
    )
    guard.chmod(0o755)
    user = user_config_dir()
    user.mkdir(parents=True, exist_ok=True)
    (user / "settings.json").write_text(
        json.dumps(
            {
                "permissions": {"allow": ["Write(secret.txt)"]},
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "Read|Write|Edit", "hooks": [{"command": str(guard)}]}
                    ]
                },
            }
        )
    )
    runner = build_runner(Workspace.load(project), mode=mode)
    for tool, args in (
        ("read_file", {"path": "a.txt"}),
        ("write_file", {"path": "secret.txt", "content": "x"}),
    ):
        decision = await runner.pipeline.decide(call(project, tool, args, mode), dry_run=True)
        if tool == "write_file":  # denied by the hook, over the allow rule, in every mode
            assert (decision.decision, decision.layer) == ("deny", HOOK), decision
            assert "no secrets" in decision.reason
    lines = log.read_text().splitlines()
    assert len(lines) == 2  # the read-only tool's call reached the hook too


def test_hooks_list_shows_inactive_hooks(project: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "SubagentStart": [{"hooks": [{"command": "echo start"}]}],
                    "Stop": [{"hooks": [{"type": "prompt", "prompt": "Is the task done?"}]}],
                    "PreToolUse": [{"hooks": [{"command": "echo pre"}]}],
                }
            }
        )
    )
    r = run_cli(["hooks", "list"], cwd=project, env={"CODINGCODE_TRUST_ALL": "1"})
    assert r.code == 0, r.stderr
    assert "(inactive: codingcode does not raise this event)" in r.stdout
    assert "Stop [*] prompt: Is the task done?" in r.stdout
    stop = r.stdout.split("Stop [*] prompt: Is the task done?")[1].splitlines()[1]
    assert "(inactive" not in stop  # a prompt hook asks the session's model
    pre = r.stdout.split("PreToolUse [*] echo pre")[1].splitlines()[1]
    assert "(inactive" not in pre
