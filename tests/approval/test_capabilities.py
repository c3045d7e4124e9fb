"""Issue 11 part 2: the approval's decision carries the capability set the sandbox enforces.

Unit tests of :func:`capabilities_for`, and ground truth through the real runner and a
real sandbox: what the user approved is exactly what the command could read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from codingcode.approval.capabilities import capabilities_for, deny_rule_masks
from codingcode.approval.confirm import ScriptedConfirmer, question_text
from codingcode.approval.pipeline import ToolCall
from codingcode.approval.rules import Rule
from codingcode.errors import DeniedError
from codingcode.runner import build_runner
from codingcode.workspace import Workspace
from tests.sandbox.conftest import BWRAP_PROBLEM, LANDLOCK_PROBLEM

PY = sys.executable


def caps(project: Path, command: str) -> tuple[set[str], set[str]]:
    c = capabilities_for(ToolCall("execute_command", {"command": command}, project))
    rel = lambda ps: {str(p.relative_to(project)) for p in ps}  # noqa: E731
    return rel(c.read_paths), rel(c.write_paths)


@pytest.fixture
def envproject(project: Path) -> Path:
    (project / ".env").write_text("API_KEY=approved-secret\n")
    (project / "sub").mkdir()
    (project / "sub" / ".env").write_text("API_KEY=other-secret\n")
    (project / "notes.txt").write_text("hello\n")
    return project


def test_named_paths_read_and_written(envproject: Path) -> None:
    assert caps(envproject, "cat .env") == ({".env"}, set())
    assert caps(envproject, "cat .env > notes.txt") == ({".env"}, {"notes.txt"})
    assert caps(envproject, "echo X=1 >> .env") == (set(), {".env"})
    assert caps(envproject, "sed -i s/a/b/ sub/.env") == (set(), {"sub/.env"})
    assert caps(envproject, "cp .env notes.txt") == ({".env"}, {"notes.txt"})
    assert caps(envproject, "cd sub && cat .env") == ({"sub", "sub/.env"}, set())
    assert caps(envproject, "python3 app.py --env-file=.env") == ({".env"}, set())


def test_what_names_nothing(envproject: Path) -> None:
    # (`$(echo .env)` is seen through by the analysis; `$(cat f)` is only known at run time)
    for command in ["cat .env*", "cat $F", "cat $(cat f)", "echo .env", "cat missing"]:
        assert caps(envproject, command) == (set(), set()), command


def test_file_tools_name_their_path(envproject: Path) -> None:
    call = ToolCall(
        "read_file",
        {"path": ".env"},
        envproject,
        arg_roles={"path": "path"},
        effects=frozenset({"reads"}),
    )
    assert capabilities_for(call).read_paths == {envproject / ".env"}


def test_deny_rules_on_read_paths_become_unexposable_masks(project: Path) -> None:
    rules = [
        Rule("read_file(**/secrets/**)", "deny"),
        Rule("search_files(/srv/keys/*)", "deny"),
        Rule("read_file(~/private)", "deny"),
        Rule("write_file(build/**)", "deny"),  # a write rule: not a read mask
        Rule("read_file(src/**)", "allow"),
        Rule("execute_command(rm *)", "deny"),
        Rule("read_file", "deny"),
    ]
    masks = deny_rule_masks(rules, project)
    assert [m.pattern for m in masks] == [
        "**/secrets/**",
        "/srv/keys/*",
        str(Path("~/private").expanduser()),
    ]
    assert all(not m.exposable and m.origin.startswith("deny rule ") for m in masks)


def test_a_refused_call_carries_no_capabilities(envproject: Path) -> None:
    import anyio

    runner = build_runner(
        Workspace.load(envproject), audit=False, confirmer=ScriptedConfirmer(["deny"])
    )
    with pytest.raises(DeniedError):
        anyio.run(runner.run, "execute_command", {"command": "cat .env"})


def test_the_question_carries_what_a_yes_would_let_the_call_see(envproject: Path) -> None:
    import anyio

    confirmer = ScriptedConfirmer(["deny"])
    runner = build_runner(Workspace.load(envproject), audit=False, confirmer=confirmer)
    with pytest.raises(DeniedError):
        anyio.run(runner.run, "execute_command", {"command": "cat .env"})
    (request,) = confirmer.requests
    assert request.capabilities.read_paths == {envproject / ".env"}
    assert "the sandbox lets it: read" in question_text(request)


# -- ground truth: the real runner, the real sandbox ---------------------------------------------

needs_sandbox = pytest.mark.skipif(
    BWRAP_PROBLEM is not None and LANDLOCK_PROBLEM is not None, reason="no sandbox here"
)


def run(project: Path, command: str, answers: list[str]) -> str:
    import anyio

    confirmer = ScriptedConfirmer(answers)
    runner = build_runner(Workspace.load(project), audit=False, confirmer=confirmer)
    try:
        return str(anyio.run(runner.run, "execute_command", {"command": command}))
    finally:
        runner.launcher.close()


@needs_sandbox
def test_approved_cat_env_reads_exactly_that_file(envproject: Path) -> None:
    # sub/.env is reached through a substitution only known at run time: never named.
    (envproject / "which").write_text("sub\n")
    text = run(envproject, "cat .env; cat $(cat which)/.env", ["allow"])
    assert "approved-secret" in text  # R9 asked, the user allowed: that file is shown
    assert "other-secret" not in text  # ... and nothing more
    assert "sub/.env is masked by the sandbox" in text  # the failure is explained


@needs_sandbox
def test_analysis_blind_spot_is_backed_by_the_mask(envproject: Path) -> None:
    # The user allows a script; the script reads .env, which the command never named.
    (envproject / "peek.py").write_text("print(open('.env').read())\n")
    text = run(envproject, f"{PY} peek.py", ["allow"])
    assert "approved-secret" not in text
    assert ".env is masked by the sandbox" in text
    assert "name it literally" in text


@needs_sandbox
def test_check_prints_the_capability_set(envproject: Path) -> None:
    from tests.conftest import run_cli

    r = run_cli(["check", "execute_command", json.dumps({"command": "cat .env"})], cwd=envproject)
    result = json.loads(r.stdout)
    assert result["decision"] == "ask"
    assert result["capabilities"]["read_paths"] == [str(envproject / ".env")]
    assert result["capabilities"]["exposes"] == [
        {"path": str(envproject / ".env"), "access": "read-only"}
    ]
    r = run_cli(["check", "execute_command", json.dumps({"command": "ls"})], cwd=envproject)
    assert json.loads(r.stdout)["capabilities"]["exposes"] == []
