"""The commands' output without Typer (``codingcode check`` and ``codingcode tool`` run
without it, :mod:`codingcode.cli.fast`)."""

from __future__ import annotations

import re
import sys
from typing import Any

#: click's: an ANSI colour or style sequence (click strips them from output that is not a
#: terminal).
_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def echo(message: str = "", *, err: bool = False) -> None:
    """``typer.echo`` for a line of text: where Typer runs the command, Typer's own; else
    the same thing (the line and a newline, ANSI codes removed when the stream is no
    terminal, flushed). The fast path checks first that the streams need none of click's
    repairs (an ASCII stream, a binary one)."""
    typer = sys.modules.get("typer")
    if typer is not None:
        typer.echo(message, err=err)
        return
    stream = sys.stderr if err else sys.stdout
    out = message + "\n"
    if not _isatty(stream):
        out = _ANSI.sub("", out)
    stream.write(out)
    stream.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:
        return False
