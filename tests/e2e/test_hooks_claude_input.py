"""Hooks written for Claude Code, end to end (issue 17's leftovers): ``tool_input.file_path``
for the file tools, and ``continue: false`` from every event that can stop the agent. The
real ``codingcode run`` against the scripted model; scripts in the shapes Claude Code's
documentation shows (bash + jq, python reading JSON on stdin)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step, tool_results
from tests.e2e.test_agent_run import env_for, run
from tests.e2e.test_hooks_lifecycle import command, needs_jq, script, user_hooks

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


#: Claude Code's "protect sensitive files" PreToolUse example, in Python: reads
#: tool_input.file_path, exit 2 blocks; anything else is allowed by the hook.
PROTECT = f"""#!{sys.executable}
import json, sys
data = json.load(sys.stdin)
path = data["tool_input"].get("file_path", "")
if path.endswith(".env"):
    print(f"Blocked: {{path}} is a protected file", file=sys.stderr)
    sys.exit(2)
print(json.dumps({{"hookSpecificOutput": {{"hookEventName": "PreToolUse",
                  "permissionDecision": "allow"}}}}))
"""


@needs_jq
def test_file_tools_give_hooks_claude_codes_file_path(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    (project / "src").mkdir()
    log = tmp_path / "post.log"
    formatter = script(  # the formatter hook of Claude Code's guide: jq .tool_input.file_path
        tmp_path,
        "format.sh",
        "#!/bin/bash\n"
        "jq -r '.tool_input.file_path + \" \" + .tool_input.path' >> " + str(log) + "\n",
    )
    user_hooks(
        tmp_path,
        {
            "PreToolUse": command(script(tmp_path, "protect.py", PROTECT), "Edit|Write"),
            "PostToolUse": command(formatter, "Edit|Write|Read"),
        },
    )
    fake.script = [
        Step(tool_calls=[("write_file", {"path": ".env", "content": "SECRET=1\n"})]),
        Step(tool_calls=[("write_file", {"path": "src/app.py", "content": "x = 1\n"})]),
        Step(tool_calls=[("read_file", {"path": "./src/../src/app.py"})]),
        Step(text="Done."),
    ]
    result = run(["run", "set up"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode == 0, result.stderr
    assert not (project / ".env").exists()  # ground truth: the hook's exit 2 held
    refused, _ = tool_results(fake.bodies()[1])[-1]
    assert f"Blocked: {project / '.env'} is a protected file" in refused
    assert (project / "src" / "app.py").read_text() == "x = 1\n"  # the hook allowed it
    lines = log.read_text().splitlines()
    assert lines == [
        f"{project / 'src' / 'app.py'} src/app.py",
        f"{project / 'src' / 'app.py'} ./src/../src/app.py",  # absolute, normalised; path kept
    ]


def test_an_updated_file_path_is_the_path_that_runs(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    redirect = script(
        tmp_path,
        "redirect.py",
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "new = dict(data['tool_input'], file_path=data['cwd'] + '/drafts/' + "
        "data['tool_input']['file_path'].rsplit('/', 1)[-1])\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse',"
        " 'permissionDecision': 'allow', 'updatedInput': new}}))\n",
    )
    (project / "drafts").mkdir()
    user_hooks(tmp_path, {"PreToolUse": command(redirect, "Write")})
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "notes.md", "content": "hi\n"})]),
        Step(text="ok"),
    ]
    result = run(["run", "write notes"], project, env_for(fake, "anthropic", tmp_path))
    assert result.returncode == 0, result.stderr
    assert (project / "drafts" / "notes.md").read_text() == "hi\n"
    assert not (project / "notes.md").exists()


def stop_script(tmp_path: Path, event: str, reason: str) -> str:
    return script(
        tmp_path,
        f"stop-{event}.py",
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "json.load(sys.stdin)\n"
        f"print(json.dumps({{'continue': False, 'stopReason': {reason!r}}}))\n",
    )


def test_continue_false_from_post_tool_use_stops_after_the_step(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    (project / "a.txt").write_text("content\n")
    hook = stop_script(tmp_path, "post", "tests are red: fix them first")
    user_hooks(tmp_path, {"PostToolUse": command(hook, "Read")})
    fake.script = [
        Step(tool_calls=[("read_file", {"path": "a.txt"})]),
        Step(tool_calls=[("write_file", {"path": "b.txt", "content": "x"})]),
        Step(text="never reached"),
    ]
    env = env_for(fake, "openai", tmp_path)
    result = run(["run", "go", "--mode", "bypass", "--output-format", "json"], project, env)
    assert result.returncode == 1, result.stderr
    assert len(fake.bodies()) == 1  # no model turn after the step
    assert not (project / "b.txt").exists()
    record = json.loads(result.stdout)
    assert record["status"] == "stopped"
    assert record["error"] == "A PostToolUse hook stopped the agent: tests are red: fix them first"
    # The text output shows the reason to the user too.
    fake.script = [Step(tool_calls=[("read_file", {"path": "a.txt"})]), Step(text="no")]
    result = run(["run", "again"], project, env)
    assert result.returncode == 1
    assert "stopped the agent: tests are red: fix them first" in result.stderr


def test_continue_false_from_pre_tool_use_stops_without_running_the_call(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    hook = stop_script(tmp_path, "pre", "deploy freeze")
    user_hooks(tmp_path, {"PreToolUse": command(hook, "Bash")})
    fake.script = [
        Step(tool_calls=[("execute_command", {"command": "touch ran.txt"})]),
        Step(text="never reached"),
    ]
    result = run(["run", "go"], project, env_for(fake, "anthropic", tmp_path))
    assert result.returncode == 1
    assert "A PreToolUse hook stopped the agent: deploy freeze" in result.stderr
    assert not (project / "ran.txt").exists()  # ground truth: the command never ran
    assert len(fake.bodies()) == 1


def test_continue_false_from_permission_request_denies_and_stops(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    hook = stop_script(tmp_path, "permission", "ask the lead first")
    allow = script(  # a second hook that allows: continue: false still wins
        tmp_path,
        "allow.py",
        f"#!{sys.executable}\nimport json, sys\njson.load(sys.stdin)\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PermissionRequest',"
        " 'decision': {'behavior': 'allow'}}}))\n",
    )
    spec = command(hook)
    spec[0]["hooks"].append({"type": "command", "command": allow, "timeout": 30})
    user_hooks(tmp_path, {"PermissionRequest": spec})
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "a.txt", "content": "x"})]),
        Step(text="never reached"),
    ]
    result = run(["run", "go"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode == 1
    assert "stopped the agent: ask the lead first" in result.stderr
    assert not (project / "a.txt").exists()
    assert len(fake.bodies()) == 1


def test_continue_false_from_session_start_sends_nothing(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    hook = stop_script(tmp_path, "start", "outside working hours")
    user_hooks(tmp_path, {"SessionStart": command(hook)})
    fake.script = [Step(text="never reached")]
    result = run(["run", "go"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode != 0
    assert "A SessionStart hook stopped the agent: outside working hours" in result.stderr
    assert not fake.bodies()


def test_continue_false_from_pre_compact_stops_before_the_next_model_turn(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    from tests.agent.fake_model import system_text
    from tests.e2e.test_hooks_subagent_compact import must_compact

    hook = stop_script(tmp_path, "compact", "context is full: start a new session")
    must_compact(project, fake, tmp_path, hook)
    result = run(["run", "read them"], project, env_for(fake, "anthropic", tmp_path), 240)
    assert result.returncode == 1, result.stderr
    assert "A PreCompact hook stopped the agent: context is full" in result.stderr
    bodies = fake.bodies()
    first = next(i for i, b in enumerate(bodies) if "You summarise" in system_text(b))
    assert first == len(bodies) - 1  # the compaction ran; no model turn after it
