"""The commands that write state — `trust`, `rules add/remove`, an always answer — in a
read-only state directory: one clear line, exit 1, nothing half-written. And the personal
``settings.local.json`` codingcode creates is kept out of git."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from codingcode.workspace import Workspace
from tests.conftest import CliResult, run_cli

pytestmark = pytest.mark.e2e


@pytest.fixture
def ro_state(tmp_path: Path) -> Iterator[Path]:
    """A state directory on a read-only mount (root ignores a directory's mode bits)."""
    state = tmp_path / "state"
    state.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(state)], capture_output=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {r.stderr.decode().strip()}")
    yield state
    subprocess.run(["umount", "-l", str(state)], check=False)


def env_for(state: Path, tmp_path: Path) -> dict[str, str]:
    return {"CODINGCODE_STATE_DIR": str(state), "CODINGCODE_CONFIG_DIR": str(tmp_path / "cfg")}


def one_line(r: CliResult, code: int, *words: str) -> None:
    assert r.code == code, (r.code, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_trust_in_a_read_only_state_dir(project: Path, ro_state: Path, tmp_path: Path) -> None:
    (project / ".mcp.json").write_text('{"mcpServers": {"s": {"command": "true"}}}')
    env = env_for(ro_state, tmp_path)
    one_line(run_cli(["trust"], cwd=project, env=env), 1, "trust records", str(ro_state))
    one_line(run_cli(["trust", "--revoke"], cwd=project, env=env), 1, "nothing was changed")
    r = run_cli(["trust", "--show"], cwd=project, env=env)  # reading still works
    assert r.code == 0 and "not trusted" in r.stdout, r.stderr


@pytest.mark.parametrize("scope", ["local", "project", "user"])
def test_rules_add_in_a_read_only_state_dir(
    project: Path, ro_state: Path, tmp_path: Path, scope: str
) -> None:
    env = env_for(ro_state, tmp_path)
    args = ["rules", "add", "allow", "execute_command(ls *)", "--scope", scope]
    r = run_cli(args, cwd=project, env=env)
    one_line(r, 1, "trust records")
    # Nothing half-written: no settings file appeared anywhere.
    assert not (project / ".codingcode").exists()
    assert not (tmp_path / "cfg").exists()
    r = run_cli(["rules", "remove", "execute_command(ls *)"], cwd=project, env=env)
    one_line(r, 1, "trust records")


def test_rules_add_in_a_read_only_project_dir(project: Path, tmp_path: Path) -> None:
    settings = project / ".codingcode"
    settings.mkdir()
    (settings / "settings.local.json").write_text('{"permissions": {"allow": []}}\n')
    env = env_for(tmp_path / "state", tmp_path)
    r = subprocess.run(["mount", "--bind", "-o", "ro", str(settings), str(settings)])
    if r.returncode != 0:
        pytest.skip("cannot bind-mount read-only here")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(settings)], check=True)
        r2 = run_cli(["rules", "add", "allow", "execute_command(ls *)"], cwd=project, env=env)
    finally:
        subprocess.run(["umount", "-l", str(settings)], check=False)
    one_line(r2, 1, "cannot write", "settings.local.json", "left as it was")
    assert (settings / "settings.local.json").read_text() == '{"permissions": {"allow": []}}\n'


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def ignored(project: Path, path: str) -> bool:
    r = subprocess.run(["git", "check-ignore", "-q", path], cwd=project)
    return r.returncode == 0


@needs_git
def test_created_local_settings_are_git_ignored(project: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text("build/\n")
    env = env_for(tmp_path / "state", tmp_path)
    r = run_cli(["rules", "add", "allow", "execute_command(ls *)"], cwd=project, env=env)
    assert r.code == 0, r.stderr
    assert ignored(project, ".codingcode/settings.local.json")
    assert (project / ".codingcode" / ".gitignore").read_text() == "settings.local.json\n"
    assert (project / ".gitignore").read_text() == "build/\n"  # the user's own: untouched
    # The project's shared settings are not ignored.
    r = run_cli(["rules", "add", "deny", "github:*", "--scope", "project"], cwd=project, env=env)
    assert r.code == 0 and not ignored(project, ".codingcode/settings.json")


@needs_git
def test_an_existing_codingcode_gitignore_is_extended_once(project: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".codingcode").mkdir()
    (project / ".codingcode" / ".gitignore").write_text("cache")
    env = env_for(tmp_path / "state", tmp_path)
    for rule in ("execute_command(ls *)", "execute_command(pwd)"):
        assert run_cli(["rules", "add", "allow", rule], cwd=project, env=env).code == 0
    assert (project / ".codingcode" / ".gitignore").read_text() == "cache\nsettings.local.json\n"
    assert ignored(project, ".codingcode/settings.local.json")


@needs_git
@pytest.mark.anyio
async def test_always_answer_keeps_local_settings_out_of_git(project: Path) -> None:
    from codingcode.approval.confirm import Answer, ScriptedConfirmer
    from codingcode.runner import build_runner

    subprocess.run(["git", "init", "-q"], cwd=project, check=True)  # noqa: ASYNC221
    runner = build_runner(Workspace.load(project), confirmer=ScriptedConfirmer([Answer.ALWAYS]))
    await runner.run("execute_command", {"command": "touch made"})
    saved = json.loads((project / ".codingcode" / "settings.local.json").read_text())
    assert saved["permissions"]["allow"] == ["execute_command(touch made)"]
    assert ignored(project, ".codingcode/settings.local.json")
