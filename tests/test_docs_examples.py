"""The Python examples of the documentation run as written (in a fresh project, as a user
would run them)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def example(page: str, marker: str) -> str:
    text = (DOCS / page).read_text()
    match = re.search(rf"<!-- {marker} -->\n```python\n(.*?)```", text, re.S)
    assert match, f"docs/{page} lost its example {marker}"
    return match.group(1)


def test_runner_example(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("one two\n")
    env = {
        **os.environ,
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
    }
    result = subprocess.run(
        [sys.executable, "-c", example("tools.md", "docs-runner-example")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "     1\tone two" in lines  # read_file's numbered line
    assert lines[-1].startswith("denied execute_command was denied")
    assert "codingcode rules add allow 'execute_command(rm -rf build)'" in lines[-1]
