"""Faults in skills and custom commands (issue 17): huge, odd and broken files are one line
each and cost nothing; a ``!`` command's flood of output stays bounded."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from codingcode.custom_commands import CommandRegistry, prepare_command
from codingcode.custom_commands.render import MAX_BANG_OUTPUT
from codingcode.runner import build_runner
from codingcode.skills.loader import load_skills
from codingcode.tools.definition import SessionState
from codingcode.workspace import Workspace


def trust_all(path: Path, data: bytes) -> bool:
    return True


def test_fifty_megabyte_files_are_refused_without_reading_them(project: Path) -> None:
    skill = project / ".codingcode" / "skills" / "big" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    command = project / ".codingcode" / "commands" / "big.md"
    command.parent.mkdir(parents=True)
    block = b"---\nname: big\ndescription: x\n---\n" + b"y" * (50 * 1024 * 1024)
    skill.write_bytes(block)
    command.write_bytes(block)
    start = time.perf_counter()
    skills = load_skills(project, is_trusted=trust_all)
    commands = CommandRegistry.load(project, is_trusted=trust_all)
    assert time.perf_counter() - start < 5
    assert skills.skills == {} and "larger than 256 KiB" in skills.notes[0]
    assert commands.list() == [] and "larger than 128 KiB" in commands.notes[0]


def test_odd_entries_are_one_line_or_skipped(project: Path) -> None:
    base = project / ".codingcode" / "skills"
    (base / "dir-not-file" / "SKILL.md").mkdir(parents=True)  # a directory named SKILL.md
    (base / "dangling").mkdir()
    (base / "dangling" / "SKILL.md").symlink_to(project / "nowhere.md")
    (base / "loop").mkdir()
    (base / "loop" / "SKILL.md").write_text("---\nname: loop\ndescription: d\n---\nbody\n")
    (base / "loop" / "self").symlink_to(base / "loop")  # a link back to itself
    (project / ".claude").mkdir()
    (project / ".claude" / "skills").write_text("a file, not a folder")
    (project / ".claude" / "commands").mkdir()
    (project / ".claude" / "commands" / "nul.md").write_bytes(b"\xff\xfe\x00bad")
    found = load_skills(project, is_trusted=trust_all)
    assert list(found.skills) == ["loop"]
    assert len(found.notes) == 1 and "dir-not-file/SKILL.md is not a regular file" in found.notes[0]
    assert found.skills["loop"].files() == []  # the link is not followed
    commands = CommandRegistry.load(project, is_trusted=trust_all)
    assert commands.list() == [] and "is not UTF-8" in commands.notes[0]


@pytest.mark.anyio
async def test_a_bang_command_flooding_output_stays_bounded(project: Path) -> None:
    command = project / ".codingcode" / "commands" / "flood.md"
    command.parent.mkdir(parents=True)
    command.write_text("Out: !`head -c 3000000 /dev/zero | tr '\\0' x`\nEnd.\n")
    registry = CommandRegistry.load(project, is_trusted=trust_all)
    flood = registry.get("flood")
    assert flood is not None
    runner = build_runner(Workspace.load(project), mode="bypass")
    lines: list[str] = []
    prompt = await prepare_command(
        flood, "", runner=runner, state=SessionState(), notify=lines.append
    )
    assert len(prompt.text) < MAX_BANG_OUTPUT + 200
    assert prompt.text.startswith("Out: xxx") and prompt.text.endswith("characters cut)\nEnd.")
