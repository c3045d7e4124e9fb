"""The Workspace is built once per session and handed down (issue 19).

``codingcode run`` with a sub-agent, in this process, against the fake model server: the
settings files are read once and one trust store is made, whatever the session, its
sub-agent, the runner, the sandbox and the tools need of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codingcode import config, trust
from codingcode.runner import build_runner
from codingcode.workspace import Workspace
from tests.agent.fake_model import FakeModelServer, Step, tool_results


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


#: The settings files one read looks at: three levels, Claude Code's file and ours at each.
FILES = 6


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the settings files are read and trust stores made, from here on."""
    seen = {"settings_reads": 0, "trust_stores": 0}
    read = config.read_settings_file
    init = trust.TrustStore.__init__

    def counting_read(scope: config.Scope, path: Path) -> config.SettingsFile | None:
        seen["settings_reads"] += 1
        return read(scope, path)

    def counting_init(self: trust.TrustStore, *args: Any, **kwargs: Any) -> None:
        seen["trust_stores"] += 1
        init(self, *args, **kwargs)

    monkeypatch.setattr(config, "read_settings_file", counting_read)
    monkeypatch.setattr(trust.TrustStore, "__init__", counting_init)
    return seen


def _model_env(fake: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    for key, value in fake.env("openai").items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CODINGCODE_MODEL", "openai:fake-model")


def test_a_run_with_a_sub_agent_reads_settings_and_trust_once(
    project: Path,
    fake: FakeModelServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    counts: dict[str, int],
) -> None:
    from codingcode.cli.headless import run_headless

    _model_env(fake, monkeypatch)
    (project / "lib.py").write_text("VALUE = 7\n")
    settings_dir = project / ".codingcode"
    settings_dir.mkdir()
    # Something in every section the run reads: each reader gets it from the workspace.
    (settings_dir / "settings.json").write_text(
        json.dumps(
            {
                "permissions": {"deny": ["read_file(secrets/**)"]},
                "sandbox": {"mode": "workspace-write"},
                "code_search": {"timeout_s": 30},
                "appendSystemPrompt": "Be brief.",
            }
        )
    )
    fake.script = [
        Step(tool_calls=[("dispatch_agent", {"agent": "explore", "prompt": "Find VALUE."})]),
        Step(tool_calls=[("search_code", {"pattern": "VALUE"})]),
        Step(tool_calls=[("read_file", {"path": "lib.py"})]),
        Step(text="VALUE is 7 in lib.py:1."),
        Step(tool_calls=[("read_file", {"path": "lib.py"})]),
        Step(text="VALUE is 7."),
    ]
    code = run_headless(
        "what is VALUE?",
        project=project,
        model=None,
        mode=None,
        output_format="json",
        quiet=True,
        max_turns=None,
    )
    payload = json.loads(capsys.readouterr().out)
    assert code == 0, payload
    assert payload["answer"] == "VALUE is 7."
    # The sub-agent really ran its calls, and the session's own call ran too.
    assert "lib.py:1" in tool_results(fake.bodies()[2])[-1][0]
    assert "VALUE = 7" in tool_results(fake.bodies()[5])[-1][0]
    assert "Be brief." in json.dumps(fake.bodies()[0])
    # Six settings files (three levels, Claude Code's and ours), read once; one trust store.
    assert counts == {"settings_reads": FILES, "trust_stores": 1}


def test_the_workspace_keeps_the_trust_decision(project: Path, counts: dict[str, int]) -> None:
    settings_dir = project / ".codingcode"
    settings_dir.mkdir()
    (settings_dir / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["execute_command(make *)"]}})
    )
    untrusted = Workspace.load(project)
    assert [f.trusted for f in untrusted.settings.files] == [False]
    assert not untrusted.is_trusted(settings_dir / "settings.json")
    trust.TrustStore().trust(project)
    trusted = Workspace.load(project)
    assert [f.trusted for f in trusted.settings.files] == [True]
    assert trusted.is_trusted(settings_dir / "settings.json")
    # A session that distrusts the project: trusted records or not, nothing it grants.
    distrusting = Workspace.load(project, trust_project_grants=False)
    assert [f.trusted for f in distrusting.settings.files] == [False]
    assert not distrusting.is_trusted(settings_dir / "settings.json")
    # Handed down, it is used as it is; reloaded (after the session's own write), the same
    # store and decision read the files again.
    before = dict(counts)
    assert build_runner(distrusting, audit=False).workspace is distrusting
    assert counts == before
    again = distrusting.reload()
    assert again.trust is distrusting.trust
    assert [f.trusted for f in again.settings.files] == [False]
    assert counts["settings_reads"] == before["settings_reads"] + FILES
    assert counts["trust_stores"] == before["trust_stores"]


def test_the_run_command_with_a_slash_command_reads_settings_and_trust_once(
    project: Path,
    fake: FakeModelServer,
    monkeypatch: pytest.MonkeyPatch,
    counts: dict[str, int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The whole front end: `codingcode run "/name ARGS"` finds the command with the same
    workspace its session then runs in (the lookup reads nothing of its own)."""
    from codingcode.cli import _register_commands, app

    _model_env(fake, monkeypatch)
    commands = project / ".codingcode" / "commands"
    commands.mkdir(parents=True)
    (commands / "explain.md").write_text("Explain $ARGUMENTS in one line.\n")
    trust.TrustStore().trust(project)  # the command file is the user's own
    counts.update(settings_reads=0, trust_stores=0)
    fake.script = [Step(text="It holds the value.")]
    _register_commands()
    # As the codingcode command calls it: the command's exit code comes back.
    code = app(args=["run", "/explain lib.py", "-p", str(project)], standalone_mode=False)
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out.strip() == "It holds the value."
    assert "Explain lib.py in one line." in json.dumps(fake.bodies()[0])
    # Six settings files (three levels, Claude Code's and ours), read once; one trust store.
    assert counts == {"settings_reads": FILES, "trust_stores": 1}


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["build_runner", "build_pipeline"])
async def test_a_callers_own_policy_grants_nothing_in_a_session_that_distrusts_its_project(
    where: str, project: Path
) -> None:
    """A policy read from the files as they are (the project trusted) and handed to a
    session that distrusts its project: the project's allow rule and mode grant nothing
    there, as with the session's own reading; its deny rule still applies."""
    from codingcode.approval.pipeline import ToolCall
    from codingcode.approval.rules import load_policy
    from codingcode.approval.setup import build_pipeline

    settings_dir = project / ".codingcode"
    settings_dir.mkdir()
    (settings_dir / "settings.json").write_text(
        json.dumps(
            {
                "permissions": {
                    "allow": ["execute_command(rm *)"],
                    "deny": ["execute_command(shutdown *)"],
                    "defaultMode": "bypass",
                }
            }
        )
    )
    trust.TrustStore().trust(project)
    own = load_policy(config.load_settings(project, trust=trust.TrustStore()))
    assert {r.trusted for r in own.rules} == {True}  # as read: the project is trusted
    distrusting = Workspace.load(project, trust_project_grants=False)
    if where == "build_runner":
        runner = build_runner(distrusting, audit=False, policy=own, mode=None)
        pipeline, mode, ignored = runner.pipeline, runner.mode, runner.ignored_grants
        assert runner.network_rules is not None and runner.network_rules.engine is None
    else:
        pipeline, mode, ignored = build_pipeline(distrusting, policy=own)
    assert pipeline is not None
    assert mode == "default"  # not the project's bypass
    assert "allow rule execute_command(rm *)" in ignored
    rm = ToolCall("execute_command", {"command": "rm x"}, project, arg_roles={"command": "command"})
    assert (await pipeline.decide(rm, dry_run=True)).decision != "allow"
    stop = ToolCall(
        "execute_command", {"command": "shutdown now"}, project, arg_roles={"command": "command"}
    )
    assert (await pipeline.decide(stop, dry_run=True)).decision == "deny"
