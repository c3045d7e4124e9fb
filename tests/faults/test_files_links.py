"""Fault injection: symlinks and symlink races around write_file and edit_file.

A path inside the project is what acceptEdits lets through; a symlink in it (there from
the start, or swapped in between the check and the write) must never carry a write or an
edit outside the project. Symlinks that stay inside are kept: the target is edited.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from codingcode.errors import AgentError, ErrorKind
from codingcode.tools import ToolExecCtx, ToolService

pytestmark = pytest.mark.anyio


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "e.txt").write_text("old outside\n")
    return out


def snapshot(root: Path) -> dict[str, bytes | str]:
    found: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            found[rel] = (
                os.readlink(p) if p.is_symlink() else (p.read_bytes() if p.is_file() else "dir")
            )
    return found


async def test_a_symlinked_directory_leading_out_is_refused(
    service: ToolService, ctx: ToolExecCtx, project: Path, outside: Path
) -> None:
    before = snapshot(outside)
    (project / "d").symlink_to(outside)
    (project / "rel").symlink_to(os.path.relpath(outside, project))
    for path in ("d/e.txt", "d/new.txt", "rel/e.txt", "rel/new/x.txt"):
        with pytest.raises(AgentError, match="outside the project") as err:
            await service.call("write_file", {"path": path, "content": "pwned\n"}, ctx)
        assert err.value.kind is ErrorKind.DENIED
        assert str(outside) in err.value.message  # where it leads: the real path to ask for
    with pytest.raises(AgentError, match="outside the project"):
        await service.call(
            "edit_file", {"path": "d/e.txt", "old_string": "old", "new_string": "pwned"}, ctx
        )
    assert snapshot(outside) == before


async def test_a_symlinked_file_leading_out_is_refused(
    service: ToolService, ctx: ToolExecCtx, project: Path, outside: Path
) -> None:
    before = snapshot(outside)
    (project / "f.txt").symlink_to(outside / "e.txt")
    (project / "dangling").symlink_to(outside / "new.txt")
    with pytest.raises(AgentError, match="outside the project"):
        await service.call(
            "edit_file", {"path": "f.txt", "old_string": "old", "new_string": "pwned"}, ctx
        )
    for path in ("f.txt", "dangling"):
        with pytest.raises(AgentError, match="outside the project"):
            await service.call("write_file", {"path": path, "content": "pwned\n"}, ctx)
    assert snapshot(outside) == before
    assert (project / "f.txt").is_symlink() and (project / "dangling").is_symlink()


async def test_an_outside_path_named_as_such_still_works(
    service: ToolService, ctx: ToolExecCtx, outside: Path
) -> None:
    # Named by its real path, an outside file is the approval pipeline's question, not ours.
    await service.call(
        "edit_file",
        {"path": str(outside / "e.txt"), "old_string": "old", "new_string": "new"},
        ctx,
    )
    assert (outside / "e.txt").read_text() == "new outside\n"


async def test_symlinks_inside_the_project_are_kept(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    (project / "real").mkdir()
    (project / "real/t.txt").write_text("one\n")
    (project / "link.txt").symlink_to("real/t.txt")
    (project / "dirlink").symlink_to(project / "real")  # absolute, but inside
    await service.call(
        "edit_file", {"path": "link.txt", "old_string": "one", "new_string": "two"}, ctx
    )
    assert (project / "link.txt").is_symlink()
    assert (project / "real/t.txt").read_text() == "two\n"
    await service.call("write_file", {"path": "link.txt", "content": "three\n"}, ctx)
    assert (project / "link.txt").is_symlink()
    assert (project / "real/t.txt").read_text() == "three\n"
    await service.call("write_file", {"path": "dirlink/new/n.txt", "content": "n\n"}, ctx)
    assert (project / "real/new/n.txt").read_text() == "n\n"
    assert os.readlink(project / "link.txt") == "real/t.txt"


async def test_a_symlink_race_never_lands_outside(
    service: ToolService, ctx: ToolExecCtx, project: Path, outside: Path
) -> None:
    """`d` flips between a link into the project and a link out of it, all the time."""
    real = project / "real"
    real.mkdir()
    (real / "e.txt").write_text("counter 0\n")
    (project / "d").symlink_to(real)
    (real / "f.txt").write_text("inside\n")
    before = snapshot(outside)
    stop = threading.Event()
    flips = 0

    def flip() -> None:
        nonlocal flips
        while not stop.is_set():
            for target in (outside, real):
                tmp = project / f".flip{flips}"
                tmp.symlink_to(target)
                os.replace(tmp, project / "d")  # atomic: `d` always exists
                flips += 1
            # file level too: f.txt is a file one moment, a link out the next
            tmp = real / ".fl"
            tmp.symlink_to(outside / "e.txt")
            os.replace(tmp, real / "f.txt")
            tmp.write_text("inside\n")
            os.replace(tmp, real / "f.txt")

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    done = refused = 0
    try:
        deadline = time.monotonic() + 4
        i = 0
        while time.monotonic() < deadline or flips < 50:
            calls = [
                ("write_file", {"path": f"d/w{i}.txt", "content": "pwned\n"}),
                ("write_file", {"path": f"d/sub{i}/w.txt", "content": "pwned\n"}),
                ("edit_file", {"path": "d/e.txt", "old_string": "old", "new_string": "pwned"}),
                ("edit_file", {"path": "d/f.txt", "old_string": "in", "new_string": "pwned "}),
                ("write_file", {"path": "d/f.txt", "content": "pwned\n"}),
            ]
            for tool, args in calls:
                try:
                    await service.call(tool, args, ctx)
                    done += 1
                except AgentError:
                    refused += 1
            i += 1
            await anyio.lowlevel.checkpoint()
    finally:
        stop.set()
        thread.join()
    assert flips >= 50
    assert snapshot(outside) == before, "a write or an edit landed outside the project"
    assert done + refused == 5 * i


@pytest.mark.parametrize("target", [".codingcode", ".git/hooks"])
async def test_a_symlink_never_turns_a_path_into_a_control_file(
    service: ToolService, ctx: ToolExecCtx, project: Path, target: str
) -> None:
    """acceptEdits passes edits in the project but never of the files that configure
    codingcode or git hooks; a link swapped in after the check must not get around that."""
    (project / target).mkdir(parents=True)
    (project / target / "settings.json").write_text("{}\n")
    (project / "cfg").symlink_to(project / target)
    for tool, args in [
        ("write_file", {"path": "cfg/settings.json", "content": "pwned"}),
        ("write_file", {"path": "cfg/pre-commit", "content": "pwned"}),
        ("edit_file", {"path": "cfg/settings.json", "old_string": "{}", "new_string": "pwned"}),
    ]:
        with pytest.raises(AgentError, match="configures codingcode") as err:
            await service.call(tool, args, ctx)
        assert err.value.kind is ErrorKind.DENIED
    assert sorted(os.listdir(project / target)) == ["settings.json"]
    assert (project / target / "settings.json").read_text() == "{}\n"
