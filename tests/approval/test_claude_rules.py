"""Claude Code's permission syntax wherever rules are written: translated to ours with
Claude Code's matching (``:*`` a prefix at a word boundary, gitignore-style paths, ``//``
absolute, ``~`` home), named as written, and — a hypothesis test — ``Bash(...)`` rules give
through ``check --batch`` the same decisions as the equivalent rules in our own syntax."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codingcode.approval.call import ToolCall
from codingcode.approval.rules import Rule, RuleEngine, RuleSyntaxError
from codingcode.approval.rules.syntax import rule_texts
from codingcode.paths import home_dir
from tests.conftest import run_cli


@pytest.mark.parametrize(
    ("claude", "ours"),
    [
        ("Bash(npm test:*)", ("execute_command(npm test *)",)),
        ("Bash(git diff:*)", ("execute_command(git diff *)",)),
        ("Bash(ls)", ("execute_command(ls)",)),
        ("Bash", ("execute_command",)),
        (
            "Read(./secrets/**)",
            ("read_file(secrets/**)", "search_code(secrets/**)", "search_files(secrets/**)"),
        ),
        ("Read(~/x)", ("read_file(~/x)", "search_code(~/x)", "search_files(~/x)")),
        ("Read(*.env)", ("read_file(**/*.env)", "search_code(**/*.env)", "search_files(**/*.env)")),
        (
            "Read(//etc/hosts)",
            ("read_file(/etc/hosts)", "search_code(/etc/hosts)", "search_files(/etc/hosts)"),
        ),
        ("Edit(src/**)", ("edit_file(src/**)", "write_file(src/**)")),
        ("Edit(/docs/**)", ("edit_file(/base/docs/**)", "write_file(/base/docs/**)")),
        ("Edit(build/)", ("edit_file(**/build/**)", "write_file(**/build/**)")),
        ("Write", ("write_file",)),
        ("Glob", ("search_files",)),
        ("Grep", ("search_code",)),
        ("WebFetch(domain:example.com)", ("fetch_url(domain:example.com)",)),
        ("WebSearch", ("web_search",)),
        ("Task", ("dispatch_agent",)),
        ("TodoWrite", ("todo_write",)),
        ("NotebookEdit", ("edit_file",)),
        ("mcp__github", ("github:*",)),
        ("mcp__github__create_issue", ("github:create_issue",)),
        ("execute_command(git log *)", ("execute_command(git log *)",)),
    ],
)
def test_claude_rules_translate(claude: str, ours: tuple[str, ...]) -> None:
    assert rule_texts(claude, Path("/base")) == ours


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Bassh(npm test)", "did you mean 'Bash'"),
        ("Bash(npm test", "must end with ')'"),
        ("Read()", "empty"),
        ("git push", "not a tool name"),
    ],
)
def test_a_rule_in_neither_syntax_is_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(RuleSyntaxError) as err:
        rule_texts(text)
    assert reason in str(err.value)


def _decide(
    project: Path, written: str, action: str, tool: str, args: dict[str, str]
) -> str | None:
    rules = [Rule(t, action, written=written) for t in rule_texts(written, project)]  # type: ignore[arg-type]
    hit = RuleEngine(rules, project).evaluate_user(ToolCall(tool, args, project))
    return hit.rule if hit is not None and hit.action == action else None


def test_claude_paths_match_as_claude_code_documents(project: Path) -> None:
    assert _decide(project, "Read(./secrets/**)", "deny", "read_file", {"path": "secrets/k"})
    assert _decide(project, "Read(./secrets/**)", "deny", "read_file", {"path": "src/k"}) is None
    # no slash inside: at any depth (gitignore)
    assert _decide(project, "Read(*.env)", "deny", "read_file", {"path": "a/b/prod.env"})
    assert _decide(project, "Read(~/x)", "deny", "read_file", {"path": f"{home_dir()}/x"})
    assert _decide(project, "Read(//etc/hosts)", "deny", "read_file", {"path": "/etc/hosts"})
    assert _decide(
        project, "Edit(src/**)", "deny", "write_file", {"path": "src/a.py", "content": ""}
    )
    # the rule is named as written
    assert (
        _decide(project, "Bash(npm test:*)", "allow", "execute_command", {"command": "npm test -x"})
        == "Bash(npm test:*)"
    )
    # `:*` is a prefix at a word boundary, and a compound command needs every part
    assert _decide(project, "Bash(npm:*)", "allow", "execute_command", {"command": "npmx"}) is None
    assert (
        _decide(
            project,
            "Bash(npm test:*)",
            "allow",
            "execute_command",
            {"command": "npm test && rm -rf x"},
        )
        is None
    )
    assert _decide(project, "Bash(ls)", "allow", "execute_command", {"command": "ls"})
    assert _decide(project, "Bash(ls)", "allow", "execute_command", {"command": "ls -la"}) is None
    assert _decide(project, "mcp__github", "deny", "github:create_issue", {"title": "x"})


WORDS = st.sampled_from(["git", "npm", "ls", "test", "diff", "run", "status", "-x", "a.txt"])
PREFIX = st.lists(WORDS, min_size=1, max_size=2).map(" ".join)
COMMAND = st.lists(PREFIX, min_size=1, max_size=2).flatmap(
    lambda parts: st.sampled_from([" && ", " | ", "; "]).map(lambda sep: sep.join(parts))
)


def _batch(project: Path, env: dict[str, str], commands: list[str]) -> list[tuple[str, str]]:
    lines = "".join(
        json.dumps({"tool": "execute_command", "args": {"command": c}}) + "\n" for c in commands
    )
    r = run_cli(["check", "--batch"], cwd=project, input=lines, env=env)
    assert r.code == 0, r.stderr
    out = [json.loads(line) for line in r.stdout.splitlines()]
    return [(o["decision"], o["layer"]) for o in out]


@pytest.mark.e2e
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    rules=st.lists(
        st.tuples(st.sampled_from(["allow", "ask", "deny"]), PREFIX, st.booleans()),
        min_size=1,
        max_size=4,
    ),
    commands=st.lists(COMMAND, min_size=1, max_size=12),
)
def test_bash_rules_decide_as_our_own_syntax_through_check_batch(
    tmp_path_factory: pytest.TempPathFactory,
    rules: list[tuple[str, str, bool]],
    commands: list[str],
) -> None:
    base = tmp_path_factory.mktemp("same")
    env = {"CODINGCODE_TRUST_ALL": "1"}
    claude, ours = base / "claude", base / "ours"
    for root, form in ((claude, "claude"), (ours, "ours")):
        data: dict[str, list[str]] = {"allow": [], "ask": [], "deny": []}
        for action, prefix, wildcard in rules:
            if form == "claude":
                data[action].append(f"Bash({prefix}:*)" if wildcard else f"Bash({prefix})")
            else:
                data[action].append(
                    f"execute_command({prefix} *)" if wildcard else f"execute_command({prefix})"
                )
        where = root / (".claude" if form == "claude" else ".codingcode") / "settings.json"
        where.parent.mkdir(parents=True)
        where.write_text(json.dumps({"permissions": data}))
    assert _batch(claude, env, commands) == _batch(ours, env, commands)
