"""The confirmation: plain words, the six answers, the rule a grant saves, real diffs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from codingcode.approval.confirm import (
    Answer,
    ConfirmRequest,
    Reply,
    describe_call,
    offered,
    question_text,
)
from codingcode.approval.pipeline import ToolCall
from codingcode.capabilities import CapabilitySet
from codingcode.tui.confirm import TerminalConfirmer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("y\n", Reply(Answer.ALLOW)),
        ("s\n\n", Reply(Answer.SESSION)),
        ("p\nexecute_command(npm test)\n", Reply(Answer.ALWAYS, rule="execute_command(npm test)")),
        ("u\n\n", Reply(Answer.ALWAYS_USER)),
        ("n\n", Reply(Answer.DENY)),
        ("t\nuse make test instead\n", Reply(Answer.DENY, message="use make test instead")),
        ("\n", Reply(Answer.DENY)),
        ("", Reply(Answer.DENY)),
        ("bogus\n", Reply(Answer.DENY)),
    ],
)
async def test_terminal_answers(project: Path, typed: str, expected: Reply) -> None:
    out = io.StringIO()
    confirmer = TerminalConfirmer(stdin=io.StringIO(typed), stdout=out)
    call = ToolCall("execute_command", {"command": "npm test"}, project)
    answer = await confirmer.confirm(
        ConfirmRequest(call, "no rule decided", "execute_command(npm test *)")
    )
    assert answer == expected
    shown = out.getvalue()
    assert "$ npm test" in shown and "execute_command(npm test *)" in shown
    assert "y) yes, once" in shown and "t) no, and tell the model why" in shown


async def test_no_grant_when_a_preset_asked(project: Path) -> None:
    out = io.StringIO()
    confirmer = TerminalConfirmer(stdin=io.StringIO("p\n"), stdout=out)
    call = ToolCall("read_file", {"path": ".env"}, project)
    request = ConfirmRequest(call, "R9", "read_file(.env)", rule="R9", preset=True)
    assert [k for k, _, _ in offered(request)] == ["y", "n", "t"]
    assert await confirmer.confirm(request) == Reply(Answer.DENY)
    assert "always" not in out.getvalue()
    assert "built-in rule 'R9'" in out.getvalue()


def test_the_question_says_what_why_and_the_capabilities(project: Path) -> None:
    call = ToolCall("execute_command", {"command": "cat .env"}, project)
    caps = CapabilitySet(read_paths=frozenset({project / ".env"}))
    text = question_text(ConfirmRequest(call, "R9 reason", None, "R9", True, caps))
    assert text.startswith("Run a command (execute_command)")
    assert "$ cat .env" in text
    assert "Why you are asked: the built-in rule 'R9' asks: R9 reason." in text
    assert f"the sandbox lets it: read {project / '.env'}" in text
    assert "[" not in text  # no markup for a renderer to eat


def test_an_edit_is_shown_as_a_real_diff(project: Path) -> None:
    body = "".join(f"line {i}\n" for i in range(1, 21))
    (project / "a.py").write_text(body)
    call = ToolCall(
        "edit_file", {"path": "a.py", "old_string": "line 10\n", "new_string": "ten\n"}, project
    )
    shown = describe_call(call)
    assert shown.splitlines()[:3] == ["--- a/a.py", "+++ b/a.py", "@@ -7,7 +7,7 @@"]
    assert "-line 10" in shown and "+ten" in shown and " line 7" in shown and " line 13" in shown
    assert "line 6" not in shown  # three lines of context, no more


def test_an_edit_that_would_fail_says_so(project: Path) -> None:
    (project / "a.py").write_text("x\nx\nx\n")
    call = ToolCall("edit_file", {"path": "a.py", "old_string": "x", "new_string": "y"}, project)
    assert "occurs 3 times" in describe_call(call)


def test_a_long_write_is_cut_with_a_count(project: Path) -> None:
    call = ToolCall(
        "write_file", {"path": "big.txt", "content": "".join(f"{i}\n" for i in range(500))}, project
    )
    shown = describe_call(call, max_lines=20)
    assert shown.splitlines()[0] == "--- /dev/null"
    assert "more diff lines (+500 -0 in all)" in shown
    assert len(shown.splitlines()) == 21
