"""approvals.autoAllowSandboxed: off by default; on, a command the sandbox fully contains
runs unasked — never one a rule asked about, never with the network on, never from an
untrusted project's settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codingcode.approval.setup import sandbox_fully_contains
from codingcode.config import user_config_dir
from codingcode.runner import build_runner
from codingcode.sandbox.service import SandboxService
from codingcode.workspace import Workspace

pytestmark = pytest.mark.anyio


def _user(settings: dict[str, object]) -> None:
    path = user_config_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings))


@pytest.fixture(autouse=True)
def _needs_a_sandbox(project: Path) -> None:
    if not sandbox_fully_contains(SandboxService.for_workspace(Workspace.load(project))):
        pytest.skip("no sandbox backend on this machine")


async def _decision(project: Path, command: str) -> str:
    d = await build_runner(Workspace.load(project)).decide(
        "execute_command", {"command": command}, dry_run=True
    )
    return d.decision


async def test_off_by_default(project: Path) -> None:
    assert await _decision(project, "make") == "ask"


async def test_on_in_the_user_settings(project: Path) -> None:
    _user({"approvals": {"autoAllowSandboxed": True}})
    assert await _decision(project, "make") == "allow"
    assert await _decision(project, "cat .env") == "ask"  # a preset rule asked: it stands
    assert await _decision(project, "sudo make") == "deny"


async def test_not_with_the_network_or_extra_writable_roots(project: Path, tmp_path: Path) -> None:
    _user({"approvals": {"autoAllowSandboxed": True}, "sandbox": {"network": "allow"}})
    assert await _decision(project, "make") == "ask"
    _user(
        {"approvals": {"autoAllowSandboxed": True}, "sandbox": {"writable_roots": [str(tmp_path)]}}
    )
    assert await _decision(project, "make") == "ask"


async def test_an_untrusted_project_cannot_turn_it_on(project: Path) -> None:
    settings = project / ".codingcode" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"approvals": {"autoAllowSandboxed": True}}))
    assert await _decision(project, "make") == "ask"
