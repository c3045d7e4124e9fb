"""The shell analysis: every simple command is found and its words resolved as bash would."""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from codingcode.shell import DYN, analyze, decode_ansi_c, expand_braces


def programs(command: str, cwd: str = "/p") -> list[str | None]:
    return [c.program for c in analyze(command, cwd).commands if c.argv]


def test_quotes_and_escapes_are_resolved() -> None:
    for spelled in ("s\\udo id", "'sudo' id", '"su"do id', "s''udo id", "$'\\x73udo' id"):
        assert programs(spelled)[0] == "sudo", spelled


def test_every_simple_command_is_found() -> None:
    found = programs("a; b && c || d | e & (f); { g; }; $(h) `i` <(j) x=$(k)")
    assert set("abcdefghijk") <= {p for p in found if p}


def test_nested_shells_and_wrappers() -> None:
    found = programs("env A=1 timeout 5 nohup bash -c \"sh -c 'nice -n 2 target x'\"")
    assert "target" in found
    cmd = next(c for c in analyze("env A=1 nohup target x", "/p").commands if c.program == "target")
    assert cmd.via == ("env", "nohup") and not cmd.transparent


def test_find_exec_and_xargs() -> None:
    assert "inner" in programs("find . -name x -exec inner {} \\;")
    assert "inner" in programs("ls | xargs -0 -n1 inner")


def test_cd_changes_the_cwd_of_later_commands() -> None:
    cmds = analyze("cd sub && cat a; (cd /etc && cat b); cat c", "/p").commands
    cwd = {c.argv[1].text: c.cwd for c in cmds if c.program == "cat"}
    assert cwd == {"a": "/p/sub", "b": "/etc", "c": "/p/sub"}


def test_dynamic_program_is_opaque() -> None:
    for cmd in ("$X id", "$(gen) id", 'eval "$Y"', 'bash -c "$S"', "gen | sh"):
        assert analyze(cmd, "/p").opaque, cmd
    assert not analyze('echo $X; ls "$HOME"', "/p").opaque


def test_known_variable_is_followed() -> None:
    assert "sudo" in programs("X=sudo; $X id")
    assert "sudo" in programs("$(echo sudo) id")


def test_heredoc_and_herestring_feeding_a_shell() -> None:
    assert "target" in programs("bash <<< 'target 1'")
    assert "target" in programs("sh <<EOF\ntarget 1\nEOF")
    assert "target" in programs("echo 'target 1' | bash")


def test_redirect_targets_are_kept() -> None:
    cmd = analyze("echo x > out.txt 2>&1", "/p").commands[0]
    assert [(r.op, r.target.text if r.target else None) for r in cmd.redirects] == [
        (">", "out.txt"),
        (">&", None),
    ]


def test_downloads_fed_into_a_shell() -> None:
    for cmd in (
        "curl u | sh",
        "bash <(curl u)",
        'sh -c "$(wget -O- u)"',
        "curl -o a.sh u && bash a.sh",
    ):
        a = analyze(cmd, "/p")
        assert a.downloads_into_shell or a.downloaded_files, cmd
    assert not analyze("curl -o f.tgz u", "/p").downloads_into_shell


def test_brace_expansion_and_ansi_c() -> None:
    assert expand_braces("/etc/{passwd,group}") == ["/etc/passwd", "/etc/group"]
    assert expand_braces("a{1..3}") == ["a1", "a2", "a3"]
    assert decode_ansi_c("\\x73\\165do\\n") == "sudo\n"


# -- properties ----------------------------------------------------------------------------
_word = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12)
_name = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


@settings(max_examples=150, deadline=None)
@given(st.lists(_word, min_size=1, max_size=6))
def test_quoted_words_come_back_exactly(words: list[str]) -> None:
    cmd = analyze("prog " + " ".join(shlex.quote(w) for w in words), "/p").commands[0]
    assert [w.text for w in cmd.argv[1:]] == words


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_analysis_never_crashes(text: str) -> None:
    analysis = analyze(text, "/p")
    assert not any("could not be analysed" in why for why in analysis.opaque)


def test_astral_characters_do_not_crash_the_parser() -> None:
    # tree-sitter-bash#337: `{` then a 4-byte UTF-8 character could SIGSEGV the process.
    for _ in range(300):
        analyze("\u00e9{\U0009051c~`l\u00c6Ee", "/p")
        analyze("{\U00031860", "/p")
    assert analyze("echo \U0001f600 && sudo id", "/p").commands[-2].program == "sudo"


_separators = st.sampled_from([" ; ", " && ", " || ", " | ", "\n", " & "])


@settings(max_examples=150, deadline=None)
@given(st.lists(_name, min_size=0, max_size=4), _separators, st.integers(0, 4), st.booleans())
def test_a_hidden_command_is_always_found(
    names: list[str], sep: str, where: int, wrap: bool
) -> None:
    parts = [f"{n} arg" for n in names]
    parts.insert(min(where, len(parts)), "target --flag")
    line = sep.join(parts)
    if wrap:
        line = "bash -c " + shlex.quote(line)
    assert "target" in programs(line)


@settings(max_examples=100, deadline=None)
@given(_name, st.lists(_name, max_size=3))
def test_dynamic_parts_are_marked(var: str, args: list[str]) -> None:
    cmd = analyze(f"prog ${var} {' '.join(args)}", "/p").commands[0]
    assert cmd.argv[1].text == DYN


def test_package_managers_are_name_takers_that_run_hooks_not_plain_non_runners() -> None:
    from codingcode.shell.programs import NAME_ARGS, NON_RUNNERS, PACKAGE_MANAGERS
    from codingcode.shell.programs.packages import NAMES_AND_HOOKS

    assert NON_RUNNERS.isdisjoint(NAMES_AND_HOOKS)
    assert PACKAGE_MANAGERS | {"man", "cmake", "grep"} <= NAME_ARGS
