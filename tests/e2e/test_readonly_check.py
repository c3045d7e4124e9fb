"""`codingcode check --batch` over the read-only list and the tricks that look read-only:
the real command, one process, every decision."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.approval.test_readonly import NOT_READ_ONLY, READ_ONLY
from tests.conftest import run_cli

pytestmark = pytest.mark.e2e


def test_check_batch_read_only_and_tricks(project: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('hello')\n")
    (project / "README.md").write_text("# hi\n")
    env = {
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
        "HOME": os.environ.get("HOME", "/root"),
    }
    commands = READ_ONLY + NOT_READ_ONLY
    lines = [json.dumps({"tool": "execute_command", "args": {"command": c}}) for c in commands]
    lines += [
        json.dumps({"tool": "execute_command", "args": {"command": c}, "mode": "plan"})
        for c in ("git status", "ls | tee f")
    ]
    r = run_cli(["check", "--batch"], cwd=project, env=env, input="\n".join(lines) + "\n")
    assert r.code == 0, r.stderr
    out = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(out) == len(commands) + 2
    for command, result in zip(READ_ONLY, out, strict=False):
        assert (result["decision"], result["layer"]) == ("allow", "ReadonlyWhitelist"), command
    for command, result in zip(NOT_READ_ONLY, out[len(READ_ONLY) :], strict=False):
        assert result["decision"] in ("ask", "deny"), (command, result)
    assert out[-2]["decision"] == "allow"  # plan mode runs a read-only command
    assert out[-1]["decision"] == "deny" and "plan mode" in out[-1]["reason"]
