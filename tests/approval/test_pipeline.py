"""The six layers in order: modes, sticky ask, hooks that change the input, the user, audit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codingcode.approval.confirm import Answer, ScriptedConfirmer
from codingcode.approval.pipeline import ToolCall
from codingcode.errors import DeniedError
from codingcode.hooks.bus import HookAnswer, HookBus
from codingcode.record.audit import AuditLog
from codingcode.runner import build_runner
from codingcode.workspace import Workspace

pytestmark = pytest.mark.anyio


def runner_for(project: Path, mode: str = "default", **kw: Any) -> Any:
    return build_runner(Workspace.load(project), mode=mode, **kw)


async def decision(
    project: Path, tool: str, args: dict[str, Any], mode: str = "default", **kw: Any
) -> Any:
    return await runner_for(project, mode, **kw).decide(tool, args, dry_run=True)


async def test_read_only_tools_pass_but_not_after_an_ask(project: Path) -> None:
    d = await decision(project, "read_file", {"path": "README.md"})
    assert (d.decision, d.layer) == ("allow", "ReadonlyWhitelist")
    d = await decision(project, "read_file", {"path": "~/.ssh/id_rsa"})
    assert (d.decision, d.layer, d.rule) == ("ask", "RuleEngine", "R8")


@pytest.mark.parametrize(
    ("mode", "tool", "args", "expected"),
    [
        ("plan", "read_file", {"path": "a"}, ("allow", "ReadonlyWhitelist")),
        ("plan", "write_file", {"path": "a", "content": ""}, ("deny", "PermissionMode")),
        ("plan", "execute_command", {"command": "ls"}, ("allow", "ReadonlyWhitelist")),
        ("plan", "execute_command", {"command": "ls > f"}, ("deny", "PermissionMode")),
        ("plan", "execute_command", {"command": "touch a"}, ("deny", "PermissionMode")),
        ("acceptEdits", "write_file", {"path": "a", "content": ""}, ("allow", "PermissionMode")),
        (
            "acceptEdits",
            "edit_file",
            {"path": "/tmp/a", "old_string": "x", "new_string": "y"},
            ("ask", "UserConfirmation"),
        ),
        ("acceptEdits", "execute_command", {"command": "make"}, ("ask", "UserConfirmation")),
        (
            "acceptEdits",
            "write_file",
            {"path": ".codingcode/settings.local.json", "content": "{}"},
            ("ask", "UserConfirmation"),
        ),
        (
            "acceptEdits",
            "write_file",
            {"path": ".git/hooks/pre-commit", "content": ""},
            ("ask", "UserConfirmation"),
        ),
        ("bypass", "execute_command", {"command": "make"}, ("allow", "PermissionMode")),
        ("bypass", "execute_command", {"command": "sudo ls"}, ("deny", "RuleEngine")),
        ("bypass", "execute_command", {"command": "cat .env"}, ("ask", "RuleEngine")),
        ("bypass", "write_file", {"path": ".env", "content": ""}, ("ask", "RuleEngine")),
        ("default", "execute_command", {"command": "ls"}, ("allow", "ReadonlyWhitelist")),
        ("default", "execute_command", {"command": "ls > f"}, ("ask", "UserConfirmation")),
    ],
)
async def test_modes(
    project: Path, mode: str, tool: str, args: dict[str, Any], expected: tuple[str, str]
) -> None:
    d = await decision(project, tool, args, mode)
    assert (d.decision, d.layer) == expected, d.reason


async def test_plan_mode_message(project: Path) -> None:
    d = await decision(project, "execute_command", {"command": "make"}, "plan")
    assert "plan mode is on" in d.reason


async def test_headless_ask_is_a_deny_that_says_how(project: Path) -> None:
    runner = runner_for(project)
    with pytest.raises(DeniedError) as err:
        await runner.run("execute_command", {"command": "npm test"})
    msg = err.value.message
    assert "execute_command(npm test)" in msg and "codingcode rules add" in msg
    assert "interactive" in msg


async def test_confirmer_allow_deny_always_never(project: Path) -> None:
    confirmer = ScriptedConfirmer([Answer.ALWAYS, Answer.NEVER])
    runner = runner_for(project, confirmer=confirmer)
    out = await runner.run("execute_command", {"command": "printf one"})
    assert "one" in out
    assert confirmer.requests[0].suggested_rule == "execute_command(printf one)"
    saved = json.loads((project / ".codingcode" / "settings.local.json").read_text())
    assert saved["permissions"]["allow"] == ["execute_command(printf one)"]
    # now allowed by the saved rule, without asking; not a different printf
    assert "one" in await runner.run("execute_command", {"command": "printf one"})
    assert len(confirmer.requests) == 1
    with pytest.raises(DeniedError):
        await runner.run("execute_command", {"command": "touch x"})
    saved = json.loads((project / ".codingcode" / "settings.local.json").read_text())
    assert saved["permissions"]["deny"] == ["execute_command(touch x)"]
    assert not (project / "x").exists()


async def test_preset_ask_offers_no_rule_to_save(project: Path) -> None:
    confirmer = ScriptedConfirmer([Answer.ALWAYS])
    (project / ".env").write_text("A=1\n")
    runner = runner_for(project, confirmer=confirmer)
    assert "A=1" in await runner.run("read_file", {"path": ".env"})
    assert confirmer.requests[0].suggested_rule is None
    assert not (project / ".codingcode" / "settings.local.json").exists()


async def test_hook_modified_input_is_rechecked_and_exactly_what_runs(project: Path) -> None:
    bus = HookBus()

    async def to_sudo(call: ToolCall) -> HookAnswer:
        return HookAnswer("allow", "rewritten", {"command": "sudo id"})

    bus.add_pre_tool_use(to_sudo)
    d = await decision(project, "execute_command", {"command": "id"}, hooks=bus)
    assert (d.decision, d.rule) == ("deny", "R2")

    bus2 = HookBus()

    async def safer(call: ToolCall) -> HookAnswer:
        return HookAnswer("allow", "made safe", {"command": "echo safe"})

    bus2.add_pre_tool_use(safer, matcher="execute_command")
    runner = runner_for(project, hooks=bus2)
    out = await runner.run("execute_command", {"command": "echo original"})
    assert "safe" in out and "original" not in out

    bus3 = HookBus()

    async def invalid(call: ToolCall) -> HookAnswer:
        return HookAnswer("allow", "", {"command": ""})

    bus3.add_pre_tool_use(invalid)
    d = await decision(project, "execute_command", {"command": "id"}, hooks=bus3)
    assert d.decision == "deny" and "modifiedInput is invalid" in d.reason


async def test_hook_allow_can_answer_a_preset_ask_but_crash_never_allows(project: Path) -> None:
    bus = HookBus()

    async def ok(call: ToolCall) -> HookAnswer:
        return HookAnswer("allow", "reviewed")

    bus.add_pre_tool_use(ok)
    d = await decision(project, "execute_command", {"command": "cat .env"}, hooks=bus)
    assert (d.decision, d.layer) == ("allow", "HookPreToolUse")

    bus2 = HookBus()

    async def boom(call: ToolCall) -> HookAnswer:
        raise RuntimeError("bug")

    bus2.add_pre_tool_use(boom)
    d = await decision(project, "execute_command", {"command": "make"}, hooks=bus2)
    assert d.decision == "ask" and "failed" in d.reason


async def test_every_layer_is_audited_and_emitted(project: Path, tmp_path: Path) -> None:
    events: list[dict[str, Any]] = []
    bus = HookBus()
    bus.on("tool.approval.post", events.append)
    runner = runner_for(project, hooks=bus)
    with pytest.raises(DeniedError):
        await runner.run("execute_command", {"command": "make " + "x" * 1000})
    records = AuditLog().query(tool="execute_command")
    assert [r.layer for r in records] == [
        "RuleEngine",
        "ReadonlyWhitelist",
        "PermissionMode",
        "UserConfirmation",
    ]
    assert records[-1].decision == "deny"
    assert len(records[0].args["command"]) < 300  # large contents shortened
    assert [e["layer"] for e in events] == [r.layer for r in records]


async def test_validation_happens_before_approval(project: Path) -> None:
    from codingcode.errors import InvalidArgumentsError

    with pytest.raises(InvalidArgumentsError):
        await runner_for(project).run("read_file", {"path": 3})
    assert AuditLog().query() == []


_MODES = st.sampled_from(["default", "acceptEdits", "plan", "bypass"])
_ASKED = st.sampled_from(
    [
        ("read_file", {"path": "~/.ssh/id_rsa"}),
        ("read_file", {"path": ".env"}),
        ("write_file", {"path": ".env", "content": "x"}),
        ("edit_file", {"path": ".env.local", "old_string": "a", "new_string": "b"}),
        ("search_files", {"pattern": "*", "path": "~/.ssh"}),
        ("execute_command", {"command": "cat ~/.ssh/config"}),
        ("execute_command", {"command": "$X"}),
    ]
)
_USER_ALLOW = st.sampled_from(
    ["*", "read_file", "execute_command(*)", "write_file(**)", "edit_file(**)"]
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_MODES, _ASKED, st.lists(_USER_ALLOW, max_size=3))
async def test_ask_is_sticky_in_every_mode(
    project: Path, mode: str, asked: tuple[str, dict[str, Any]], allows: list[str]
) -> None:
    from codingcode.approval.rules import Policy, Rule
    from codingcode.approval.setup import build_pipeline
    from codingcode.workspace import Workspace

    policy = Policy([Rule(a, "allow", priority=100) for a in allows])
    pipeline, _, _ = build_pipeline(Workspace.load(project), mode=mode, policy=policy)
    tool, args = asked
    d = await pipeline.decide(ToolCall(tool, args, project, mode=mode), dry_run=True)
    assert d.decision in ("ask", "deny"), (mode, asked, allows, d)


async def test_always_answer_keeps_the_sessions_own_rules(project: Path) -> None:
    """The re-read after an always/never answer keeps the rules the session was opened with
    (``--allowed-tools`` / ``--disallowed-tools``): they are not in any settings file."""
    from codingcode.approval.rules import Rule, load_policy
    from codingcode.config import load_settings

    policy = load_policy(load_settings(project))
    policy.rules.append(Rule("execute_command(printf kept *)", "allow", 0, None, "--allowed-tools"))
    policy.rules.append(Rule("execute_command(touch *)", "deny", 0, None, "--disallowed-tools"))
    confirmer = ScriptedConfirmer([Answer.ALWAYS])
    runner = runner_for(project, confirmer=confirmer, policy=policy)
    assert "one" in await runner.run("execute_command", {"command": "printf one"})
    assert len(confirmer.requests) == 1
    # after the answer was saved and the settings read again, both still hold, unasked
    assert "kept" in await runner.run("execute_command", {"command": "printf kept x"})
    d = await runner.decide("execute_command", {"command": "touch y"}, dry_run=True)
    assert (d.decision, d.rule) == ("deny", "execute_command(touch *)")
    assert len(confirmer.requests) == 1
