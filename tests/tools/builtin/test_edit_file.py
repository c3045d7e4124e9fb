from __future__ import annotations

import codecs
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from codingcode.errors import AgentError
from codingcode.tools import ToolExecCtx, ToolService

pytestmark = pytest.mark.anyio


async def edit(service: ToolService, ctx: ToolExecCtx, path: str, old: str, new: str) -> str:
    return await service.call(
        "edit_file", {"path": path, "old_string": old, "new_string": new}, ctx
    )


async def test_replaces_the_single_occurrence(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    (project / "m.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    out = await edit(service, ctx, "m.py", "    return 2\n", "    x = 2\n    return x\n")
    assert out == "Edited m.py: replaced 2 lines at line 5 with 3 lines."
    assert (
        project / "m.py"
    ).read_text() == "def f():\n    return 1\n\ndef g():\n    x = 2\n    return x\n"


async def test_zero_or_several_matches_leave_the_file_untouched(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    original = "a = 1\nb = 1\nc = 1\n"
    (project / "v.py").write_text(original)
    with pytest.raises(AgentError, match=r"occurs 3 times in v\.py \(lines 1, 2, 3\)"):
        await edit(service, ctx, "v.py", "= 1", "= 2")
    with pytest.raises(AgentError, match=r"was not found in v\.py"):
        await edit(service, ctx, "v.py", "d = 1", "d = 2")
    with pytest.raises(AgentError, match="appears on line"):
        await edit(service, ctx, "v.py", "b = 1\n  c = 1", "x")
    assert (project / "v.py").read_text() == original


async def test_overlapping_matches_count_as_several(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    (project / "o.txt").write_text("aaa")
    with pytest.raises(AgentError, match="occurs 2 times"):
        await edit(service, ctx, "o.txt", "aa", "b")


async def test_keeps_crlf_bom_and_final_newline(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    path = project / "w.txt"
    path.write_bytes(codecs.BOM_UTF8 + b"one\r\ntwo\r\nthree\r\n")
    await edit(service, ctx, "w.txt", "two\nthree", "2\n3")
    assert path.read_bytes() == codecs.BOM_UTF8 + b"one\r\n2\r\n3\r\n"
    path.write_bytes(b"no newline at end")
    await edit(service, ctx, "w.txt", "end", "END")
    assert path.read_bytes() == b"no newline at END"


async def test_keeps_non_utf8_and_utf16(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    latin = project / "l.txt"
    latin.write_bytes("café = 1\n".encode("latin-1"))
    await edit(service, ctx, "l.txt", "= 1", "= 2")
    assert latin.read_bytes() == "café = 2\n".encode("latin-1")
    utf16 = project / "u.txt"
    utf16.write_bytes(codecs.BOM_UTF16_LE + "x = 1\n".encode("utf-16-le"))
    await edit(service, ctx, "u.txt", "x = 1", "x = 2")
    assert utf16.read_bytes() == codecs.BOM_UTF16_LE + "x = 2\n".encode("utf-16-le")


async def test_bad_requests(service: ToolService, ctx: ToolExecCtx, project: Path) -> None:
    (project / "s.txt").write_text("same")
    with pytest.raises(AgentError, match="are the same"):
        await edit(service, ctx, "s.txt", "same", "same")
    with pytest.raises(AgentError, match="use write_file"):
        await edit(service, ctx, "new.txt", "a", "b")
    with pytest.raises(AgentError, match="at least 1 character"):
        await edit(service, ctx, "s.txt", "", "b")


async def test_concurrent_edits_from_tasks_never_lose_one(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    n = 30
    path = project / "c.txt"
    path.write_text("".join(f"slot {i}\n" for i in range(n)))
    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(edit, service, ctx, "c.txt", f"slot {i}\n", f"done {i}\n")
    assert path.read_text() == "".join(f"done {i}\n" for i in range(n))


def test_concurrent_edits_from_processes_never_lose_one(project: Path) -> None:
    n = 8
    path = project / "p.txt"
    path.write_text("".join(f"slot {i}\n" for i in range(n)))
    script = (
        "import anyio, sys\n"
        "from codingcode.tools import ToolService, ToolExecCtx\n"
        "async def main():\n"
        "    s = ToolService.default(); ctx = ToolExecCtx(project_path=sys.argv[1])\n"
        "    for k in range(5):\n"
        "        i = sys.argv[2]\n"
        "        await s.call('edit_file', {'path': 'p.txt', 'old_string': f'slot {i}\\n' if k == 0 else f'v{k-1} {i}\\n', 'new_string': f'v{k} {i}\\n'}, ctx)\n"
        "anyio.run(main)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(project), str(i)]) for i in range(n)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0] * n
    assert path.read_text() == "".join(f"v4 {i}\n" for i in range(n))
