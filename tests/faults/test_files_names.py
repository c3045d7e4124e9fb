"""Fault injection: file names that are not valid UTF-8, and lone surrogates in arguments.

Python spells an undecodable byte of a file name as a lone surrogate (``\\udcff`` for 0xff).
Such a string cannot be printed or sent as JSON, so it must never reach a message; and a
lone surrogate in any argument must be a clear error, not a crash.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codingcode.errors import AgentError, ErrorKind
from codingcode.tools import ToolExecCtx, ToolService

pytestmark = pytest.mark.anyio


def printable(text: str) -> str:
    text.encode("utf-8")  # raises on a lone surrogate
    return text


async def test_suggestions_never_carry_undecodable_bytes(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    (project.joinpath(os.fsdecode(b"caf\xe9.txt"))).write_text("x\n")
    with pytest.raises(AgentError) as err:
        await service.call("read_file", {"path": "cafe.txt"}, ctx)
    message = printable(err.value.message)
    assert err.value.kind is ErrorKind.NOT_FOUND
    assert "caf\\xe9.txt" in message and "not valid UTF-8" in message


async def test_an_undecodable_name_round_trips(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    name = os.fsdecode(b"caf\xe9.txt")  # "caf\udce9.txt"
    (project / name).write_text("one\n")
    out = printable(await service.call("read_file", {"path": name}, ctx))
    assert out.splitlines() == ["caf\\xe9.txt: lines 1-1 of 1", "     1\tone"]
    out = await service.call(
        "edit_file", {"path": name, "old_string": "one", "new_string": "2"}, ctx
    )
    assert printable(out).startswith("Edited caf\\xe9.txt")
    out = await service.call("write_file", {"path": "new\udcff.txt", "content": "x"}, ctx)
    assert printable(out) == "Created new\\xff.txt (1 bytes, 1 lines)."
    assert sorted(os.listdir(os.fsencode(project))) == [b"caf\xe9.txt", b"new\xff.txt"]
    assert (project / name).read_text() == "2\n"


BAD = ["\udcff", "\ud800", "a\udce9b", "\ud83d", "x\x00y"]  # and NUL, valid in text only
CALLS = [
    ("read_file", "path"),
    ("write_file", "path"),
    ("write_file", "content"),
    ("edit_file", "path"),
    ("edit_file", "old_string"),
    ("edit_file", "new_string"),
]


@pytest.mark.parametrize("value", BAD, ids=ascii)
@pytest.mark.parametrize(("tool", "field"), CALLS)
async def test_no_crash_with_a_surrogate_in_any_argument(
    service: ToolService, ctx: ToolExecCtx, project: Path, tool: str, field: str, value: str
) -> None:
    (project / "f.txt").write_text("old text\n")
    args = {
        "read_file": {"path": "f.txt"},
        "write_file": {"path": "f.txt", "content": "new\n"},
        "edit_file": {"path": "f.txt", "old_string": "old", "new_string": "new"},
    }[tool]
    args[field] = value if field != "old_string" else "old" + value
    try:
        out = await service.call(tool, args, ctx)
    except AgentError as exc:
        assert "unexpectedly" not in exc.message
        assert exc.kind in (ErrorKind.INVALID_ARGUMENTS, ErrorKind.NOT_FOUND)
        printable(exc.message)
        if field != "path" and "\x00" not in value:  # refused by name (or by validation)
            assert (
                "surrogate" in exc.message
                or "not a valid unicode" in exc.message.lower()
                or ("unable to parse raw data as a unicode string" in exc.message)
            )
        if tool != "read_file" and field != "path":
            assert (project / "f.txt").read_text() == "old text\n"  # refused: untouched
    else:
        # Only a path that maps to real bytes may work, or text with a NUL (valid Unicode);
        # the answer is printable.
        assert (field == "path" and value in ("\udcff", "a\udce9b")) or (
            field != "path" and value == "x\x00y" and field != "old_string"
        )
        printable(out)
