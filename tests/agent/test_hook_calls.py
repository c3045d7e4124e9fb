"""Notification hooks when the app waits for the user (issue 17: idle waits)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from codingcode.agent.hook_calls import wait_for_user
from codingcode.hooks.bus import HookBus
from codingcode.hooks.lifecycle import HookEvent, LifecycleHooks

pytestmark = pytest.mark.anyio


def fake_session(project: Path, seen: list[dict[str, Any]]) -> Any:
    bus = HookBus()

    async def record(event: HookEvent) -> None:
        seen.append(event.payload)

    bus.add_hook("Notification", record, matcher="idle_prompt")
    hooks = LifecycleHooks([], bus, project)
    return SimpleNamespace(runner=SimpleNamespace(lifecycle=hooks), session_id="s1")


async def test_a_long_wait_fires_idle_prompt_once(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODINGCODE_IDLE_NOTIFICATION_S", "0.05")
    seen: list[dict[str, Any]] = []
    session = fake_session(project, seen)

    async def slow() -> str:
        await anyio.sleep(1.0)
        return "typed"

    assert await wait_for_user(session, slow) == "typed"
    assert len(seen) == 1
    assert seen[0]["notification_type"] == "idle_prompt"
    assert seen[0]["hook_event_name"] == "Notification" and seen[0]["session_id"] == "s1"


async def test_a_quick_answer_fires_nothing_and_errors_pass_through(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODINGCODE_IDLE_NOTIFICATION_S", "30")
    seen: list[dict[str, Any]] = []
    session = fake_session(project, seen)

    async def quick() -> str:
        return "typed"

    with anyio.fail_after(5):  # the 30 s timer is cancelled, not waited for
        assert await wait_for_user(session, quick) == "typed"
    assert seen == []

    async def interrupted() -> str:
        raise KeyboardInterrupt

    async def ended() -> str:
        raise EOFError

    with pytest.raises(KeyboardInterrupt):
        await wait_for_user(session, interrupted)
    with pytest.raises(EOFError):
        await wait_for_user(session, ended)


async def test_without_notification_hooks_it_just_asks(project: Path) -> None:
    session = SimpleNamespace(runner=SimpleNamespace(lifecycle=None), session_id="s")

    async def quick() -> int:
        return 7

    assert await wait_for_user(session, quick) == 7
