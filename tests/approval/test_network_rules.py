"""Issue 16: the ``network(NAME)`` clause of an allow rule, the program scopes, and how the
pipeline turns them into the call's ``capabilities.domains``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from codingcode.approval.confirm import Answer, Reply, ScriptedConfirmer
from codingcode.approval.network_scopes import (
    PROGRAM_DOMAINS,
    scoped_rule,
    with_program_network,
)
from codingcode.approval.pipeline import ToolCall
from codingcode.approval.rules import (
    Rule,
    RuleEngine,
    RuleSyntaxError,
    add_rule,
    rules_from_section,
    split_rule,
)
from codingcode.approval.rules.syntax import split_network
from codingcode.config import Scope, SettingsError
from codingcode.runner import build_runner
from codingcode.workspace import Workspace
from tests.conftest import run_cli

NPM_RULE = "execute_command(npm install *) network(registry.npmjs.org, registry.yarnpkg.com)"


def cmd(project: Path, command: str) -> ToolCall:
    return ToolCall("execute_command", {"command": command}, project)


# -- syntax -----------------------------------------------------------------------------


def test_the_clause_is_split_from_the_rule() -> None:
    assert split_network(NPM_RULE) == (
        "execute_command(npm install *)",
        ("registry.npmjs.org", "registry.yarnpkg.com"),
    )
    assert split_rule(NPM_RULE) == ("execute_command", "npm install *")
    assert split_network("execute_command(x) network(A.example.com *.Example.org a.example.com)")[
        1
    ] == ("a.example.com", "*.example.org")
    assert split_network("fetch_url network(docs.test)") == ("fetch_url", ("docs.test",))
    # not a clause: inside the SPEC, or the SPEC is left open
    assert split_network("execute_command(echo network(x))")[1] == ()
    assert split_rule("execute_command(echo network(x))") == ("execute_command", "echo network(x)")
    assert split_network("execute_command(git push *)") == ("execute_command(git push *)", ())


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("network(pypi.org)", "goes after the rule"),
        ("execute_command(x) network()", "names no domain"),
        ("execute_command(x) network(https://pypi.org)", "without a scheme"),
        ("execute_command(x) network(pypi.org:443)", "without a scheme"),
        ("execute_command(x) network(*)", "wildcard"),
        ("execute_command(x) network(a.*.org)", "wildcard"),
        (
            "execute_command(x) network(" + ", ".join(f"n{i}.test" for i in range(40)) + ")",
            "at most",
        ),
    ],
)
def test_bad_clauses_say_what_is_allowed(text: str, words: str) -> None:
    with pytest.raises(RuleSyntaxError, match=words):
        split_rule(text)


@given(st.text(max_size=80))
def test_split_network_never_crashes_and_round_trips(text: str) -> None:
    try:
        base, names = split_network(text)
    except RuleSyntaxError:
        return
    if names:
        again = split_network(f"{base} network({', '.join(names)})")
        assert again == (base, names)
    else:
        assert base == text.strip()


def test_settings_accept_the_clause_on_allow_rules_only(project: Path) -> None:
    src = project / "s.json"
    rules, _ = rules_from_section({"allow": [NPM_RULE]}, Scope.USER, src)
    assert rules[0].domains == ("registry.npmjs.org", "registry.yarnpkg.com")
    for action in ("deny", "ask"):
        with pytest.raises(SettingsError, match="allow rules only"):
            rules_from_section({action: [NPM_RULE]}, Scope.USER, src)
    with pytest.raises(SettingsError, match="allow rules only"):
        rules_from_section({"rules": [{"rule": NPM_RULE, "action": "deny"}]}, Scope.USER, src)
    # the settings file stays a list of strings: old files read as before
    old, _ = rules_from_section({"allow": ["execute_command(npm install *)"]}, Scope.USER, src)
    assert old[0].domains == ()


def test_add_rule_writes_the_clause_and_refuses_it_on_deny(project: Path) -> None:
    path = project / "settings.json"
    assert add_rule(path, "allow", NPM_RULE)
    assert json.loads(path.read_text())["permissions"]["allow"] == [NPM_RULE]
    with pytest.raises(RuleSyntaxError):
        add_rule(path, "deny", NPM_RULE)


# -- the engine ------------------------------------------------------------------------


def test_an_allow_rule_carries_its_names_to_the_calls_it_allows(project: Path) -> None:
    engine = RuleEngine(
        [Rule(NPM_RULE, "allow"), Rule("execute_command(node *)", "allow")], project
    )
    hit = engine.evaluate(cmd(project, "npm install left-pad"))
    assert hit.action == "allow" and hit.rule == NPM_RULE
    assert hit.domains == {"registry.npmjs.org", "registry.yarnpkg.com"}
    # another command: allowed by its own rule, no names
    hit = engine.evaluate(cmd(project, "node build.js"))
    assert hit.action == "allow" and hit.domains == frozenset()
    # a line with both: only the names every program was granted (here none)
    hit = engine.evaluate(cmd(project, "npm install x && node build.js"))
    assert hit.action == "allow" and hit.domains == frozenset()
    # a wrapper is transparent: the names still apply
    hit = engine.evaluate(cmd(project, "timeout 60 npm install x"))
    assert hit.action == "allow" and hit.domains == {"registry.npmjs.org", "registry.yarnpkg.com"}
    # not matched: the rules do not decide, nothing is granted
    assert engine.evaluate(cmd(project, "npm publish")).action == "continue"


def test_two_programs_granted_the_same_name_keep_it(project: Path) -> None:
    engine = RuleEngine(
        [
            Rule("execute_command(npm ci *) network(registry.npmjs.org)", "allow"),
            Rule("execute_command(pnpm i *) network(registry.npmjs.org, x.test)", "allow"),
        ],
        project,
    )
    hit = engine.evaluate(cmd(project, "npm ci && pnpm i"))
    assert hit.action == "allow" and hit.domains == {"registry.npmjs.org"}


def test_a_deny_or_ask_rule_still_wins_and_grants_nothing(project: Path) -> None:
    engine = RuleEngine(
        [Rule(NPM_RULE, "allow"), Rule("execute_command(npm install evil*)", "deny")], project
    )
    hit = engine.evaluate(cmd(project, "npm install evil-pkg"))
    assert hit.action == "deny" and hit.domains == frozenset()
    # a preset rule's ask stands too
    hit = engine.evaluate(cmd(project, "npm install x && sudo ls"))
    assert hit.action in ("ask", "deny") and hit.domains == frozenset()


def test_fetch_url_rule_with_names(project: Path) -> None:
    engine = RuleEngine([Rule("fetch_url(domain:docs.test) network(docs.test)", "allow")], project)
    hit = engine.evaluate(ToolCall("fetch_url", {"url": "http://docs.test/a"}, project))
    assert hit.action == "allow" and hit.domains == {"docs.test"}


def test_twenty_thousand_clauses_stay_fast(project: Path) -> None:
    rules = [
        Rule(f"execute_command(tool{i} *) network(r{i}.example.com)", "allow")
        for i in range(20_000)
    ]
    # This process's CPU time: the work done, whatever else the machine (or the other test
    # workers) is running at the same time.
    start = time.process_time()
    engine = RuleEngine(rules, project)
    hit = engine.evaluate(cmd(project, "tool19999 fetch"))
    elapsed = time.process_time() - start
    assert hit.domains == {"r19999.example.com"}
    assert elapsed < 10, elapsed  # linear: well under a second on an idle machine


# -- the program scopes ------------------------------------------------------------------


def test_scopes_are_the_registries() -> None:
    assert PROGRAM_DOMAINS["npm"] == ("registry.npmjs.org", "registry.yarnpkg.com")
    assert PROGRAM_DOMAINS["yarn"] == PROGRAM_DOMAINS["pnpm"] == PROGRAM_DOMAINS["npm"]
    assert PROGRAM_DOMAINS["pip"] == PROGRAM_DOMAINS["uv"] == ("pypi.org", "files.pythonhosted.org")
    assert PROGRAM_DOMAINS["cargo"] == ("crates.io", "static.crates.io", "index.crates.io")
    assert PROGRAM_DOMAINS["go"] == ("proxy.golang.org", "sum.golang.org")
    for names in PROGRAM_DOMAINS.values():
        split_rule(f"execute_command(x) network({', '.join(names)})")  # valid patterns


def test_suggestions_scope_a_package_install_to_its_registry() -> None:
    assert scoped_rule("execute_command(npm install *)") == NPM_RULE
    assert scoped_rule("execute_command(pip install *)") == (
        "execute_command(pip install *) network(pypi.org, files.pythonhosted.org)"
    )
    # running the project's code is not a reason to reach the registry
    for plain in ["npm run test", "npm test", "cargo test", "uv run pytest *", "go test *"]:
        assert scoped_rule(f"execute_command({plain})") == f"execute_command({plain})"
    assert scoped_rule("execute_command(cargo build *)").endswith(
        "network(crates.io, static.crates.io, index.crates.io)"
    )
    assert scoped_rule("execute_command(curl *)") == "execute_command(curl *)"
    assert scoped_rule(NPM_RULE) == NPM_RULE  # a clause is kept as it is
    assert scoped_rule("read_file(src/**)") == "read_file(src/**)"
    # after a blocked command: only when a refused name is the program's own
    assert scoped_rule("execute_command(npm run build)", ["evil.test", "registry.npmjs.org"]) == (
        "execute_command(npm run build) network(registry.npmjs.org, registry.yarnpkg.com)"
    )
    assert scoped_rule("execute_command(npm install *)", ["evil.test"]) == (
        "execute_command(npm install *)"
    )
    assert (
        with_program_network("execute_command(npm install *), execute_command(node x.js)")
        == f"{NPM_RULE}, execute_command(node x.js)"
    )
    assert with_program_network(None) is None


# -- the pipeline: saved, session and once -----------------------------------------------


def decide(runner: Any, command: str) -> Any:
    return anyio.run(runner.decide, "execute_command", {"command": command})


def test_saved_rule_puts_the_names_in_the_decision(project: Path) -> None:
    path = project / ".codingcode" / "settings.local.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"permissions": {"allow": [NPM_RULE]}}))
    runner = build_runner(Workspace.load(project), audit=False, assume_trusted=True)
    d = decide(runner, "npm install left-pad")
    assert d.allowed and d.capabilities.domains == {
        "registry.npmjs.org",
        "registry.yarnpkg.com",
    }


def test_an_untrusted_project_file_cannot_grant_names(project: Path) -> None:
    path = project / ".codingcode" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"permissions": {"allow": [NPM_RULE]}}))
    runner = build_runner(Workspace.load(project, trust_project_grants=False), audit=False)
    d = decide(runner, "npm install left-pad")
    assert not d.allowed and d.capabilities.domains == frozenset()


def test_session_answer_grants_the_names_for_the_session(project: Path) -> None:
    confirmer = ScriptedConfirmer([Answer.SESSION])
    runner = build_runner(Workspace.load(project), audit=False, confirmer=confirmer)
    pipeline = runner.pipeline
    assert pipeline is not None
    first = anyio.run(pipeline.decide, cmd(project, "npm install a"))
    assert first.allowed and first.capabilities.domains == {
        "registry.npmjs.org",
        "registry.yarnpkg.com",
    }
    assert pipeline.session_rules == [NPM_RULE]
    second = anyio.run(pipeline.decide, cmd(project, "npm install b"))
    assert (
        second.layer == "SessionGrant" and second.capabilities.domains == first.capabilities.domains
    )
    assert len(confirmer.requests) == 1


def test_an_edited_rule_without_names_grants_none(project: Path) -> None:
    confirmer = ScriptedConfirmer([Reply(Answer.SESSION, rule="execute_command(npm install *)")])
    runner = build_runner(Workspace.load(project), audit=False, confirmer=confirmer)
    assert runner.pipeline is not None
    d = anyio.run(runner.pipeline.decide, cmd(project, "npm install a"))
    assert d.allowed and d.capabilities.domains == frozenset()


def test_a_no_grants_nothing(project: Path) -> None:
    confirmer = ScriptedConfirmer([Answer.DENY])
    runner = build_runner(Workspace.load(project), audit=False, confirmer=confirmer)
    assert runner.pipeline is not None
    d = anyio.run(runner.pipeline.decide, cmd(project, "npm install a"))
    assert not d.allowed and d.capabilities.domains == frozenset()
    # ... though the question said what a yes would grant
    assert confirmer.requests[0].capabilities.domains == {
        "registry.npmjs.org",
        "registry.yarnpkg.com",
    }


# -- rules list ----------------------------------------------------------------------------


def test_rules_list_shows_the_names(project: Path) -> None:
    r = run_cli(["rules", "add", "allow", NPM_RULE, "--project", str(project)], cwd=project)
    assert r.code == 0, r.stderr
    r = run_cli(["rules", "list", "--json", "--project", str(project)], cwd=project)
    rows = [row for row in json.loads(r.stdout) if row["scope"] != "preset"]
    assert rows[0]["rule"] == NPM_RULE
    assert rows[0]["domains"] == ["registry.npmjs.org", "registry.yarnpkg.com"]
    r = run_cli(["rules", "list", "--project", str(project)], cwd=project)
    assert "may reach (network): registry.npmjs.org, registry.yarnpkg.com" in r.stdout
    r = run_cli(["rules", "add", "deny", NPM_RULE, "--project", str(project)], cwd=project)
    assert r.code != 0 and "allow rules only" in (r.stderr + r.stdout)
