"""Fault injection: what an edit must keep — hard links, owner, group, mode — and the
read-only files it must not silently override."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from codingcode.errors import AgentError
from codingcode.tools import ToolExecCtx, ToolService

pytestmark = pytest.mark.anyio

CHANGES = [
    ("edit_file", {"old_string": "one", "new_string": "two"}),
    ("write_file", {"content": "two\n"}),
]


@pytest.mark.parametrize(("tool", "args"), CHANGES)
async def test_hard_links_are_kept(
    service: ToolService, ctx: ToolExecCtx, project: Path, tool: str, args: dict[str, str]
) -> None:
    a, b = project / "a.txt", project / "b.txt"
    a.write_text("one\n")
    os.link(a, b)
    await service.call(tool, {"path": "a.txt", **args}, ctx)
    assert a.read_text() == b.read_text() == "two\n"
    assert os.stat(a).st_ino == os.stat(b).st_ino and os.stat(a).st_nlink == 2
    assert sorted(p.name for p in project.iterdir()) == ["a.txt", "b.txt"]  # no temporary left


@pytest.mark.parametrize(("tool", "args"), CHANGES)
async def test_owner_group_and_mode_are_kept(
    service: ToolService, ctx: ToolExecCtx, project: Path, tool: str, args: dict[str, str]
) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    f = project / "f.txt"
    f.write_text("one\n")
    os.chown(f, 4321, 8765)
    f.chmod(0o640)
    await service.call(tool, {"path": "f.txt", **args}, ctx)
    st = os.stat(f)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 8765, 0o640)
    assert f.read_text() == "two\n"


@pytest.mark.parametrize(("tool", "args"), CHANGES)
async def test_a_read_only_file_is_refused_naming_its_mode(
    service: ToolService, ctx: ToolExecCtx, project: Path, tool: str, args: dict[str, str]
) -> None:
    f = project / "ro.txt"
    f.write_text("one\n")
    f.chmod(0o444)
    with pytest.raises(AgentError, match=r"read-only \(mode 0444\)"):
        await service.call(tool, {"path": "ro.txt", **args}, ctx)
    assert f.read_text() == "one\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o444


async def test_a_new_file_gets_the_umask_mode(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    old = os.umask(0o027)
    try:
        await service.call("write_file", {"path": "n.txt", "content": "x"}, ctx)
    finally:
        os.umask(old)
    assert stat.S_IMODE((project / "n.txt").stat().st_mode) == 0o640
