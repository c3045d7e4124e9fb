"""The approval question of a command names the credentials it gets as placeholders (from
the settings, through the real runner), never their values."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from codingcode.approval.confirm import ScriptedConfirmer, question_text
from codingcode.config import user_config_dir
from codingcode.errors import DeniedError
from codingcode.runner import build_runner
from codingcode.workspace import Workspace

REAL = "ghp_" + "QuestionRealToken0" * 2 + "zz"


def test_the_question_lists_the_placeholders(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_TOKEN", REAL)
    settings = user_config_dir() / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(
        json.dumps(
            {"sandbox": {"credentials": {"envVars": [
                {"name": "MY_TOKEN", "mode": "mask", "injectHosts": ["api.example.com"]}]},
                "network": {"tlsTerminate": True}}}
        )
    )  # fmt: skip
    confirmer = ScriptedConfirmer(["deny"])
    runner = build_runner(Workspace.load(project), mode="default", confirmer=confirmer)
    try:
        with pytest.raises(DeniedError):  # the scripted user says no
            anyio.run(lambda: runner.run("execute_command", {"command": "touch x && rm x"}))
    finally:
        runner.launcher.close()
    assert confirmer.requests, "the call was not asked"
    text = question_text(confirmer.requests[0])
    assert (
        "Credentials it gets as placeholders: MY_TOKEN: a placeholder; the real value only on "
        "requests to api.example.com." in text
    )
    assert REAL not in text
