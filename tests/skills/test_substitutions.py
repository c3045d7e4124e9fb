"""A skill's instructions with its arguments put in, as Claude Code documents it: $ARGUMENTS,
$ARGUMENTS[N] / $N from 0, named arguments, ${CLAUDE_SKILL_DIR}, ${CLAUDE_SESSION_ID}."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codingcode.config import Scope
from codingcode.skills.loader import parse_skill
from codingcode.skills.substitutions import expand_skill_body

HERE = Path("/skills/deploy")


def expand(body: str, arguments: str, **kw: object) -> str:
    return expand_skill_body(body, arguments, directory=HERE, **kw)  # type: ignore[arg-type]


def test_positions_count_from_zero_and_respect_quotes() -> None:
    body = "Move $0 from $1 to $ARGUMENTS[2]; all: $ARGUMENTS; past the end: [$3]"
    assert expand(body, '"my widget" React Vue') == (
        'Move my widget from React to Vue; all: "my widget" React Vue; past the end: []'
    )


def test_the_skill_folder_and_the_session_are_named() -> None:
    body = "python ${CLAUDE_SKILL_DIR}/scripts/lint.py --log /tmp/${CLAUDE_SESSION_ID}.log"
    assert expand(body, "", session_id="s-1") == (
        "python /skills/deploy/scripts/lint.py --log /tmp/s-1.log"
    )


def test_named_arguments_take_their_words_and_leave_other_dollars_alone() -> None:
    body = "Fix issue $issue on $branch (echo $HOME; $10 is position 10)"
    assert expand(body, "42", names=("issue", "branch")) == (
        "Fix issue 42 on  (echo $HOME;  is position 10)\n\nARGUMENTS: 42"
    )


def test_instructions_without_arguments_get_them_appended() -> None:
    assert expand("Review the code.", "src/a.py") == "Review the code.\n\nARGUMENTS: src/a.py"
    # a body naming only positions still gets the whole line, as Claude Code does
    assert expand("Look at $0.", "a b") == "Look at a.\n\nARGUMENTS: a b"
    assert expand("Review the code.", "  ") == "Review the code."


words = st.lists(st.text(alphabet="abc xyz'\"-_1", min_size=1, max_size=6), max_size=5)


@given(words)
def test_every_position_is_the_shell_word_or_empty(items: list[str]) -> None:
    line = " ".join(shlex.quote(w) for w in items)
    body = " | ".join(f"$ARGUMENTS[{i}]" for i in range(6)) + " || $ARGUMENTS"
    got = expand(body, line)
    expected = shlex.split(line)
    parts = got.split(" || ")[0].split(" | ")
    assert parts == [expected[i] if i < len(expected) else "" for i in range(6)]


@pytest.mark.parametrize(
    ("front", "names"),
    [
        ("arguments: [issue, branch]\n", ("issue", "branch")),
        ("arguments: issue branch\n", ("issue", "branch")),
        ("arguments:\n  - issue\n  - 7bad\n  - {x: 1}\n", ("issue",)),
        ("arguments: 3\n", ()),
    ],
)
def test_the_front_matter_names_the_arguments(
    tmp_path: Path, front: str, names: tuple[str, ...]
) -> None:
    path = tmp_path / "fix" / "SKILL.md"
    path.parent.mkdir()
    path.write_text(f"---\nname: fix\ndescription: Fix.\n{front}---\nFix $issue.\n")
    skill = parse_skill(path, Scope.PROJECT, path.read_bytes())
    assert skill.argument_names == names
