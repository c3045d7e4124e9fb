"""``codingcode check`` and ``codingcode tool`` without Typer (``codingcode.cli.fast``) end
exactly as the Typer command does: the same output, messages and exit code, each command
line run both ways for real (a process each)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codingcode.cli.fast import parse

#: Typer's path for the same command line (what `codingcode` ran before the fast path).
TYPER = "import sys; from codingcode.cli import run; sys.argv[0] = 'codingcode'; run()"
#: The fast path, and a witness that Typer was never imported.
FAST = (
    "import sys, atexit\n"
    "atexit.register(lambda: sys.stderr.write('TYPER LOADED' if 'typer' in sys.modules else ''))\n"
    "sys.argv[0] = 'codingcode'\n"
    "from codingcode.__main__ import main\n"
    "main()\n"
)


def _both(args: list[str], cwd: Path, stdin: str = "") -> tuple[tuple[int, str, str], bool]:
    """(code, stdout, stderr) of the Typer path, and whether the fast path (which must give
    the same) ran without Typer."""
    env = {**os.environ, "CODINGCODE_STATE_DIR": str(cwd / ".state")}
    runs = []
    for code in (TYPER, FAST):
        proc = subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        runs.append(proc)
    typer_run, fast_run = runs
    fast_err = fast_run.stderr.removesuffix("TYPER LOADED")
    assert (fast_run.returncode, fast_run.stdout, fast_err) == (
        typer_run.returncode,
        typer_run.stdout,
        typer_run.stderr,
    ), args
    return (typer_run.returncode, typer_run.stdout, typer_run.stderr), not fast_run.stderr.endswith(
        "TYPER LOADED"
    )


@pytest.fixture
def files(project: Path) -> Path:
    (project / "a.txt").write_text("hello\n")
    (project / "colour.txt").write_text("\x1b[31mred\x1b[0m plain\n")
    (project / "sub").mkdir()
    return project


#: Plain command lines: the fast path runs them, without Typer.
PLAIN = [
    ["check", "execute_command", '{"command": "ls -la | grep x"}'],
    ["check", "read_file", '{"path": "a.txt"}'],
    ["check", "-m", "plan", "write_file", '{"path": "b.txt", "content": "x"}'],
    ["check", "write_file", '{"path": "b.txt", "content": "x"}', "--mode=acceptEdits"],
    ["check", "-mbypass", "execute_command", '{"command": "rm -rf /"}'],
    ["--mode", "plan", "check", "execute_command", '{"command": "make"}'],
    ["-p", "sub", "check", "read_file", '{"path": "../a.txt"}'],
    ["check", "--project=sub", "read_file", '{"path": "x"}'],
    ["check", "read_file", "{}"],
    ["check", "read_file", '{"path": 1}'],
    ["check", "read_file", "[1]"],
    ["check", "read_file", "{not json"],
    ["check", "no_such_tool", "{}"],
    ["check", "read_file"],
    ["check"],
    ["check", "--mode", "nope", "read_file", "{}"],
    ["check", "-p", "missing-dir", "read_file", "{}"],
    ["check", "github:create_issue", '{"title": "x"}'],
    ["check", "--batch", "read_file"],
    ["tool", "read_file", '{"path": "a.txt"}'],
    ["tool", "read_file", '{"path": "colour.txt"}'],  # click strips ANSI codes off a pipe
    ["tool", "read_file", '{"path": "nope.txt"}'],
    ["tool", "read_file", '{"path": "a.txt", "bogus": 1}'],
    ["tool", "--project", "sub", "read_file", '{"path": "../a.txt"}'],
    ["tool", "read_file", '{"path": "a.txt"}', "-m", "plan"],
    ["tool", "search_files", '{"pattern": "*.txt"}'],
    ["tool", "no_such_tool", "{}"],
    ["tool", "write_file", '{"path": "new.txt", "content": "x"}'],  # an ask: denied, no tty
    ["tool", "read_file", "-"],
    ["tool", "todo_write", '{"plan": []}'],
    ["tool", "read_file", '{"path": "\udcff.txt"}'],  # a file name that is not UTF-8
]


@pytest.mark.parametrize("args", PLAIN, ids=[" ".join(a)[:50] for a in PLAIN])
def test_a_plain_command_line_runs_without_typer_and_ends_the_same(
    files: Path, args: list[str]
) -> None:
    assert parse(args) is not None
    _, fast = _both(args, files, stdin='{"path": "a.txt"}')
    assert fast


def test_a_batch_runs_without_typer_and_ends_the_same(files: Path) -> None:
    lines = '{"tool": "read_file", "args": {"path": "a.txt"}}\nnot json\n\n{"tool": 1}\n'
    (code, out, _), fast = _both(["check", "--batch"], files, stdin=lines)
    assert fast and code == 0 and len(out.splitlines()) == 3


#: Anything else goes to Typer as before (help, errors of the command line itself).
OTHER = [
    ["check", "--help"],
    ["tool", "--help"],
    ["tool", "read_file"],  # a missing argument: click's usage error
    ["tool"],
    ["tool", "read_file", "{}", "extra"],
    ["check", "read_file", "{}", "--bogus"],
    ["check", "--mode"],
    ["check", "-m", "plan", "-m", "bypass", "read_file", "{}"],  # repeated: click keeps the last
    ["check", "--batch", "--batch"],
    ["check", "--", "read_file", "{}"],
    ["check", "--mode", "--project", "read_file", "{}"],
    ["check", "-m=plan", "read_file", "{}"],
    ["--model", "x", "check", "read_file", "{}"],  # not an option of check: refused
    ["-c", "tool", "read_file", "{}"],
    ["tools"],
    ["chek", "read_file", "{}"],
]


@pytest.mark.parametrize("args", OTHER, ids=[" ".join(a)[:50] for a in OTHER])
def test_any_other_command_line_is_typers(files: Path, args: list[str]) -> None:
    assert parse(args) is None
    _both(args, files)


def test_an_ascii_stream_or_completion_goes_to_typer(files: Path) -> None:
    """Streams click would repair first, and shell completion, are Typer's."""
    args = ["tool", "read_file", '{"path": "a.txt"}']
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "CODINGCODE_STATE_DIR": str(files / "s")}
    proc = subprocess.run(
        [sys.executable, "-c", FAST, *args],
        cwd=files,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0 and "hello" in proc.stdout
    assert proc.stderr.endswith("TYPER LOADED")
