"""The hook lifecycle end to end (issue 17): ``codingcode run`` against the scripted model,
with hook scripts written the way Claude Code's documentation writes them (bash + jq,
python reading JSON on stdin)."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent.fake_model import FakeModelServer, Step, tool_results
from tests.e2e.test_agent_run import env_for, run

pytestmark = pytest.mark.e2e

needs_jq = pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def user_hooks(tmp_path: Path, hooks: dict[str, Any]) -> None:
    config = tmp_path / "user-config"
    config.mkdir(exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"hooks": hooks}))


def script(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def command(path: str, matcher: str = "") -> list[dict[str, Any]]:
    return [{"matcher": matcher, "hooks": [{"type": "command", "command": path, "timeout": 30}]}]


def user_texts(body: dict[str, Any]) -> list[str]:
    out = []
    for m in body.get("messages", []):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [b.get("text", "") for b in content if b.get("type") == "text"]
    return out


@needs_jq
def test_post_tool_use_gets_the_result_and_adds_context(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    (project / "notes.txt").write_text("the secret number is 42\n")
    log = tmp_path / "post.log"
    hook = script(
        tmp_path,
        "post.sh",
        "#!/bin/bash\n"
        "input=$(cat)\n"
        "tool=$(echo \"$input\" | jq -r '.tool_name')\n"
        "echo \"$input\" | jq -r '.tool_response' > " + str(log) + "\n"
        'echo "$input" | jq -r \'.hook_event_name + " " + .tool_input.path\' >> ' + str(log) + "\n"
        'echo "$CLAUDE_PROJECT_DIR" >> ' + str(log) + "\n"
        'jq -n --arg t "$tool" \'{hookSpecificOutput: {hookEventName: "PostToolUse", '
        'additionalContext: ("linted after " + $t)}}\'\n',
    )
    user_hooks(tmp_path, {"PostToolUse": command(hook, "read_file|Read")})
    fake.script = [
        Step(tool_calls=[("read_file", {"path": "notes.txt"})]),
        Step(text="It is 42."),
    ]
    result = run(["run", "what number?"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode == 0, result.stderr
    seen = log.read_text()
    assert "the secret number is 42" in seen
    assert "PostToolUse notes.txt" in seen and str(project) in seen
    content, is_error = tool_results(fake.bodies()[1])[-1]
    assert "the secret number is 42" in content and "linted after read_file" in content
    assert not is_error


def test_post_tool_use_block_marks_the_result_as_an_error(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    (project / "a.py").write_text("x=1\n")
    hook = script(
        tmp_path,
        "lint.py",
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "print(json.dumps({'decision': 'block', 'reason': 'lint: missing spaces in ' "
        "+ data['tool_input']['path']}))\n",
    )
    user_hooks(tmp_path, {"PostToolUse": command(hook, "read_.*")})
    fake.script = [Step(tool_calls=[("read_file", {"path": "a.py"})]), Step(text="ok")]
    result = run(["run", "read a.py"], project, env_for(fake, "anthropic", tmp_path))
    assert result.returncode == 0, result.stderr
    content, is_error = tool_results(fake.bodies()[1])[-1]
    assert is_error and "lint: missing spaces in a.py" in content and "x=1" in content


def test_user_prompt_submit_stdout_reaches_the_model(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    hook = script(
        tmp_path,
        "prompt.py",
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "assert data['hook_event_name'] == 'UserPromptSubmit'\n"
        "print('Current branch: feature-x; asked: ' + data['prompt'])\n",
    )
    user_hooks(tmp_path, {"UserPromptSubmit": command(hook)})
    fake.script = [Step(text="Noted.")]
    result = run(["run", "hello there"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode == 0, result.stderr
    text = "\n".join(user_texts(fake.bodies()[0]))
    assert "hello there" in text and "Current branch: feature-x; asked: hello there" in text


def test_user_prompt_submit_block_sends_nothing(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    hook = script(
        tmp_path,
        "guard.py",
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "if 'password' in data['prompt']:\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'the prompt holds a password'}))\n",
    )
    user_hooks(tmp_path, {"UserPromptSubmit": command(hook)})
    fake.script = [Step(text="should not be asked")]
    result = run(["run", "my password is hunter2"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode != 0
    assert "the prompt holds a password" in result.stderr
    assert fake.bodies() == []


@needs_jq
def test_stop_hook_that_blocks_once_gives_one_more_turn(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    hook = script(
        tmp_path,
        "stop.sh",
        "#!/bin/bash\n"
        "input=$(cat)\n"
        'if [ "$(echo "$input" | jq -r \'.stop_hook_active\')" = "true" ]; then\n'
        "  exit 0\n"
        "fi\n"
        'echo \'{"decision": "block", "reason": "run the tests before you stop"}\'\n',
    )
    user_hooks(tmp_path, {"Stop": command(hook)})
    fake.script = [Step(text="Done."), Step(text="Tests pass. Done.")]
    result = run(["run", "fix it"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Tests pass. Done."
    bodies = fake.bodies()
    assert len(bodies) == 2
    assert any("run the tests before you stop" in t for t in user_texts(bodies[1]))


def test_stop_hook_that_always_blocks_is_bounded(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    hook = script(tmp_path, "stop.sh", "#!/bin/sh\ncat >/dev/null\necho 'keep going' >&2\nexit 2\n")
    user_hooks(tmp_path, {"Stop": command(hook)})
    fake.script = [Step(text=f"answer {i}") for i in range(10)]
    result = run(["run", "go"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode == 0, result.stderr
    # The first answer, then three blocked stops (MAX_STOP_BLOCKS): four requests in all.
    assert len(fake.bodies()) == 4
    assert result.stdout.strip() == "answer 3"


def permission_hook(tmp_path: Path, answer: str) -> str:
    return script(
        tmp_path,
        "perm.py",
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "open(sys.argv[0] + '.seen', 'w').write(json.dumps(data))\n" + answer,
    )


def test_permission_request_hook_answers_an_ask(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    hook = permission_hook(
        tmp_path,
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PermissionRequest',"
        " 'decision': {'behavior': 'allow'}}}))\n",
    )
    user_hooks(tmp_path, {"PermissionRequest": command(hook, "write_file")})
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "a.txt", "content": "new\n"})]),
        Step(text="Written."),
    ]
    result = run(["run", "write a.txt"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode == 0, result.stderr
    assert (project / "a.txt").read_text() == "new\n"
    seen = json.loads(Path(hook + ".seen").read_text())
    assert seen["tool_name"] == "write_file" and seen["tool_input"]["path"] == "a.txt"


def test_permission_request_hook_denies_with_its_message(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    hook = permission_hook(
        tmp_path,
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PermissionRequest',"
        " 'decision': {'behavior': 'deny', 'message': 'no writes on Fridays'}}}))\n",
    )
    user_hooks(tmp_path, {"PermissionRequest": command(hook)})
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "a.txt", "content": "new\n"})]),
        Step(text="Could not."),
    ]
    run(["run", "write a.txt"], project, env_for(fake, "anthropic", tmp_path))
    assert not (project / "a.txt").exists()
    content, is_error = tool_results(fake.bodies()[1])[-1]
    assert is_error and "no writes on Fridays" in content


@pytest.mark.parametrize(
    "answer",
    [
        "sys.exit(1)\n",
        "print('{not json')\n",
        "import time; time.sleep(60)\n",
        "print(json.dumps({'hookSpecificOutput': {'decision': {'behavior': 'sure'}}}))\n",
        "print(json.dumps({'hookSpecificOutput': {'decision': {'behavior': 'allow',"
        " 'updatedInput': {'path': 'b.txt', 'content': 'x'}}}}))\n",
    ],
    ids=["exit1", "not-json", "timeout", "bad-behavior", "updated-input"],
)
def test_a_failing_permission_hook_never_allows(
    project: Path, fake: FakeModelServer, tmp_path: Path, answer: str
) -> None:
    hook = permission_hook(tmp_path, answer)
    spec = command(hook)
    spec[0]["hooks"][0]["timeout"] = 2
    # A second hook that allows: a failing one among them still withholds the allow.
    ok = script(
        tmp_path,
        "ok.sh",
        "#!/bin/sh\ncat >/dev/null\n"
        'echo \'{"hookSpecificOutput": {"decision": {"behavior": "allow"}}}\'\n',
    )
    spec += command(ok)
    user_hooks(tmp_path, {"PermissionRequest": spec})
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "a.txt", "content": "new\n"})]),
        Step(text="Could not."),
    ]
    run(["run", "write a.txt"], project, env_for(fake, "anthropic", tmp_path))
    assert not (project / "a.txt").exists() and not (project / "b.txt").exists()
    content, is_error = tool_results(fake.bodies()[1])[-1]
    assert is_error and "denied" in content.lower()


def test_untrusted_project_hooks_never_run(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    (project / ".codingcode").mkdir()
    hooks = {
        event: command(f"touch {marker}")
        for event in ("UserPromptSubmit", "SessionStart", "Stop", "PostToolUse")
    }
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    (project / "a.txt").write_text("a\n")
    fake.script = [Step(tool_calls=[("read_file", {"path": "a.txt"})]), Step(text="ok")]
    result = run(["run", "read it"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode == 0, result.stderr
    assert not marker.exists()


def test_session_start_adds_context_and_session_end_runs(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    log = tmp_path / "events.log"
    hook = script(
        tmp_path,
        "session.py",
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        f"open({str(log)!r}, 'a').write(json.dumps(data) + '\\n')\n"
        "if data['hook_event_name'] == 'SessionStart':\n"
        "    print(json.dumps({'hookSpecificOutput': {'hookEventName': 'SessionStart',"
        " 'additionalContext': 'Open issues: #17 hooks'}}))\n",
    )
    user_hooks(tmp_path, {"SessionStart": command(hook, "startup"), "SessionEnd": command(hook)})
    fake.script = [Step(text="Hi.")]
    result = run(["run", "hello"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode == 0, result.stderr
    assert any("Open issues: #17 hooks" in t for t in user_texts(fake.bodies()[0]))
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["hook_event_name"], e.get("source") or e.get("reason")) for e in events] == [
        ("SessionStart", "startup"),
        ("SessionEnd", "other"),
    ]
    assert events[0]["session_id"] == events[1]["session_id"] != ""
    assert events[0]["cwd"] == str(project)


def test_the_first_prompts_hooks_find_the_transcript_they_are_given(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    """Claude Code gives every hook ``transcript_path``; a session is saved from its first
    prompt on, so the file is written before that prompt's SessionStart and UserPromptSubmit
    hooks run (they read it: the session's start record, nothing of the prompt yet)."""
    log = tmp_path / "events.log"
    hook = script(
        tmp_path,
        "read_transcript.py",
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "lines = open(data['transcript_path']).read().splitlines()\n"
        "kinds = [json.loads(line)['type'] for line in lines]\n"
        f"open({str(log)!r}, 'a').write(json.dumps([data['hook_event_name'],"
        " data['transcript_path'], kinds]) + '\\n')\n",
    )
    user_hooks(
        tmp_path,
        {
            "SessionStart": command(hook),
            "UserPromptSubmit": command(hook),
            "PreToolUse": command(hook),
        },
    )
    (project / "a.txt").write_text("a\n")
    fake.script = [Step(tool_calls=[("read_file", {"path": "a.txt"})]), Step(text="Hi.")]
    env = env_for(fake, "openai", tmp_path)
    result = run(["run", "hello", "--output-format", "json"], project, env)
    assert result.returncode == 0, result.stderr
    session_id = json.loads(result.stdout)["session_id"]
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e[0], e[2][:1]) for e in events] == [
        ("SessionStart", ["start"]),
        ("UserPromptSubmit", ["start"]),
        ("PreToolUse", ["start"]),
    ]
    assert events[0][2] == events[1][2] == ["start"]
    assert "prompt" in events[2][2]  # by the first call, the prompt is in it
    transcript = Path(events[0][1])
    assert transcript.parent.name == session_id
    assert events[1][1] == events[2][1] == str(transcript)
    # The same file holds the whole session afterwards.
    kinds = [json.loads(line)["type"] for line in transcript.read_text().splitlines()]
    assert kinds[0] == "start" and kinds.count("start") == 1 and "prompt" in kinds


def test_a_session_whose_only_prompt_a_hook_blocked_is_not_listed(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    hook = script(tmp_path, "block.sh", "#!/bin/bash\necho 'not now' >&2\nexit 2\n")
    user_hooks(tmp_path, {"UserPromptSubmit": command(hook)})
    env = env_for(fake, "openai", tmp_path)
    blocked = run(["run", "hello"], project, env)
    assert blocked.returncode != 0 and "not now" in blocked.stderr
    assert fake.bodies() == []
    assert json.loads(run(["sessions", "--json"], project, env).stdout) == []
    continued = run(["run", "--continue", "again"], project, env)
    assert continued.returncode == 2 and "no saved session to continue" in continued.stderr
