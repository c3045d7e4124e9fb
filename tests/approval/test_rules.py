"""User rules: the compact syntax, priorities, compound commands, settings and trust."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from codingcode.approval.pipeline import ToolCall
from codingcode.approval.rules import (
    Rule,
    RuleEngine,
    RuleSyntaxError,
    add_rule,
    load_policy,
    remove_rule,
    split_rule,
    suggest_rule,
)
from codingcode.config import Scope, SettingsError, load_settings


def decide(rules: list[Rule], tool: str, args: dict[str, Any], project: Path) -> tuple[str, Any]:
    r = RuleEngine(rules, project).evaluate(ToolCall(tool, args, project))
    return r.action, r.rule


def cmd(command: str) -> dict[str, Any]:
    return {"command": command}


def test_syntax() -> None:
    assert split_rule("execute_command(git push *)") == ("execute_command", "git push *")
    assert split_rule("github:*") == ("github:*", None)
    for bad in ("", "execute_command(git", "read_file()", "two words", "x)"):
        with pytest.raises(RuleSyntaxError):
            split_rule(bad)


def test_command_prefix_rules(project: Path) -> None:
    rules = [Rule("execute_command(git push *)", "deny"), Rule("execute_command(git *)", "allow")]
    assert decide(rules, "execute_command", cmd("git push origin main"), project)[0] == "deny"
    assert decide(rules, "execute_command", cmd("git push"), project)[0] == "deny"
    assert decide(rules, "execute_command", cmd("git status"), project)[0] == "allow"
    assert decide(rules, "execute_command", cmd("gitx status"), project)[0] == "continue"
    # a deny matches a command wherever it hides
    assert (
        decide(rules, "execute_command", cmd("ls && bash -c 'git push -f'"), project)[0] == "deny"
    )


def test_allow_needs_every_command_covered(project: Path) -> None:
    rules = [Rule("execute_command(npm test *)", "allow")]
    assert decide(rules, "execute_command", cmd("npm test -- -u"), project)[0] == "allow"
    assert decide(rules, "execute_command", cmd("npm test && rm -rf ~"), project)[0] == "continue"
    assert decide(rules, "execute_command", cmd("timeout 60 npm test"), project)[0] == "allow"
    # never an allow for what cannot be seen through
    assert decide(rules, "execute_command", cmd("npm test; $X"), project)[0] == "ask"
    # nor for a line that changes which program runs or what it loads
    for line in (
        "PATH=/tmp/evil npm test",
        "export NODE_OPTIONS=--require=./x.js; npm test",
    ):
        assert decide(rules, "execute_command", cmd(line), project)[0] == "continue", line
    # code loaded into every program, or sourced by every shell: asked, never allowed
    for line in ("LD_PRELOAD=./x.so npm test", "env BASH_ENV=x npm test"):
        assert decide(rules, "execute_command", cmd(line), project)[0] == "ask", line
    assert decide(rules, "execute_command", cmd("CI=1 npm test"), project)[0] == "allow"


def test_priority_then_deny_ask_allow(project: Path) -> None:
    same = [Rule("read_file(src/**)", "allow"), Rule("read_file(src/**)", "ask")]
    assert decide(same, "read_file", {"path": "src/a.py"}, project)[0] == "ask"
    prio = [Rule("read_file(src/**)", "ask"), Rule("read_file(src/a.py)", "allow", priority=5)]
    assert decide(prio, "read_file", {"path": "src/a.py"}, project)[0] == "allow"
    assert decide(prio, "read_file", {"path": "src/b.py"}, project)[0] == "ask"


def test_presets_cannot_be_overridden(project: Path) -> None:
    rules = [Rule("*", "allow", priority=1000), Rule("execute_command(sudo *)", "allow", 1000)]
    assert decide(rules, "execute_command", cmd("sudo id"), project) == ("deny", "R2")
    assert decide(rules, "read_file", {"path": "~/.ssh/id_rsa"}, project) == ("ask", "R8")


def test_path_rules(project: Path) -> None:
    rules = [Rule("read_file(**/secrets/**)", "deny"), Rule("write_file(/tmp/**)", "allow")]
    assert decide(rules, "read_file", {"path": "a/secrets/k"}, project)[0] == "deny"
    assert decide(rules, "read_file", {"path": "/opt/secrets/k"}, project)[0] == "deny"
    assert decide(rules, "read_file", {"path": "a/public/k"}, project)[0] == "continue"
    assert decide(rules, "write_file", {"path": "/tmp/x/y", "content": ""}, project)[0] == "allow"
    # a file deny rule also covers the paths a command names
    assert decide(rules, "execute_command", cmd("cat a/secrets/k"), project)[0] == "deny"
    assert decide(rules, "execute_command", cmd("cd a && cat secrets/k"), project)[0] == "deny"


def test_domain_param_and_tool_glob_rules(project: Path) -> None:
    rules = [
        Rule("fetch_url(domain:example.com)", "allow"),
        Rule("fetch_url(domain:*.evil.com)", "deny"),
        Rule("dispatch_agent(agent:reviewer)", "ask"),
        Rule("github:*", "deny"),
    ]
    assert decide(rules, "fetch_url", {"url": "https://example.com/x"}, project)[0] == "allow"
    assert (
        decide(rules, "fetch_url", {"url": "https://example.com.evil.net/"}, project)[0]
        == "continue"
    )
    assert decide(rules, "fetch_url", {"url": "https://a.b.evil.com/"}, project)[0] == "deny"
    assert (
        decide(rules, "dispatch_agent", {"agent": "reviewer", "prompt": "x"}, project)[0] == "ask"
    )
    assert decide(rules, "github:create_issue", {"title": "x"}, project)[0] == "deny"
    assert decide(rules, "gitlab:create_issue", {"title": "x"}, project)[0] == "continue"


def write_settings(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_settings_are_loaded_with_scope(project: Path) -> None:
    write_settings(
        project / ".codingcode" / "settings.json",
        {
            "permissions": {
                "deny": ["execute_command(rm *)"],
                "rules": [{"rule": "read_file(x)", "action": "ask", "priority": 3}],
            }
        },
    )
    policy = load_policy(load_settings(project))
    assert [(r.text, r.action, r.scope, r.priority) for r in policy.rules] == [
        ("execute_command(rm *)", "deny", Scope.PROJECT, 0),
        ("read_file(x)", "ask", Scope.PROJECT, 3),
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"permissions": {"allow": ["execute_command(git"]}}, "permissions.allow[0]"),
        ({"permissions": {"deny": [5]}}, "permissions.deny[0]"),
        ({"permissions": {"alow": []}}, "permissions.alow"),
        ({"permissions": {"defaultMode": "yolo"}}, "permissions.defaultMode"),
        ({"permissions": []}, "permissions"),
    ],
)
def test_invalid_settings_name_file_and_entry(project: Path, data: Any, expected: str) -> None:
    path = project / ".codingcode" / "settings.json"
    write_settings(path, data)
    with pytest.raises(SettingsError) as err:
        load_policy(load_settings(project))
    assert str(path) in err.value.message and expected in err.value.message


def test_untrusted_project_grants_are_dropped_restrictions_kept(project: Path) -> None:
    write_settings(
        project / ".codingcode" / "settings.json",
        {
            "permissions": {
                "allow": ["*"],
                "deny": ["execute_command(rm *)"],
                "defaultMode": "bypass",
            }
        },
    )
    policy = load_policy(load_settings(project)).without_untrusted_grants()  # not trusted
    assert [r.text for r in policy.rules] == ["execute_command(rm *)"]
    assert policy.default_mode is None


def test_add_and_remove_rule_atomically(project: Path) -> None:
    path = project / ".codingcode" / "settings.local.json"
    assert add_rule(path, "allow", "execute_command(npm test *)", project=project)
    assert not add_rule(path, "allow", "execute_command(npm test *)", project=project)
    assert json.loads(path.read_text())["permissions"]["allow"] == ["execute_command(npm test *)"]
    assert remove_rule(path, "execute_command(npm test *)", project=project) == 1
    assert load_policy(load_settings(project)).rules == []


def test_suggestions_generalise(project: Path) -> None:
    def s(tool: str, args: dict[str, Any]) -> str | None:
        return suggest_rule(ToolCall(tool, args, project))

    assert s("execute_command", cmd("npm run test -- --watch")) == "execute_command(npm run test *)"
    assert s("execute_command", cmd("git push origin main")) == "execute_command(git push *)"
    assert s("execute_command", cmd("ls -la")) == "execute_command(ls *)"
    assert s("execute_command", cmd("ls && git status")) is None
    assert s("execute_command", cmd("$X")) is None
    assert s("edit_file", {"path": "src/a/b.py"}) == "edit_file(src/a/**)"
    assert (
        s("fetch_url", {"url": "https://docs.python.org/3/"}) == "fetch_url(domain:docs.python.org)"
    )


_token = st.from_regex(r"[a-z][a-z0-9._-]{0,6}", fullmatch=True)


@settings(max_examples=150, deadline=None)
@given(_token, st.lists(_token, max_size=4), _token)
def test_prefix_rule_matches_exactly_its_program(prog: str, args: list[str], other: str) -> None:
    from codingcode.approval.presets import PRIVILEGE, SHUTDOWN

    # bash's reserved words are not programs: `if a` is a syntax error (asked), not a command
    reserved = {"if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while",
                "until", "do", "done", "in", "function", "time", "coproc"}  # fmt: skip
    special = (
        PRIVILEGE | SHUTDOWN | reserved | {"init", "telinit", "chmod", "rm", "find", "systemd-run"}
    )
    assume(prog not in special and other not in special)
    project = Path("/p")
    rules = [Rule(f"execute_command({prog} *)", "allow")]
    line = " ".join([prog, *args])
    assert decide(rules, "execute_command", cmd(line), project)[0] == "allow"
    if other != prog:
        assert decide(rules, "execute_command", cmd(f"{other} {prog}"), project)[0] == "continue"
        assert decide(rules, "execute_command", cmd(f"{prog}x {other}"), project)[0] == "continue"


_seg = st.from_regex(r"[a-z]{1,5}", fullmatch=True)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_seg, min_size=1, max_size=4),
    st.lists(st.sampled_from(["./", "/", "x/../"]), max_size=4),
)
def test_path_spellings_do_not_dodge_a_deny(parts: list[str], noise: list[str]) -> None:
    project = Path("/p")
    target = "/etc/" + "/".join(parts)
    spelled = "/etc/" + "".join(noise) + "/".join(parts)
    rules = [Rule(f"read_file({target})", "deny")]
    assert decide(rules, "read_file", {"path": spelled}, project)[0] == "deny"


def test_home_and_root_level_path_rules(project: Path) -> None:
    import os

    home = os.path.expanduser("~")
    rules = [
        Rule("read_file(~)", "deny"),
        Rule("read_file(/)", "ask"),
        Rule("read_file(*.pem)", "ask"),
    ]
    assert decide(rules, "read_file", {"path": home}, project)[0] == "deny"
    assert decide(rules, "read_file", {"path": "/"}, project)[0] == "ask"
    assert decide(rules, "read_file", {"path": "key.pem"}, project)[0] == "ask"
    assert decide(rules, "read_file", {"path": "sub/key.pem"}, project)[0] == "continue"


def test_many_rules_keep_their_order(project: Path) -> None:
    rules = [Rule(f"execute_command(tool{i} *)", "allow") for i in range(300)]
    rules += [
        Rule("execute_command(*)", "deny", priority=-1),
        Rule("execute_command(tool7 x)", "ask", 1),
    ]
    assert decide(rules, "execute_command", cmd("tool7 x"), project)[0] == "ask"
    assert decide(rules, "execute_command", cmd("tool7 y"), project)[0] == "allow"
    assert decide(rules, "execute_command", cmd("other"), project)[0] == "deny"


@pytest.mark.parametrize(
    ("tool", "args"),
    [("read_file", {"path": "x"}), ("execute_command", {"command": "cat x"})],
)
def test_a_file_that_becomes_a_symlink_is_seen(
    project: Path, tool: str, args: dict[str, Any]
) -> None:
    target = project / "x"
    target.write_text("a")
    engine = RuleEngine([], project)
    assert engine.evaluate(ToolCall(tool, args, project)).action == "continue"
    target.unlink()
    target.symlink_to("/etc/shadow")
    assert engine.evaluate(ToolCall(tool, args, project)).rule == "R6"
