"""Fixtures for the sandbox tests: run a command through a real backend and look at the host.

Targets an escape would hit live *outside* /tmp (the sandbox's /tmp is private, so a
target there would prove nothing): in a scratch directory under /var/tmp.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from codingcode.cancel import CancelSignal
from codingcode.capabilities import CapabilitySet
from codingcode.process import CommandResult, run_command
from codingcode.sandbox.policy import BackendChoice, SandboxPolicy
from codingcode.sandbox.service import (
    SandboxService,
    bubblewrap_problem,
    find_bwrap,
    landlock_problem,
)

BWRAP = find_bwrap()
BWRAP_PROBLEM = bubblewrap_problem(BWRAP) if BWRAP else "bwrap is not installed"
LANDLOCK_PROBLEM = landlock_problem()

needs_bwrap = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"{BWRAP_PROBLEM}")
needs_landlock = pytest.mark.skipif(LANDLOCK_PROBLEM is not None, reason=f"{LANDLOCK_PROBLEM}")

#: Both real backends; a test of a guarantee Landlock does not give uses only bubblewrap.
BACKENDS = [
    pytest.param("bubblewrap", marks=needs_bwrap, id="bwrap"),
    pytest.param("landlock", marks=needs_landlock, id="landlock"),
]


def _scratch_parent() -> str | None:
    for candidate in ("/var/tmp", os.path.expanduser("~")):
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK):
            return candidate
    return None


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the project and outside /tmp (visible in the sandbox, not writable)."""
    path = Path(tempfile.mkdtemp(prefix="codingcode-test-outside-", dir=_scratch_parent()))
    yield path.resolve()
    shutil.rmtree(path, ignore_errors=True)


@dataclass
class Box:
    """Runs commands under one backend and policy, for one project."""

    service: SandboxService
    project: Path

    async def sh(
        self,
        command: str,
        *,
        timeout_s: float = 20,
        env: dict[str, str] | None = None,
        cancel: CancelSignal | None = None,
        cwd: Path | None = None,
        capabilities: CapabilitySet | None = None,
    ) -> CommandResult:
        return await run_command(
            ["bash", "-c", command],
            cwd=cwd or self.project,
            timeout_s=timeout_s,
            env={**os.environ, **(env or {})},
            cancel=cancel,
            launcher=self.service,
            capabilities=capabilities,
        )

    def run(self, command: str, **kwargs: Any) -> CommandResult:
        return anyio.run(lambda: self.sh(command, **kwargs))


@pytest.fixture
def make_box(project: Path) -> Iterator[Any]:
    services: list[SandboxService] = []

    def make(backend: str, **policy: Any) -> Box:
        pol = SandboxPolicy(project=project, backend=BackendChoice(backend), **policy)
        service = SandboxService.from_policy(pol)
        services.append(service)
        return Box(service, project)

    yield make
    for service in services:
        service.close()


def out(result: CommandResult) -> str:
    return result.stdout.text() + result.stderr.text()
