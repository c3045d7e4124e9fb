from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from codingcode.tools import ToolExecCtx, ToolService


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory (a real path, symlinks resolved)."""
    root = tmp_path / "project"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def ctx(project: Path) -> ToolExecCtx:
    return ToolExecCtx(project_path=project, session_id="test")


@pytest.fixture(scope="session")
def service() -> ToolService:
    return ToolService.default()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str


def run_cli(
    args: Sequence[str],
    *,
    cwd: Path,
    input: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> CliResult:
    """Run the real ``codingcode`` command (this interpreter's) in a subprocess."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "codingcode", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)
