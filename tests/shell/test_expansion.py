"""Differential tests: the analysis expands words exactly as bash does (bash is the oracle).

Random values and expansions (word splitting with IFS, ``${!ref}``, case operators, ``+=``,
``declare -l``, substrings, replacement, defaults, brace expansion, ``$(echo …)`` and
``printf %b``) are given both to real bash, which prints each resulting word, and to the
analysis, whose resolved argv of the same ``printf`` must be identical.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codingcode.shell import DYN, analyze

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")

VALUE = st.text(alphabet="ab ,:xY-", min_size=0, max_size=8)
EXPANSIONS = [
    "$x",
    '"$x"',
    "${x}",
    "${x,,}",
    "${x^^}",
    "${x@L}",
    "${x@U}",
    "${#x}",
    "${x:1:2}",
    "${x/a/Q}",
    "${x//a/Q}",
    "${x#a}",
    "${x%b}",
    "${x:-dflt}",
    "${!r}",
    "$(echo $x)",
    '"$(printf %s "$x")"',
    "pre$x",
    "{p,q}$x",
    "p{1..3}",
]


def _bash_words(script: str) -> list[str]:
    out = subprocess.run(
        [BASH or "bash", "-c", script], capture_output=True, timeout=10, check=False
    ).stdout.decode()
    words = out.split("\0")[:-1]
    assert words[:1] == ["START"], (script, out)
    return words[1:]


def _our_words(script: str) -> list[str] | None:
    a = analyze(script, "/p")
    printfs = [
        c for c in a.commands if c.program == "printf" and c.argv[1:2] and c.argv[1].text == "%s\\0"
    ]
    if not printfs:
        return None
    words = [w.text for w in printfs[-1].argv[2:]]
    assert words[:1] == ["START"], (script, words)
    words = words[1:]
    return None if any(DYN in w for w in words) else words


@settings(max_examples=150, deadline=None)
@given(
    value=VALUE,
    ifs=st.sampled_from([None, ",", ":", " ,"]),
    expansion=st.sampled_from(EXPANSIONS),
    append=st.sampled_from(["", "+=Z", "+=' b'"]),
    lower=st.booleans(),
)
def test_expansion_matches_bash(
    value: str, ifs: str | None, expansion: str, append: str, lower: bool
) -> None:
    setup = f"{'declare -l ' if lower else ''}x={shlex.quote(value)}; r=x; "
    if append:
        setup += f"x{append}; "
    if ifs is not None:
        setup += f"IFS={shlex.quote(ifs)}; "
    script = setup + f"printf '%s\\0' START {expansion}"
    ours = _our_words(script)
    if ours is None:
        return  # the analysis says "unknown" (never a wrong known value): asked, not guessed
    assert ours == _bash_words(script), script


def test_the_differential_test_can_fail() -> None:
    """A sanity check of the harness itself: a wrong guess would be caught."""
    assert _bash_words("x='a b'; printf '%s\\0' START $x") == ["a", "b"]
    assert _our_words("x='a b'; printf '%s\\0' START $x") == ["a", "b"]
    assert _our_words("x='a b'; printf '%s\\0' START \"$x\"") == ["a b"]
