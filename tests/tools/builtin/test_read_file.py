from __future__ import annotations

from pathlib import Path

import pytest

from codingcode.errors import AgentError, ErrorKind
from codingcode.tools import ToolExecCtx, ToolService
from codingcode.tools.builtin.fs import MAX_LINE_CHARS

pytestmark = pytest.mark.anyio


async def read(service: ToolService, ctx: ToolExecCtx, **args: object) -> str:
    return await service.call("read_file", dict(args), ctx)


async def test_numbered_lines_with_totals(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    (project / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = await read(service, ctx, path="a.txt", offset=3, limit=2)
    assert out.splitlines() == [
        "a.txt: lines 3-4 of 10",
        "     3\tline 3",
        "     4\tline 4",
        "[6 more lines; continue with offset=5]",
    ]
    whole = await read(service, ctx, path=str(project / "a.txt"))
    assert whole.splitlines()[0] == "a.txt: lines 1-10 of 10"
    assert "more lines" not in whole


async def test_default_limit_is_200(service: ToolService, ctx: ToolExecCtx, project: Path) -> None:
    (project / "big.txt").write_text("x\n" * 1000)
    out = await read(service, ctx, path="big.txt")
    assert out.splitlines()[0] == "big.txt: lines 1-200 of 1000"
    assert out.splitlines()[-1] == "[800 more lines; continue with offset=201]"


@pytest.mark.parametrize(
    ("content", "total"),
    [("a\nb", 2), ("a\nb\n", 2), ("\n", 1), ("a", 1), ("a\r\nb\r\n", 2), ("\n\n\n", 3)],
)
async def test_line_count_with_and_without_final_newline(
    service: ToolService, ctx: ToolExecCtx, project: Path, content: str, total: int
) -> None:
    (project / "f").write_bytes(content.encode())
    out = await read(service, ctx, path="f")
    assert out.splitlines()[0] == f"f: lines 1-{total} of {total}"
    assert "\r" not in out


async def test_offset_past_the_end_and_empty_file(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    (project / "f").write_text("a\nb\n")
    with pytest.raises(AgentError, match="offset 5 is past the end of f, which has 2 lines"):
        await read(service, ctx, path="f", offset=5)
    (project / "e").write_text("")
    assert await read(service, ctx, path="e") == "e is empty (0 lines)."


async def test_long_lines_are_cut_with_a_marker(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    (project / "long.txt").write_text("short\n" + "y" * 100_000 + "\nafter\n")
    out = await read(service, ctx, path="long.txt")
    lines = out.splitlines()
    assert lines[0] == "long.txt: lines 1-3 of 3"
    assert lines[2].startswith("     2\t" + "y" * MAX_LINE_CHARS + " [... line cut:")
    assert len(lines[2]) < MAX_LINE_CHARS + 100
    assert lines[3] == "     3\tafter"


async def test_binary_and_directories_are_refused(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    (project / "img.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    with pytest.raises(AgentError, match="binary file"):
        await read(service, ctx, path="img.bin")
    (project / "sub").mkdir()
    with pytest.raises(AgentError, match="is a directory") as info:
        await read(service, ctx, path="sub")
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS


async def test_invalid_utf8_is_replaced(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    (project / "latin.txt").write_bytes(b"caf\xe9\n")
    out = await read(service, ctx, path="latin.txt")
    assert "caf\ufffd" in out


async def test_missing_file_suggests_close_names(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    (project / "config.yaml").write_text("a: 1\n")
    with pytest.raises(AgentError, match=r"Did you mean: config\.yaml\?") as info:
        await read(service, ctx, path="config.yml")
    assert info.value.kind is ErrorKind.NOT_FOUND
    with pytest.raises(AgentError, match="directory nowhere does not exist"):
        await read(service, ctx, path="nowhere/x.txt")


async def test_deep_offset_in_a_large_file(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    with (project / "large.txt").open("w") as f:
        for i in range(1, 300_001):
            f.write(f"row {i}\n")
    out = await read(service, ctx, path="large.txt", offset=250_000, limit=2)
    assert out.splitlines() == [
        "large.txt: lines 250000-250001 of 300000",
        "250000\trow 250000",
        "250001\trow 250001",
        "[49999 more lines; continue with offset=250002]",
    ]
