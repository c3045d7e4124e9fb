"""sandbox.denyRead also holds for the file tools (issue 11), through the real command.

read_file and edit_file refuse a masked path with an error naming the setting; search_code
and search_files leave masked files out; a symlink into a masked directory is refused too;
everything else keeps working.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.e2e

SECRET = "S3CRET-" + "x" * 8


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    (tmp_path / "config").mkdir()
    home = tmp_path / "home"
    (home / ".vault").mkdir(parents=True)
    (home / ".vault" / "key").write_text(f"{SECRET}\n")
    env = {
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
        "HOME": str(home),
    }
    Path(env["CODINGCODE_CONFIG_DIR"], "settings.json").write_text(
        json.dumps({"sandbox": {"denyRead": ["creds/**", "*.pem", "~/.vault"]}})
    )
    project = (tmp_path / "project").resolve()
    (project / "creds" / "deep").mkdir(parents=True)
    (project / "creds" / "deep" / "token.txt").write_text(f"token = {SECRET}\n")
    (project / "server.pem").write_text(f"{SECRET}\n")
    (project / "notes.md").write_text("token = visible\n")
    os.symlink(project / "creds" / "deep" / "token.txt", project / "link.txt")
    return project, env


def tool(name: str, args: dict[str, object], project: Path, env: dict[str, str]) -> str:
    r = run_cli(["tool", name, json.dumps(args), "--mode", "bypass"], cwd=project, env=env)
    return r.stdout + r.stderr


@pytest.mark.parametrize(
    "path", ["creds/deep/token.txt", "server.pem", "link.txt", "creds/../creds/deep/token.txt"]
)
def test_read_file_refuses_masked_paths_naming_the_setting(
    setup: tuple[Path, dict[str, str]], path: str
) -> None:
    project, env = setup
    out = tool("read_file", {"path": path}, project, env)
    assert SECRET not in out
    assert "sandbox.denyRead" in out and "not readable" in out, out


def test_home_patterns_and_edit_file_are_refused(setup: tuple[Path, dict[str, str]]) -> None:
    project, env = setup
    out = tool("read_file", {"path": env["HOME"] + "/.vault/key"}, project, env)
    assert SECRET not in out and "sandbox.denyRead" in out, out
    out = tool(
        "edit_file",
        {"path": "server.pem", "old_string": SECRET, "new_string": "gone"},
        project,
        env,
    )
    assert "sandbox.denyRead" in out, out
    assert (project / "server.pem").read_text() == f"{SECRET}\n"


def test_searches_leave_masked_files_out(setup: tuple[Path, dict[str, str]]) -> None:
    project, env = setup
    out = tool("search_code", {"pattern": "token|S3CRET"}, project, env)
    assert SECRET not in out and "creds/" not in out and "server.pem" not in out, out
    assert "notes.md" in out and "not searched" in out, out
    listed = tool("search_files", {"pattern": "**/*"}, project, env)
    assert "notes.md" in listed and "token.txt" not in listed and "server.pem" not in listed
    assert "sandbox.denyRead" in listed, listed
    refused = tool("search_files", {"pattern": "*", "path": "creds"}, project, env)
    assert "sandbox.denyRead" in refused and "token.txt" not in refused, refused


def test_unmasked_files_still_work(setup: tuple[Path, dict[str, str]]) -> None:
    project, env = setup
    assert "token = visible" in tool("read_file", {"path": "notes.md"}, project, env)
    out = tool(
        "edit_file", {"path": "notes.md", "old_string": "visible", "new_string": "v2"}, project, env
    )
    assert "Edited" in out, out
    assert (project / "notes.md").read_text() == "token = v2\n"
