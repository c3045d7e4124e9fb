"""The terminal prompt: shows the call and the rule always/never would save, reads the answer."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from codingcode.approval.confirm import Answer, ConfirmRequest, TerminalConfirmer, describe_call
from codingcode.approval.pipeline import ToolCall

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("a\n", Answer.ALLOW),
        ("w\n", Answer.ALWAYS),
        ("never\n", Answer.NEVER),
        ("\n", Answer.DENY),
        ("", Answer.DENY),
    ],
)
async def test_terminal_answers(project: Path, typed: str, expected: Answer) -> None:
    out = io.StringIO()
    confirmer = TerminalConfirmer(stdin=io.StringIO(typed), stdout=out)
    call = ToolCall("execute_command", {"command": "npm test"}, project)
    answer = await confirmer.confirm(
        ConfirmRequest(call, "no rule decided", "execute_command(npm test *)")
    )
    assert answer is expected
    shown = out.getvalue()
    assert "$ npm test" in shown and "execute_command(npm test *)" in shown
    if expected in (Answer.ALWAYS, Answer.NEVER):
        assert "saving" in shown


async def test_no_always_without_a_rule(project: Path) -> None:
    confirmer = TerminalConfirmer(stdin=io.StringIO("w\n"), stdout=io.StringIO())
    call = ToolCall("read_file", {"path": ".env"}, project)
    assert await confirmer.confirm(ConfirmRequest(call, "R9", None)) is Answer.DENY


def test_an_edit_is_shown_as_a_diff(project: Path) -> None:
    call = ToolCall(
        "edit_file", {"path": "a.py", "old_string": "x = 1\n", "new_string": "x = 2\n"}, project
    )
    shown = describe_call(call)
    assert "-x = 1" in shown and "+x = 2" in shown
