from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codingcode.errors import AgentError, ErrorKind
from codingcode.tools import ToolExecCtx, ToolService
from codingcode.tools.builtin import code_search

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(project: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text("build/\n")
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("import os\n\ndef main():\n    return os.getcwd()\n")
    (project / "src" / "util.py").write_text("def helper():\n    pass\n")
    (project / "docs").mkdir()
    (project / "docs" / "guide.md").write_text("# Guide\ndef in docs\n")
    (project / "build").mkdir()
    (project / "build" / "gen.py").write_text("def generated():\n    pass\n")
    return project


async def test_matches_as_path_line_text(
    service: ToolService, ctx: ToolExecCtx, tree: Path
) -> None:
    out = await service.call("search_code", {"pattern": r"^def \w+"}, ctx)
    assert out.splitlines() == [
        "3 matches:",
        "docs/guide.md:2: def in docs",
        "src/app.py:3: def main():",
        "src/util.py:1: def helper():",
    ]  # build/ is git-ignored


async def test_glob_limits_the_files(service: ToolService, ctx: ToolExecCtx, tree: Path) -> None:
    out = await service.call("search_code", {"pattern": "def", "glob": "**/*.py"}, ctx)
    assert "docs/guide.md" not in out and "src/app.py:3" in out


async def test_max_results_stops_early_and_says_so(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    for i in range(20):
        (project / f"f{i}.txt").write_text("hit\n" * 50)
    out = await service.call("search_code", {"pattern": "hit", "max_results": 7}, ctx)
    lines = out.splitlines()
    assert lines[0] == "7 matches:"
    assert len(lines) == 9
    assert "stopped at max_results=7" in lines[-1]


async def test_long_lines_are_cut(service: ToolService, ctx: ToolExecCtx, project: Path) -> None:
    (project / "min.js").write_text("var a=1;" * 5000 + "needle\n")
    out = await service.call("search_code", {"pattern": "var"}, ctx)
    assert len(out) < 1000 and "omitted" in out


async def test_invalid_regex_is_a_clear_error(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    (project / "a.txt").write_text("x\n")
    with pytest.raises(AgentError, match=r"Invalid regex '\(unclosed'") as info:
        await service.call("search_code", {"pattern": "(unclosed"}, ctx)
    assert info.value.kind is ErrorKind.INVALID_ARGUMENTS


async def test_no_matches(service: ToolService, ctx: ToolExecCtx, tree: Path) -> None:
    out = await service.call("search_code", {"pattern": "zzz_nothing"}, ctx)
    assert out == "No matches for 'zzz_nothing' in files matching '**/*'."


async def test_missing_rg_is_a_clear_error(
    service: ToolService, ctx: ToolExecCtx, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code_search.find_rg.cache_clear()
    monkeypatch.setattr(code_search.sysconfig, "get_path", lambda _: str(tmp_path))
    monkeypatch.setattr(code_search.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    try:
        with pytest.raises(AgentError, match=r"ripgrep \(rg\) was not found"):
            await service.call("search_code", {"pattern": "x"}, ctx)
    finally:
        code_search.find_rg.cache_clear()


async def test_search_files_by_glob(service: ToolService, ctx: ToolExecCtx, tree: Path) -> None:
    out = await service.call("search_files", {"pattern": "*.py"}, ctx)
    assert out.splitlines() == ["2 files:", "src/app.py", "src/util.py"]
    out = await service.call("search_files", {"pattern": "*.md", "path": "docs"}, ctx)
    assert out.splitlines() == ["1 files:", "docs/guide.md"]


async def test_search_files_says_when_cut(
    service: ToolService, ctx: ToolExecCtx, project: Path
) -> None:
    for i in range(12):
        (project / f"n{i:02}.txt").write_text("")
    out = await service.call("search_files", {"pattern": "*.txt", "max_results": 5}, ctx)
    lines = out.splitlines()
    assert lines[0] == "5 files:" and len(lines) == 7
    assert "cut at max_results=5" in lines[-1]


async def test_search_files_bad_path(service: ToolService, ctx: ToolExecCtx, tree: Path) -> None:
    with pytest.raises(AgentError, match="Directory not found: nope"):
        await service.call("search_files", {"pattern": "*", "path": "nope"}, ctx)
    with pytest.raises(AgentError, match="is a file"):
        await service.call("search_files", {"pattern": "*", "path": "src/app.py"}, ctx)
