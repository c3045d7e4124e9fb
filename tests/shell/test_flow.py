"""A program named through a variable, alias or function whose value depends on the path the
script takes is an unknown program: never the value the walk saw first or last.

Ground truth: seeded scripts combining branches, loops, background jobs, subshells,
functions, aliases, ``read``/``printf -v``/``eval``/``declare -n``, run by the real bash with
a PATH of stub programs that log their own name. Every program that really ran must be one
the analysis saw, or the analysis must say it cannot know (opaque): then it is never
read-only and never allowed unasked in the default mode.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from codingcode import shell
from codingcode.approval import readonly
from codingcode.approval.pipeline import ApprovalPipeline, ToolCall
from codingcode.approval.rules import RuleEngine
from codingcode.shell.model import DYN

BASH = shutil.which("bash")
#: Stub programs (all outside bash's builtins): each logs its name when run.
STUBS = ("cat", "ls", "head", "tail", "git", "sudo", "rm", "wc")

ISSUE_CASES = [
    "p=cat; [ 1 = 2 ] && p=ls; $p /etc/shadow",
    "p=cat; p=ls & wait; $p /etc/shadow",
    "cmd=ls; for cmd in cat; do :; done; $cmd /etc/shadow",
    "p=cat; case a in b) p=ls;; esac; $p /etc/shadow",
    "shopt -s expand_aliases\nalias ls=cat\nls /etc/shadow",
]

MORE_CASES = [
    "p=ls; read p <<< cat; $p /etc/shadow",
    "p=ls; printf -v p cat; $p /etc/shadow",
    "p=ls; mapfile -t p <<< cat; $p /etc/shadow",
    "p=ls; f() { p=cat; }; f; $p /etc/shadow",
    "p=ls; f() { $p /etc/shadow; }; p=cat; f",
    "p=ls; eval 'p=cat'; $p /etc/shadow",
    "p=ls; declare -n r=p; r=cat; $p /etc/shadow",
    "p=ls; if [ -e x ]; then :; else p=cat; fi; $p /etc/shadow",
    "p=ls; while [ -e x ]; do p=cat; done; $p /etc/shadow",
    "p=ls; for ((i=0; i<1; i++)); do p=cat; done; $p /etc/shadow",
    "p=ls; [ -e x ] || { p=cat; }; $p /etc/shadow",
    "shopt -s expand_aliases\n[ -e x ] || alias ls=cat\nls /etc/shadow",
    "shopt -s expand_aliases\nalias ls='cat;'\nls /etc/shadow",
    "p=ls; shopt -s lastpipe; echo cat | read p; $p /etc/shadow",
    "p=ls; let p=1; $p /etc/shadow",
    "hash -p /bin/cat ls; ls /etc/shadow",
    "PATH=/tmp/x:$PATH; ls /etc/shadow",
    "BASH_ALIASES[ls]=cat; ls /etc/shadow",
]


def _decide(command: str, project: Path, mode: str) -> str:
    engine = RuleEngine([], project)
    pipeline = ApprovalPipeline(engine.evaluate)
    call = ToolCall("execute_command", {"command": command}, project, mode=mode)
    return anyio.run(lambda: pipeline.decide(call, dry_run=True)).decision


@pytest.mark.parametrize("command", ISSUE_CASES + MORE_CASES)
def test_a_program_that_depends_on_the_path_is_never_read_only_nor_allowed(
    command: str, tmp_path: Path
) -> None:
    verdict = readonly.classify(command, str(tmp_path), tmp_path)
    assert not verdict.read_only, verdict.reason
    assert _decide(command, tmp_path, "default") in ("ask", "deny")


@pytest.mark.parametrize(
    "command",
    [
        "p=cat; [ 1 = 2 ] && p=ls; $p README.md",
        "cmd=ls; for cmd in cat; do :; done; $cmd README.md",
        "p=cat; case a in b) p=ls;; esac; $p README.md",
    ],
)
def test_the_same_flow_on_a_project_file_is_asked_not_denied(command: str, tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("hi\n")
    assert not readonly.classify(command, str(tmp_path), tmp_path).read_only
    assert _decide(command, tmp_path, "default") == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "ls src",
        "cd src && ls",
        "if [ -d src ]; then cd src; ls; fi",
        "p=ls; $p src",
        "git status && git diff",
    ],
)
def test_ordinary_flow_stays_read_only(command: str, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    verdict = readonly.classify(command, str(tmp_path), tmp_path)
    assert verdict.read_only, verdict.reason


# -- ground truth ---------------------------------------------------------------------------
def _program(rng: random.Random) -> str:
    return rng.choice(STUBS)


def _statement(rng: random.Random, v: str, depth: int = 0) -> str:
    """One statement that may (or may not) change ``v``, or define/call things that do."""
    p = _program(rng)
    cond = rng.choice(["[ -e y ]", "[ -e n ]", "true", "false", "[ 1 = 2 ]"])
    inner = _statement(rng, v, depth + 1) if depth < 2 else f"{v}={p}"
    choices = [
        f"{v}={p}",
        f"{cond} && {inner}",
        f"{cond} || {inner}",
        f"if {cond}; then {inner}; fi",
        f"if {cond}; then {inner}; else {v}={p}; fi",
        f"case $(echo a) in b) {inner};; a) :;; esac",
        f"for {v} in {p}; do :; done",
        f"for i in 1 2; do {inner}; done",
        f"while {cond}; do {inner}; break; done",
        f"{inner} & wait",
        f"( {inner} )",
        f"g() {{ {inner}; }}; {cond} && g",
        f"read {v} <<< {p}",
        f"printf -v {v} %s {p}",
        f"eval '{v}={p}'",
        f"declare -n r{depth}={v}; r{depth}={p}",
        f"{{ {inner}; }}",
        f"unset {v}",
    ]
    return rng.choice(choices)


def _script(rng: random.Random) -> str:
    v = rng.choice(["p", "cmd"])
    parts = [f"{v}={_program(rng)}"]
    for _ in range(rng.randint(1, 3)):
        parts.append(_statement(rng, v))
    if rng.random() < 0.3:
        a = _program(rng)
        parts.append(
            f"shopt -s expand_aliases\n{rng.choice(['[ -e y ] && ', '[ -e n ] && ', ''])}"
            f"alias {a}={_program(rng)}\n{a} target"
        )
    else:
        parts.append(f"${v} target")
    return "; ".join(parts)


def _ran(script: str, work: Path) -> set[str]:
    log = work / "log"
    log.unlink(missing_ok=True)
    env = {"PATH": str(work / "bin"), "LOG": str(log), "HOME": str(work)}
    assert BASH is not None
    subprocess.run([BASH, "-c", script], cwd=work / "cwd", env=env, capture_output=True, timeout=20)
    return set(log.read_text().split()) if log.exists() else set()


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_every_program_bash_really_runs_is_seen_or_the_line_is_opaque(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    for name in STUBS:
        stub = tmp_path / "bin" / name
        stub.write_text(f'#!/bin/sh\necho {name} >> "$LOG"\n')
        stub.chmod(0o755)
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "y").write_text("")
    rng = random.Random(2026)
    missed = []
    opaque = 0
    scripts = {_script(rng) for _ in range(400)}
    for script in sorted(scripts):
        ran = _ran(script, tmp_path)
        analysis = shell.analyze(script, str(tmp_path / "cwd"))
        unknown = bool(analysis.opaque) or any(
            c.argv and DYN in c.argv[0].text for c in analysis.commands
        )
        opaque += unknown
        seen = {c.program for c in analysis.commands}
        if not unknown and not ran <= seen:
            missed.append((script, sorted(ran - seen)))
        if unknown:
            verdict = readonly.classify(script, str(tmp_path / "cwd"), tmp_path / "cwd")
            assert not verdict.read_only, script
    assert not missed, "\n".join(map(repr, missed[:20]))
    # the generator does exercise both sides
    assert 0.2 * len(scripts) < opaque < 0.95 * len(scripts), opaque


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_generated_flows_on_a_secret_are_never_allowed_unasked(tmp_path: Path) -> None:
    rng = random.Random(7)
    for _ in range(60):
        script = _script(rng).replace("target", "/etc/shadow")
        assert _decide(script, tmp_path, "default") in ("ask", "deny"), script
        assert not readonly.classify(script, str(tmp_path), tmp_path).read_only, script


def test_flow_keeps_long_lines_linear() -> None:
    """Branches, loops and functions by the thousand cost about what as many plain
    assignments do (no copy of every variable per branch, no rescan of the text per
    function): CPU time, bounded by a ratio to the plain line measured in the same run."""
    import time

    from codingcode.shell.parse import _analyze_fresh

    n = 4000

    def cost(line: str) -> float:
        start = time.process_time()
        _analyze_fresh(line, "/tmp")
        return time.process_time() - start

    plain = cost("; ".join(f"p{i}=1" for i in range(n)))
    for line in (
        " ".join(f"if [ -e {i} ]; then p{i}=1; fi;" for i in range(n)),
        "; ".join(f"f{i}() {{ x{i}=1; }}" for i in range(n)) + "; cd src",
        " ".join(f"for i in 1; do p{i}=1; done;" for i in range(n)),
        "; ".join(f"[ -e a ] && p{i}=1" for i in range(n)),
    ):
        assert cost(line) < 15 * plain + 1.0, line[:60]
    analysis = shell.analyze(
        "x1=a1; " + " && ".join(f"x{i}=a{i}" for i in range(2, 3000)) + "; $x5 README.md", "/tmp"
    )
    assert DYN in analysis.commands[-1].argv[0].text  # x5=a5 ran only if x4=a4 did


def test_after_sourcing_an_unknown_file_no_program_is_read_only(tmp_path: Path) -> None:
    """The file may define a function or alias named like any program (ls() { ...; })."""
    (tmp_path / "src").mkdir()
    (tmp_path / "x.sh").write_text("ls() { cat /etc/shadow; }\n")
    assert readonly.classify("ls src", str(tmp_path), tmp_path).read_only
    for command in ("source ./x.sh; ls src", ". ./x.sh && ls src"):
        assert not readonly.classify(command, str(tmp_path), tmp_path).read_only, command
        assert _decide(command, tmp_path, "default") == "ask"
    # in bypass mode it still runs (in the sandbox): sourcing is ordinary work
    assert _decide("source .venv/bin/activate && ls src", tmp_path, "bypass") == "allow"


def test_each_literal_value_a_path_may_give_is_judged(tmp_path: Path) -> None:
    """$p after branches with literal values: each value may run (a sudo on one path is
    R2); with none refused it is asked in the default mode and runs in bypass mode."""
    for mode in ("default", "bypass"):
        assert _decide("p=ls; [ -e x ] && p=sudo; $p id", tmp_path, mode) == "deny"
    look_alike = "p=echo; [ 1 = 2 ] && p=ls; $p hi"
    assert not readonly.classify(look_alike, str(tmp_path), tmp_path).read_only
    assert _decide(look_alike, tmp_path, "default") == "ask"
    assert _decide(look_alike, tmp_path, "bypass") == "allow"
    # a value the line does not give (the environment's, read, a loop's word): unknown
    for command in (
        "[ 1 = 2 ] && p=ls; $p hi",
        "p=ls; read p; $p hi",
        "p=ls; for p in echo; do :; done; $p hi",
    ):
        assert shell.analyze(command, str(tmp_path)).opaque, command
        assert _decide(command, tmp_path, "bypass") == "ask", command
