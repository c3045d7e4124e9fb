"""``codingcode check …`` and ``codingcode tool …`` without Typer: what hooks, editors and
scripts call once per action starts in a fraction of the time (Typer and its per-option
pydantic adapters cost more than the check itself).

Only plain, well-formed command lines take this path: the command's positional arguments
and its options spelled exactly as Typer accepts them, each given once. Anything else
(``--help``, an unknown or repeated option, a missing argument, ``--``, a value that looks
like an option, an output stream click would repair, shell completion) returns None and
Typer runs the command as always, with its own messages. Both paths run the same functions
(:func:`codingcode.cli.check.run_check`, :func:`codingcode.cli.call.run_tool`) and end the
same way (see :func:`run_fast`); ``tests/cli/test_fast_path.py`` compares them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

#: Each command's options that take a value: spelling → the parameter it sets.
_VALUE_OPTIONS = {"--project": "project", "-p": "project", "--mode": "mode", "-m": "mode"}
#: The global options ``hoist_global_options`` hands to these commands (the same two).
_FLAGS = {"check": {"--batch": "batch"}, "tool": {}}


@dataclass
class FastCall:
    command: str
    positional: list[str]
    project: Path | None = None
    mode: str | None = None
    batch: bool = False


def parse(argv: list[str]) -> FastCall | None:
    """The call ``argv`` makes when it is a plain ``check`` or ``tool`` command line; None
    for anything Typer should see."""
    values: dict[str, str] = {}
    flags: set[str] = set()

    def option(i: int, allowed_flags: dict[str, str]) -> int | None:
        """Take the option at ``argv[i]``; the index after it, None when not plain."""
        token = argv[i]
        if token in allowed_flags:
            name = allowed_flags[token]
            if name in flags:
                return None
            flags.add(name)
            return i + 1
        spelling, eq, value = token.partition("=")
        nxt = i + 1
        if spelling in _VALUE_OPTIONS and spelling.startswith("--"):
            if not eq:
                if nxt >= len(argv):
                    return None
                value, nxt = argv[nxt], nxt + 1
        elif token[:2] in _VALUE_OPTIONS and not token.startswith("--"):
            spelling, value = token[:2], token[2:]
            if not value:
                if nxt >= len(argv):
                    return None
                value, nxt = argv[nxt], nxt + 1
        else:
            return None
        name = _VALUE_OPTIONS[spelling]
        if name in values or not value or value.startswith(("-", "=")):
            return None
        values[name] = value
        return nxt

    i = 0
    while i < len(argv) and argv[i].startswith("-"):  # global options before the command
        after = option(i, {})
        if after is None:
            return None
        i = after
    if i >= len(argv) or argv[i] not in _FLAGS:
        return None
    command = argv[i]
    positional: list[str] = []
    i += 1
    while i < len(argv):
        token = argv[i]
        if token == "-" or not token.startswith("-"):
            positional.append(token)
            i += 1
            continue
        after = option(i, _FLAGS[command])
        if after is None:
            return None
        i = after
    if len(positional) > 2 or (command == "tool" and len(positional) != 2):
        return None
    project = values.get("project")
    return FastCall(
        command,
        positional,
        project=Path(project) if project is not None else None,
        mode=values.get("mode"),
        batch="batch" in flags,
    )


def _plain_streams() -> bool:
    """stdout and stderr are text streams click would write to as they are (it repairs an
    ASCII or a missing encoding first)."""
    import codecs

    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        if not encoding or getattr(stream, "errors", None) is None:
            return False
        try:
            if codecs.lookup(encoding).name == "ascii":
                return False
        except LookupError:
            return False
        if not callable(getattr(stream, "write", None)):
            return False
    return True


def _completion_requested() -> bool:
    return any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ)


def run_fast(argv: list[str]) -> bool:
    """Run ``argv`` when it is a plain ``check`` or ``tool`` command line (then exit, as the
    Typer path does); False when Typer should run it."""
    call = parse(argv)
    if call is None or _completion_requested():
        return False
    from codingcode.cli import _robust_streams

    _robust_streams()
    if not _plain_streams():
        return False
    sys.exit(_run(call))


def _run(call: FastCall) -> int:
    """The command's exit code, ending as ``codingcode.cli.run`` and click end it."""
    import errno

    from codingcode.cli.exits import exit_code_for
    from codingcode.cli.output import echo
    from codingcode.errors import AgentError

    try:
        try:
            if call.command == "check":
                from codingcode.cli.check import run_check

                given: list[str | None] = [*call.positional, None, None]
                tool, args_json = given[0], given[1]
                run_check(tool, args_json, call.mode, call.project, call.batch)
            else:
                from codingcode.cli.call import run_tool

                name, args_json = call.positional
                run_tool(name, args_json, call.project, call.mode)
            return 0
        except EOFError:  # click: an empty line, then "Aborted."
            echo("", err=True)
            echo("Aborted.", err=True)
            return 130
        except KeyboardInterrupt:  # click: exit 130, nothing said
            return 130
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            sys.stdout = _PacifyFlush(sys.stdout)
            sys.stderr = _PacifyFlush(sys.stderr)
            return 1
    except AgentError as exc:
        echo(f"error: {exc.message}", err=True)
        return exit_code_for(exc)
    except KeyboardInterrupt:
        echo("Interrupted.", err=True)
        return 130
    except RecursionError:
        echo("error: the input is nested too deeply to read (a JSON file or argument).", err=True)
        return 2
    except Exception as exc:
        typer = sys.modules.get("typer")  # a fail() after something imported Typer
        if typer is not None and isinstance(exc, typer.Exit):
            return int(exc.exit_code)
        raise


class _PacifyFlush:
    """click's ``PacifyFlushWrapper``: a broken pipe is not an error at exit."""

    def __init__(self, wrapped: object) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        import errno

        try:
            self.wrapped.flush()  # type: ignore[attr-defined]
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise

    def __getattr__(self, attr: str) -> object:
        return getattr(self.wrapped, attr)
