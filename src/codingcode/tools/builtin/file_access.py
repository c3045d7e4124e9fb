"""Reading a file safely and naming it for the model: helpers the file tools, the search
tools, the command tool and the MCP server's file resources share."""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO

from codingcode.errors import AgentError, InvalidArgumentsError
from codingcode.tools.builtin.safe_path import kind_of
from codingcode.tools.definition import ToolExecCtx


def printable(text: str) -> str:
    """``text`` with each undecodable byte of a file name (a lone surrogate) shown as \\xNN.

    Such a string could not be printed or sent as JSON; this one always can.
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogateescape") if escapable(text) else None
        if raw is not None:
            return raw.decode("utf-8", "backslashreplace")
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def escapable(text: str) -> bool:
    try:
        text.encode("utf-8", "surrogateescape")
        return True
    except UnicodeEncodeError:
        return False


def display_path(path: Path, ctx: ToolExecCtx) -> str:
    """A path as the model should see it: relative inside the project, absolute outside."""
    try:
        shown = str(path.relative_to(ctx.project_path))
    except ValueError:
        shown = str(path)
    return printable(shown)


def not_regular(shown: str, mode: int, tool: str) -> AgentError:
    if stat.S_ISDIR(mode):
        if tool == "read_file":
            return InvalidArgumentsError(
                f"{shown} is a directory, not a file. Use search_files to list its contents."
            )
        verb = "writes" if tool == "write_file" else "edits"
        return InvalidArgumentsError(f"{shown} is a directory; {tool} {verb} files.")
    return InvalidArgumentsError(
        f"{shown} is {kind_of(mode)}, not a regular file; {tool} works on regular files only "
        "(it was not opened)."
    )


def open_for_reading(path: Path, shown: str) -> BinaryIO:
    """Open a regular file without ever blocking: a FIFO, socket or device is an error.

    stat first (so a device is never opened at all), then open with O_NONBLOCK (a FIFO
    swapped in meanwhile cannot block the open) and check the descriptor itself.
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise not_regular(shown, st.st_mode, "read_file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode):
            raise not_regular(shown, fst.st_mode, "read_file")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
