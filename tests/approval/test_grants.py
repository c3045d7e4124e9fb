"""Grants: the narrowest useful rule, session grants that vanish with the session, the six
answers through the pipeline, a reason for the model, and no question for an edit that fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codingcode.approval.confirm import Answer, Reply, ScriptedConfirmer
from codingcode.approval.grants import narrow_rule, split_rules
from codingcode.errors import DeniedError
from codingcode.runner import build_runner
from codingcode.workspace import Workspace

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("python3 -m pytest -q", "execute_command(python3 -m pytest *)"),
        ("python3 -m pytest", "execute_command(python3 -m pytest)"),
        ("rm -rf build", "execute_command(rm -rf build)"),
        ("git push origin main", "execute_command(git push origin *)"),
        ("git push --force origin main", "execute_command(git push --force origin main)"),
        ("git commit -m 'fix it'", "execute_command(git commit *)"),
        ("git reset --hard HEAD~1", "execute_command(git reset --hard HEAD~1)"),
        ("npm run test", "execute_command(npm run test)"),
        ("npm run build -- --prod", "execute_command(npm run build *)"),
        ("npm test", "execute_command(npm test)"),
        ("cargo test --release", "execute_command(cargo test *)"),
        ("make", "execute_command(make)"),
        ("make check", "execute_command(make check)"),
        ("pytest -x tests", "execute_command(pytest *)"),
        # the runner is transparent: one rule covers it and the program it runs
        ("uv run pytest -q", "execute_command(uv run pytest *)"),
        ("touch a", "execute_command(touch a)"),
        # more than one simple command: exactly the line, never one of its parts
        (
            "cd src && python3 -m pytest -q | tail -5",
            "execute_command(cd src && python3 -m pytest -q | tail -5)",
        ),
        ("make && ./run.sh", "execute_command(make && ./run.sh)"),
        (
            "for i in 1 2 3; do sleep 1; done",
            "execute_command(for i in 1 2 3; do sleep 1; done)",
        ),
        ("echo gen > gen.txt", "execute_command(echo gen > gen.txt)"),
        ('echo "$(date)"', None),  # parentheses would end the rule: none
        ("ls *.py | wc -l", None),  # a * in the text would be a wildcard: no rule
        ("touch 'a b'", "execute_command(touch a b)"),  # quoted: still one simple command
        ("$X", None),
        ('eval "$X"', None),
    ],
)
def test_the_narrowest_useful_rule(project: Path, command: str, rule: str | None) -> None:
    assert narrow_rule("execute_command", command, project, project) == rule


def test_split_rules() -> None:
    assert split_rules("execute_command(make), execute_command(a, b)") == [
        "execute_command(make)",
        "execute_command(a, b)",
    ]
    assert split_rules("write_file(src/**)") == ["write_file(src/**)"]


async def test_a_session_grant_is_used_then_gone_with_the_session(project: Path) -> None:
    confirmer = ScriptedConfirmer([Answer.SESSION])
    runner = build_runner(Workspace.load(project), confirmer=confirmer)
    d = await runner.decide("execute_command", {"command": "python3 -m pytest -q"})
    assert d.decision == "allow" and "session" in d.reason
    assert confirmer.requests[0].suggested_rule == "execute_command(python3 -m pytest *)"
    # the same program with other arguments: granted; another module: asked
    d = await runner.decide("execute_command", {"command": "python3 -m pytest -x tests"})
    assert (d.decision, d.layer) == ("allow", "SessionGrant")
    d = await runner.decide("execute_command", {"command": "python3 -m pip install x"})
    assert d.decision == "deny" and len(confirmer.requests) == 2  # asked (scripted: no)
    assert not (project / ".codingcode" / "settings.local.json").exists()  # nothing saved
    # a new session (a new runner): asked again
    again = ScriptedConfirmer([Answer.DENY])
    d = await build_runner(Workspace.load(project), confirmer=again).decide(
        "execute_command", {"command": "python3 -m pytest -q"}
    )
    assert d.decision == "deny" and len(again.requests) == 1


async def test_a_session_grant_never_beats_a_deny_or_ask_rule(project: Path) -> None:
    confirmer = ScriptedConfirmer([Reply(Answer.SESSION, rule="execute_command(cat *)")])
    runner = build_runner(Workspace.load(project), confirmer=confirmer)
    d = await runner.decide("execute_command", {"command": "cat x > y"})
    assert d.decision == "allow"
    # R9 asks about .env: the session grant does not pass it
    d = await runner.decide("execute_command", {"command": "cat .env > y"})
    assert d.decision == "deny" and len(confirmer.requests) == 2


async def test_always_for_me_saves_in_the_user_settings(project: Path) -> None:
    from codingcode.config import user_config_dir

    runner = build_runner(
        Workspace.load(project), confirmer=ScriptedConfirmer([Answer.ALWAYS_USER])
    )
    assert (await runner.decide("execute_command", {"command": "cargo test"})).allowed
    saved = json.loads((user_config_dir() / "settings.json").read_text())
    assert saved["permissions"]["allow"] == ["execute_command(cargo test)"]
    assert not (project / ".codingcode" / "settings.local.json").exists()


async def test_an_edited_rule_is_what_is_saved(project: Path) -> None:
    confirmer = ScriptedConfirmer([Reply(Answer.ALWAYS, rule="execute_command(make check)")])
    runner = build_runner(Workspace.load(project), confirmer=confirmer)
    assert (await runner.decide("execute_command", {"command": "make check"})).allowed
    saved = json.loads((project / ".codingcode" / "settings.local.json").read_text())
    assert saved["permissions"]["allow"] == ["execute_command(make check)"]


async def test_an_invalid_edited_rule_allows_once_and_saves_nothing(project: Path) -> None:
    confirmer = ScriptedConfirmer([Reply(Answer.ALWAYS, rule="execute_command(")])
    runner = build_runner(Workspace.load(project), confirmer=confirmer)
    d = await runner.decide("execute_command", {"command": "make"})
    assert d.allowed and "was not saved" in d.reason
    assert not (project / ".codingcode" / "settings.local.json").exists()


async def test_no_grant_for_a_call_a_preset_asked_about(project: Path) -> None:
    (project / ".env").write_text("A=1\n")
    confirmer = ScriptedConfirmer([Reply(Answer.ALWAYS, rule="read_file(.env)")])
    runner = build_runner(Workspace.load(project), confirmer=confirmer)
    assert (await runner.decide("read_file", {"path": ".env"})).allowed
    assert confirmer.requests[0].preset and confirmer.requests[0].suggested_rule is None
    assert not (project / ".codingcode" / "settings.local.json").exists()


async def test_no_and_tell_the_model_why(project: Path) -> None:
    confirmer = ScriptedConfirmer([Reply(Answer.DENY, message="use make test instead")])
    runner = build_runner(Workspace.load(project), confirmer=confirmer)
    with pytest.raises(DeniedError) as err:
        await runner.run("execute_command", {"command": "pytest"})
    assert "The user says: use make test instead" in err.value.message


async def test_an_edit_that_would_fail_is_not_asked(project: Path) -> None:
    (project / "a.py").write_text("x = 1\nx = 1\nx = 1\n")
    confirmer = ScriptedConfirmer([Answer.ALLOW])
    runner = build_runner(Workspace.load(project), confirmer=confirmer)
    args = {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
    d = await runner.decide("edit_file", args)
    assert d.decision == "deny" and "occurs 3 times" in d.reason and "no one was asked" in d.reason
    assert confirmer.requests == []
    d = await runner.decide("edit_file", {**args, "old_string": "nope"})
    assert "not found" in d.reason and confirmer.requests == []
    # a valid one is asked, with its diff
    (project / "b.py").write_text("y = 1\n")
    d = await runner.decide(
        "edit_file", {"path": "b.py", "old_string": "y = 1", "new_string": "y = 2"}
    )
    assert d.allowed and len(confirmer.requests) == 1


async def test_the_audit_records_the_answer_the_grant_and_redacts_secrets(project: Path) -> None:
    from codingcode.record.audit import AuditLog, redact

    confirmer = ScriptedConfirmer([Answer.SESSION, Answer.DENY])
    runner = build_runner(Workspace.load(project), confirmer=confirmer)
    token = "ghp_" + "a" * 36
    await runner.decide(
        "execute_command", {"command": f"curl -H 'Authorization: Bearer {token}' x"}
    )
    await runner.decide("execute_command", {"command": "make PASSWORD=hunter2secret"})
    records = [r for r in AuditLog().query() if r.layer == "UserConfirmation"]
    assert [(r.answer, r.decision) for r in records] == [("session", "allow"), ("no", "deny")]
    assert records[0].grant and records[0].grant.startswith("execute_command(curl")
    stored = " ".join(str(r.to_json()) for r in AuditLog().query())
    assert token not in stored and "hunter2secret" not in stored and "[redacted]" in stored
    assert redact({"api_key": "abc", "path": "x"}) == {"api_key": "[redacted]", "path": "x"}
    assert redact("sk-" + "b" * 30) == "[redacted]"


async def test_the_uv_run_rule_alone_allows_the_command(project: Path) -> None:
    from codingcode.runner import build_runner

    rules = project / ".codingcode"
    rules.mkdir()
    (rules / "settings.local.json").write_text(
        '{"permissions": {"allow": ["execute_command(uv run pytest *)"]}}'
    )
    runner = build_runner(Workspace.load(project), audit=False, assume_trusted=True)
    decision = await runner.decide("execute_command", {"command": "uv run pytest -q"})
    assert decision.decision == "allow", decision


async def test_a_grant_of_a_whole_line_allows_exactly_that_line(project: Path) -> None:
    """The rule saved for a loop allows that loop again, not its parts on their own."""
    loop = "for i in 1 2; do sleep 0; done"
    confirmer = ScriptedConfirmer([Answer.ALWAYS])
    runner = build_runner(Workspace.load(project), confirmer=confirmer)
    d = await runner.decide("execute_command", {"command": loop})
    assert confirmer.requests[0].suggested_rule == f"execute_command({loop})"
    assert d.decision == "allow"
    again = ScriptedConfirmer([Answer.DENY])
    fresh = build_runner(Workspace.load(project), confirmer=again)
    d = await fresh.decide("execute_command", {"command": loop})
    assert (d.decision, d.layer) == ("allow", "RuleEngine") and not again.requests
    d = await fresh.decide("execute_command", {"command": "sleep 0"})
    assert d.decision == "deny" and len(again.requests) == 1  # the part alone: asked
