"""Options before the sub-command are moved to it or refused; rule lists split right."""

from __future__ import annotations

import pytest
import typer.main
from hypothesis import given, settings
from hypothesis import strategies as st

from codingcode.cli import GlobalOptionError, _register_commands, app, hoist_global_options
from codingcode.cli.agent_commands import split_rule_list

_ROOT: list[object] = []


@pytest.fixture(scope="module")
def root() -> object:
    if not _ROOT:  # register once: each registration adds the commands again
        _register_commands()
        _ROOT.append(typer.main.get_command(app))
    return _ROOT[0]


def test_moved_to_the_sub_command(root: object) -> None:
    assert hoist_global_options(["--mode", "plan", "check", "t", "{}"], root) == [
        "check",
        "--mode",
        "plan",
        "t",
        "{}",
    ]
    assert hoist_global_options(["-p", "/x", "rules", "list"], root) == [
        "rules",
        "list",
        "-p",
        "/x",
    ]
    assert hoist_global_options(["--model=openai:m", "-c", "run", "hi"], root) == [
        "run",
        "--model",
        "openai:m",
        "-c",
        "hi",
    ]
    assert hoist_global_options(["-p/x", "tools"], root) == ["tools", "-p", "/x"]


def test_left_alone(root: object) -> None:
    for argv in (
        ["--mode", "plan"],  # the app's
        ["--version"],
        ["run", "--mode", "plan", "x"],
        ["--mode"],  # click reports the missing value
        ["--mode", "plan", "nosuchcommand"],
    ):
        assert hoist_global_options(argv, root) == argv


def test_refused_where_it_does_not_apply(root: object) -> None:
    with pytest.raises(GlobalOptionError, match="--model does not apply to `codingcode audit`"):
        hoist_global_options(["--model", "x", "audit"], root)
    with pytest.raises(GlobalOptionError, match="-c does not apply to `codingcode check`"):
        hoist_global_options(["-c", "check", "t", "{}"], root)


OPTIONS = st.sampled_from(["-p", "--project", "-m", "--mode", "--model", "-r", "--resume"])
WORDS = st.sampled_from(["", "x", "-", "--", "run", "tools", "-p", "-c", "a b", "é"])


@settings(deadline=None, max_examples=50)
@given(
    given_opts=st.lists(st.tuples(OPTIONS, WORDS), max_size=3),
    rest=st.lists(WORDS, max_size=4),
)
def test_never_loses_or_invents_a_word(
    root: object, given_opts: list[tuple[str, str]], rest: list[str]
) -> None:
    argv = [w for pair in given_opts for w in pair] + ["run", *rest]
    try:
        out = hoist_global_options(argv, root)
    except GlobalOptionError:
        return
    assert sorted(out) == sorted(argv)
    assert out[0] == "run" or out == argv


@given(
    st.lists(st.sampled_from(["read_file", "execute_command(git log *)", "github:*"]), max_size=5)
)
def test_rule_lists_split_outside_parentheses(rules: list[str]) -> None:
    assert split_rule_list([", ".join(rules)]) == rules
    assert split_rule_list(rules) == rules
