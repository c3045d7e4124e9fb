"""The headless run's progress lines on stderr (cli/headless.py)."""

from __future__ import annotations

from codingcode.cli.headless import ERROR_LINE_CHARS, error_line


def test_a_denial_is_shown_whole_so_the_way_to_allow_it_is_not_cut() -> None:
    how = (
        "execute_command was denied: no rule, mode or hook decided this call and nobody can "
        "be asked (headless). To allow it, add a rule such as 'execute_command(make test)' to "
        ".codingcode/settings.json under permissions.allow, or run with --mode acceptEdits; "
        "see `codingcode rules` for the rules in force."
    )
    assert len(how) > 200
    shown = error_line("denied", how + "\n\nmore advice on a second line")
    assert shown.startswith("denied: ") and how in shown and "second line" in shown
    assert "\n" not in shown


def test_other_failures_show_their_first_line_cut_with_a_count() -> None:
    long = "x" * (ERROR_LINE_CHARS + 50)
    shown = error_line("failed", long + "\ntraceback-ish detail")
    assert shown == f"failed: {'x' * ERROR_LINE_CHARS}… (50 more characters)"
    assert error_line("not_found", "no such file: a.py\nDid you mean b.py?") == (
        "not_found: no such file: a.py"
    )
