"""Faults around the masks: odd files where masks go, a walk that cannot list a directory.
Every case: the command still runs (or is refused with a reason), nothing hangs, no traceback."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from codingcode.process import CommandResult, run_command
from codingcode.sandbox import masks as masks_module
from codingcode.sandbox.masks import MaskResolver
from codingcode.sandbox.policy import BackendChoice, SandboxPolicy
from codingcode.sandbox.secrets import DEFAULT_MASKS
from codingcode.sandbox.service import SandboxService
from tests.sandbox.conftest import BACKENDS


@pytest.fixture
def service(project: Path, request: pytest.FixtureRequest) -> Iterator[SandboxService]:
    svc = SandboxService.from_policy(SandboxPolicy(project, backend=BackendChoice(request.param)))
    yield svc
    svc.close()


def sh(service: SandboxService, project: Path, command: str) -> CommandResult:
    return anyio.run(
        lambda: run_command(["bash", "-c", command], cwd=project, timeout_s=20, launcher=service)
    )


@pytest.mark.parametrize("service", BACKENDS, indirect=True)
def test_odd_env_entries_neither_hang_nor_crash(service: SandboxService, project: Path) -> None:
    os.mkfifo(project / ".env")  # a FIFO: masking must not open it
    (project / "a").mkdir()
    (project / "a" / ".env").symlink_to(project / "missing")  # dangling
    (project / "b").mkdir()
    (project / "b" / ".env").symlink_to(project / "b" / ".env")  # a loop
    (project / "c").mkdir()
    (project / "c" / ".env.local").write_text("SECRET=fifo-test\n")
    result = sh(service, project, "cat c/.env.local; timeout 2 cat .env; echo done")
    assert not result.timed_out
    assert "done" in result.stdout.text()
    assert "fifo-test" not in result.stdout.text()


def test_a_directory_that_cannot_be_listed_is_skipped(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "bad").mkdir()
    (project / "good").mkdir()
    (project / "good" / ".env").write_text("")
    real_scandir = os.scandir

    def failing(path):  # type: ignore[no-untyped-def]
        if str(path).endswith("/bad"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(masks_module.os, "scandir", failing)
    paths = MaskResolver(DEFAULT_MASKS, project).resolve([]).paths
    assert project / "good" / ".env" in paths


def test_a_vanished_project_masks_nothing(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    resolver = MaskResolver([m for m in DEFAULT_MASKS if m.pattern.startswith("**")], gone)
    assert resolver.resolve([]).paths == {}
