"""Exposure only by an explicit grant: which allows show a call its masked paths.

Every layer that can allow a call, driven through a real :class:`ApprovalPipeline`: only the
user's answer to that very call, or an allow rule naming the path literally, puts the path
in the call's capability set; every other allow withholds it and says why. (Ground truth
through the real command and a real sandbox: ``tests/e2e/test_exposure_cli.py``.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codingcode.approval.call import (
    CONFIRM,
    HOOK,
    MODE,
    PERMISSION_HOOK,
    RULES,
    WHITELIST,
    LayerResult,
)
from codingcode.approval.capabilities import rule_literal_paths
from codingcode.approval.confirm import Answer, ScriptedConfirmer
from codingcode.approval.pipeline import ApprovalPipeline, Decision, ToolCall
from codingcode.workspace import Workspace

pytestmark = pytest.mark.anyio


@pytest.fixture
def secret(project: Path) -> Path:
    path = project / "secret.txt"
    path.write_text("canary\n")
    return path


def call(project: Path, command: str = "cat secret.txt", mode: str = "default") -> ToolCall:
    return ToolCall("execute_command", {"command": command}, project, mode=mode)


def cont(c: ToolCall) -> LayerResult:
    return LayerResult(RULES, "continue", "no rule")


async def decide(pipeline: ApprovalPipeline, c: ToolCall) -> Decision:
    d = await pipeline.decide(c)
    assert d.decision == "allow", d.reason
    return d


def withheld_only(d: Decision, path: Path, says: str) -> None:
    assert d.capabilities.read_paths == frozenset(), d.layer
    assert path in d.withheld, d.withheld
    assert says in d.withheld[path]
    assert "approve the call or add an allow rule naming it" in d.withheld[path]


async def test_a_mode_pass_exposes_nothing(project: Path, secret: Path) -> None:
    d = await decide(ApprovalPipeline(cont), call(project, mode="bypass"))
    assert d.layer == MODE
    withheld_only(d, secret, "bypass mode passes never expose a masked path")


async def test_accept_edits_pass_exposes_nothing(project: Path, secret: Path) -> None:
    c = ToolCall("write_file", {"path": "secret.txt", "content": "x"}, project, mode="acceptEdits")
    d = await decide(ApprovalPipeline(cont), c)
    assert d.layer == MODE and d.capabilities.write_paths == frozenset()
    assert "acceptEdits mode passes never expose" in d.withheld[secret]


async def test_read_only_auto_allow_exposes_nothing(project: Path, secret: Path) -> None:
    d = await decide(ApprovalPipeline(cont, read_only=lambda c: "cat only reads"), call(project))
    assert d.layer == WHITELIST
    withheld_only(d, secret, "read-only auto-allows never expose")
    tool = ToolCall("read_file", {"path": "secret.txt"}, project)
    d = await decide(ApprovalPipeline(cont), tool)
    withheld_only(d, secret, "read-only auto-allows never expose")


async def test_auto_allow_sandboxed_exposes_nothing(project: Path, secret: Path) -> None:
    d = await decide(ApprovalPipeline(cont, contained=lambda c: True), call(project))
    assert d.layer == CONFIRM
    withheld_only(d, secret, "approvals.autoAllowSandboxed passes never expose")


async def test_hooks_allow_exposes_nothing(project: Path, secret: Path) -> None:
    async def pre(c: ToolCall) -> LayerResult:
        return LayerResult(HOOK, "allow", "the hook says yes")

    d = await decide(ApprovalPipeline(cont, pre_hooks=pre), call(project))
    assert d.layer == HOOK
    withheld_only(d, secret, "hooks' allows never expose")

    async def permission(c: ToolCall, reason: str) -> LayerResult:
        return LayerResult(PERMISSION_HOOK, "allow", "the permission hook says yes")

    pipeline = ApprovalPipeline(cont, confirmer=ScriptedConfirmer([]))
    pipeline.permission_hooks = permission
    d = await decide(pipeline, call(project))
    assert d.layer == PERMISSION_HOOK
    withheld_only(d, secret, "hooks' allows never expose")


async def test_a_session_grant_exposes_nothing(project: Path, secret: Path) -> None:
    from codingcode.runner import build_runner

    runner = build_runner(Workspace.load(project), confirmer=ScriptedConfirmer([Answer.SESSION]))
    pipeline = runner.pipeline
    assert pipeline is not None
    first = await pipeline.decide(call(project, "mytool secret.txt"))
    # the answer itself is the user approving this very call: it shows the path
    assert first.capabilities.read_paths == {secret}, first.reason
    assert pipeline.session_rules, first.reason
    again = await pipeline.decide(call(project, "mytool secret.txt"))
    assert again.layer == "SessionGrant", again.reason
    withheld_only(again, secret, "session grants (approved for another call) never expose")


@pytest.mark.parametrize("answer", [Answer.ALLOW, Answer.ALWAYS, Answer.ALWAYS_USER])
async def test_the_users_answer_exposes_what_the_call_names(
    project: Path, secret: Path, answer: Answer
) -> None:
    pipeline = ApprovalPipeline(
        cont, confirmer=ScriptedConfirmer([answer]), persist=lambda *a: None
    )
    d = await decide(pipeline, call(project))
    assert d.capabilities.read_paths == {secret} and d.withheld == {}


@pytest.mark.parametrize(
    ("rule", "exposed"),
    [
        ("execute_command(cat secret.txt)", True),
        ("execute_command(cat ./secret.txt)", True),
        ("execute_command(cat *)", False),
        ("execute_command(cat secret.*)", False),
        ("execute_command", False),
    ],
)
async def test_an_allow_rule_exposes_only_what_it_names_literally(
    project: Path, secret: Path, rule: str, exposed: bool
) -> None:
    def by_rule(c: ToolCall) -> LayerResult:
        return LayerResult(RULES, "allow", f"rule {rule}", rule)

    d = await decide(ApprovalPipeline(by_rule), call(project))
    if exposed:
        assert d.capabilities.read_paths == {secret} and d.withheld == {}
    else:
        withheld_only(d, secret, f"the allow rule {rule} does not name it literally")


def test_rule_literal_paths(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(project / "home"))
    c = call(project)
    # (the program word resolves too: harmless, it is only compared with the call's paths)
    assert rule_literal_paths("execute_command(cat ~/.aws/credentials)", c) == {
        project / "cat",
        project / "home/.aws/credentials",
    }
    assert rule_literal_paths("read_file(/etc/ssh/ssh_host_*_key)", c) == frozenset()
    assert rule_literal_paths("execute_command(tool --conf=/a/b *)", c) == {
        project / "tool",
        Path("/a/b"),
    }
    assert rule_literal_paths("execute_command(cat $F)", c) == {project / "cat"}
    # a SPEC shlex cannot split is split on white space (no error; names only its words)
    assert project / "secret.txt" not in rule_literal_paths("execute_command(cat 'x)", c)
    assert rule_literal_paths("not a rule(", c) == frozenset()


async def test_denied_and_asked_calls_carry_nothing(project: Path, secret: Path) -> None:
    def deny(c: ToolCall) -> LayerResult:
        return LayerResult(RULES, "deny", "no")

    d: Any = await ApprovalPipeline(deny).decide(call(project))
    assert d.decision == "deny" and d.capabilities.read_paths == frozenset()
    d = await ApprovalPipeline(cont).decide(call(project), dry_run=True)
    assert d.decision == "ask" and d.capabilities.read_paths == frozenset()


def test_a_command_the_user_typed_is_an_explicit_grant(project: Path, secret: Path) -> None:
    from codingcode.approval.capabilities import TYPED, granted_capabilities

    typed = LayerResult(CONFIRM, "allow", "the user typed it", answer=TYPED)
    caps, withheld = granted_capabilities(call(project), typed)
    assert caps.read_paths == {secret} and withheld == {}
    # the same layer without the user's answer (autoAllowSandboxed): nothing
    caps, withheld = granted_capabilities(call(project), LayerResult(CONFIRM, "allow", "auto"))
    assert caps.read_paths == frozenset() and secret in withheld
