"""Lifecycle hooks under faults: a hung hook and its children are killed at the timeout,
its failure is one line, and it never allows."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from codingcode.config import Scope
from codingcode.hooks.lifecycle import LifecycleHooks
from codingcode.hooks.settings import CommandHook

pytestmark = pytest.mark.anyio


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


async def test_hung_hook_and_its_children_die_at_the_timeout(project: Path) -> None:
    pidfile = project / "child.pid"
    hung = CommandHook(
        f"sleep 300 & echo $! > {pidfile}; wait",
        "",
        1.5,
        Scope.USER,
        "test",
        True,
        "PermissionRequest",
    )
    told: list[str] = []
    lc = LifecycleHooks([hung], None, project, notify=told.append)
    start = time.monotonic()
    r = await lc.fire("PermissionRequest", {"tool_name": "execute_command", "tool_input": {}})
    assert time.monotonic() - start < 20
    assert r.permission is None and r.failed
    assert len(told) == 1 and "longer than 1.5s" in told[0] and "\n" not in told[0]
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)
