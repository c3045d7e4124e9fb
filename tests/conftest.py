from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from codingcode.tools import ToolExecCtx, ToolService

# CI runs the same examples every time (a failure reproduces; a green run stays green);
# HYPOTHESIS_PROFILE=explore draws fresh ones locally.
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _private_user_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test reads or writes the real user's settings, trust records or audit log."""
    home = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(home / "state"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "claude"))
    monkeypatch.delenv("CODINGCODE_TRUST_ALL", raising=False)


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


def run_cli_in_process(args: Sequence[str], *, cwd: Path) -> CliResult:
    """The real command's code (argument parsing, exit codes, output) in this process, for a
    test that runs many read-only queries: each real process pays the command's start-up
    (``run_cli`` and the e2e tests cover the process itself)."""
    import contextlib
    import io

    from codingcode import cli

    out, err = io.StringIO(), io.StringIO()
    argv, here = sys.argv, os.getcwd()
    code = 0
    try:
        sys.argv = ["codingcode", *args]
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.run()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = argv
        os.chdir(here)
    return CliResult(code, out.getvalue(), err.getvalue())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long tests start first, so that short ones fill the end of a run on several workers
    (a long test picked up last would finish the run alone): those that declare a hang guard
    of 10 minutes or more (the conformance suite's scenarios), longest first, then the
    end-to-end tests (each starts the real command, servers, sandboxes several times), then
    the rest. The order is otherwise kept (a stable sort), and is the same on every worker.
    xdist's loadgroup sends the xdist_group groups (one worker each) before all of these."""

    def declared_timeout(item: pytest.Item) -> float:
        mark = item.get_closest_marker("timeout")
        if mark is None or not mark.args:
            return 0.0
        try:
            return float(mark.args[0])
        except (TypeError, ValueError):
            return 0.0

    def rank(item: pytest.Item) -> tuple[int, float]:
        guard = declared_timeout(item)
        if guard >= 600:
            return (0, -guard)
        return (1, 0.0) if item.get_closest_marker("e2e") is not None else (2, 0.0)

    items.sort(key=rank)
    _mark_xdist_groups(items)


def _mark_xdist_groups(items: list[pytest.Item]) -> None:
    """On an xdist worker of ``--dist loadgroup``: the ``@group`` suffix xdist's loadgroup
    schedules by. xdist 3.8 adds it by assigning ``item._nodeid``, which pytest 9 no longer
    reads (a node's id is ``item._id``), so every group was spread over the workers (each
    worker of the Ray tests started a cluster of its own). Does nothing once xdist's works."""
    config = items[0].config if items else None
    if config is None or not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import NodeId

    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})  # fmt: skip
        if names and "@" not in item.nodeid and hasattr(item, "_id"):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")
