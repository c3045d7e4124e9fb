"""How the CLI ends on a failure: the exit code of an error, and a short message then exit.

Its own module (not ``codingcode.cli``) so that the sub-command modules import it without
importing the package that registers them; Typer-free (``codingcode check`` and
``codingcode tool`` run without it, :mod:`codingcode.cli.fast`).
"""

from __future__ import annotations

import sys

from codingcode.cli.output import echo
from codingcode.errors import AgentError, ErrorKind, UnknownToolError


def exit_code_for(error: AgentError) -> int:
    """2 for bad input (invalid arguments, an unknown tool), 1 for a call that failed."""
    bad_input = error.kind is ErrorKind.INVALID_ARGUMENTS or isinstance(error, UnknownToolError)
    return 2 if bad_input else 1


def fail(message: str, code: int = 2) -> None:
    """Print a short error to stderr and exit (for the CLI's own checks of its input)."""
    echo(f"error: {message}", err=True)
    typer = sys.modules.get("typer")
    if typer is not None:  # inside a Typer command: its exit, which click turns into the code
        raise typer.Exit(code)
    raise SystemExit(code)
