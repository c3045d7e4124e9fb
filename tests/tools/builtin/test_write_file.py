from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from codingcode.errors import AgentError
from codingcode.tools import ToolExecCtx, ToolService

pytestmark = pytest.mark.anyio


async def test_creates_parents_and_reports(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    out = await service.call("write_file", {"path": "a/b/c.txt", "content": "one\ntwo\n"}, ctx)
    assert out == "Created a/b/c.txt (8 bytes, 2 lines)."
    assert (project / "a/b/c.txt").read_text() == "one\ntwo\n"
    out = await service.call("write_file", {"path": "a/b/c.txt", "content": "x"}, ctx)
    assert out == "Overwrote a/b/c.txt (1 bytes, 1 lines)."


async def test_keeps_an_existing_files_mode(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    script = project / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o751)
    await service.call("write_file", {"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}, ctx)
    assert stat.S_IMODE(script.stat().st_mode) == 0o751


async def test_a_failed_write_leaves_the_original(
    service: ToolService, ctx: ToolExecCtx, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = project / "keep.txt"
    target.write_text("original")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(AgentError):
        await service.call("write_file", {"path": "keep.txt", "content": "new"}, ctx)
    assert target.read_text() == "original"
    assert sorted(p.name for p in project.iterdir()) == ["keep.txt"]  # no temporary left


async def test_directory_and_file_parent_are_clear_errors(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    (project / "d").mkdir()
    with pytest.raises(AgentError, match="is a directory"):
        await service.call("write_file", {"path": "d", "content": ""}, ctx)
    (project / "f").write_text("")
    with pytest.raises(AgentError, match="parent of it is a file"):
        await service.call("write_file", {"path": "f/x.txt", "content": ""}, ctx)
