"""Hooks written for Claude Code, from ``.claude/settings.json``, run by the real
``codingcode run`` against the scripted model: Claude-style Python and bash+jq hooks in
bypass and acceptEdits (PreToolUse fires for every matching call in every mode, a hook's
deny wins even in bypass), an HTTP hook that does not answer, and every hook configuration
of the real corpus (``/work/shared/corpus/claude-compat``, read at run time) firing on a
scripted call."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent.fake_model import FakeModelServer, Step, tool_results
from tests.e2e.test_agent_run import env_for, run
from tests.e2e.test_hooks_lifecycle import needs_jq, script

pytestmark = pytest.mark.e2e

CORPUS = Path("/work/shared/corpus/claude-compat")


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def claude_settings(project: Path, data: dict[str, Any]) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


#: Claude Code's file-guard example: exit 2 for a protected path, a log line otherwise.
GUARD = f"""#!{sys.executable}
import json, os, sys
data = json.load(sys.stdin)
path = data["tool_input"].get("file_path") or data["tool_input"].get("command", "")
with open(os.environ["GUARD_LOG"], "a") as log:
    log.write(data["hook_event_name"] + " " + data["tool_name"] + " " + data["permission_mode"] + "\\n")
if "protected" in path:
    print(f"Blocked: {{path}} is protected", file=sys.stderr)
    sys.exit(2)
"""


@needs_jq
@pytest.mark.parametrize("mode", ["bypass", "acceptEdits"])
def test_claude_style_hooks_fire_in_every_mode(
    project: Path, fake: FakeModelServer, tmp_path: Path, mode: str
) -> None:
    log = tmp_path / "guard.log"
    post = tmp_path / "post.log"
    jq_logger = script(
        tmp_path,
        "post.sh",
        "#!/bin/bash\njq -r '.hook_event_name + \" \" + .tool_name' >> " + str(post) + "\n",
    )
    guard = script(tmp_path, "guard.py", GUARD)
    claude_settings(
        project,
        {
            "hooks": {
                "PreToolUse": [
                    {
                        "matcher": "Read|Edit|Write|Bash",
                        "hooks": [{"type": "command", "command": guard}],
                    }
                ],
                "PostToolUse": [
                    {"matcher": "", "hooks": [{"type": "command", "command": jq_logger}]}
                ],
            }
        },
    )
    (project / "notes.md").write_text("hello\n")
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "protected.txt", "content": "x\n"})]),
        Step(tool_calls=[("write_file", {"path": "src.txt", "content": "y\n"})]),
        Step(tool_calls=[("read_file", {"path": "notes.md"})]),
        Step(text="Done."),
    ]
    env = env_for(fake, "openai", tmp_path) | {"GUARD_LOG": str(log), "CODINGCODE_TRUST_ALL": "1"}
    result = run(["run", "--mode", mode, "go"], project, env)
    assert result.returncode == 0, result.stderr
    # ground truth: the hook's exit 2 held even in bypass; the other write happened
    assert not (project / "protected.txt").exists()
    assert (project / "src.txt").read_text() == "y\n"
    refused, _ = tool_results(fake.bodies()[1])[-1]
    assert "is protected" in refused
    # PreToolUse fired for every matching call: the edits the mode passes and the read
    assert log.read_text().splitlines() == [
        f"PreToolUse write_file {mode}",
        f"PreToolUse write_file {mode}",
        f"PreToolUse read_file {mode}",
    ]
    assert post.read_text().splitlines() == ["PostToolUse write_file", "PostToolUse read_file"]


def test_an_http_hook_that_does_not_answer_times_out_and_the_call_goes_on(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    import socket

    silent = socket.socket()  # accepts connections, never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]
    try:
        claude_settings(
            project,
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "Write",
                            "hooks": [
                                {"type": "http", "url": f"http://127.0.0.1:{port}/h", "timeout": 2}
                            ],
                        }
                    ]
                }
            },
        )
        fake.script = [
            Step(tool_calls=[("write_file", {"path": "a.txt", "content": "a\n"})]),
            Step(text="ok"),
        ]
        env = env_for(fake, "openai", tmp_path) | {"CODINGCODE_TRUST_ALL": "1"}
        started = time.monotonic()
        result = run(["run", "--mode", "acceptEdits", "go"], project, env)
        took = time.monotonic() - started
    finally:
        silent.close()
    assert result.returncode == 0, result.stderr
    assert (project / "a.txt").read_text() == "a\n"
    lines = [line for line in result.stderr.splitlines() if "did not answer within 2s" in line]
    assert len(lines) == 1, result.stderr
    assert took >= 2


# -- the corpus ---------------------------------------------------------------------------
def _manifest(kind: str) -> list[dict[str, Any]]:
    if not (CORPUS / "manifest.jsonl").exists():
        return []
    items = [json.loads(line) for line in (CORPUS / "manifest.jsonl").read_text().splitlines()]
    return [i for i in items if i["kind"] == kind and i["counts"]]


corpus = pytest.mark.skipif(
    not (CORPUS / "manifest.jsonl").exists(), reason=f"the corpus {CORPUS} is not on this machine"
)

RECORDER = f"""#!{sys.executable}
import json, os, sys
data = json.load(sys.stdin)
with open(os.environ["HOOK_LOG"], "a") as log:
    log.write(json.dumps([sys.argv[1], data["hook_event_name"]]) + "\\n")
"""

#: The events a headless scripted run raises (a session, a prompt, tool calls, a failed
#: call, the end of the turn).
SCRIPTED_EVENTS = {
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SessionEnd",
}


def corpus_settings(item: dict[str, Any], recorder: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The corpus file as Claude Code reads it, every hook command replaced by the recorder
    (the README's "every hook command replaced"); and each hook's id → its event."""
    data = json.loads((CORPUS / item["file"]).read_text())
    if item["expect"]["form"] == "hooks-object":
        data = {"hooks": data.get("hooks", data)}
    ids: dict[str, str] = {}
    for event, matchers in data["hooks"].items():
        for i, m in enumerate(matchers):
            for j, h in enumerate(m["hooks"]):
                hook_id = f"{event}.{i}.{j}"
                h["type"] = "command"
                h["command"] = f"{recorder} {hook_id}"
                h.pop("shell", None)  # the recorder is a script of its own
                if event in SCRIPTED_EVENTS:
                    ids[hook_id] = event
    return data, ids


@corpus
@pytest.mark.parametrize("item", _manifest("hooks"), ids=lambda i: i["id"])
def test_every_corpus_hook_configuration_fires(
    project: Path, fake: FakeModelServer, tmp_path: Path, item: dict[str, Any]
) -> None:
    recorder = script(tmp_path, "rec.py", RECORDER)
    data, expected = corpus_settings(item, recorder)
    claude_settings(project, data)
    (project / "notes.md").write_text("hello\n")
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "a.py", "content": "x = 1\n"})]),
        Step(tool_calls=[("edit_file", {"path": "a.py", "old_string": "1", "new_string": "2"})]),
        Step(tool_calls=[("read_file", {"path": "notes.md"})]),
        Step(tool_calls=[("read_file", {"path": "missing.md"})]),
        Step(tool_calls=[("execute_command", {"command": "git commit -m x"})]),
        Step(tool_calls=[("execute_command", {"command": "git push"})]),
        Step(text="Done."),
    ]
    log = tmp_path / "hooks.log"
    env = env_for(fake, "openai", tmp_path) | {
        "HOOK_LOG": str(log),
        "CODINGCODE_TRUST_ALL": "1",
    }
    result = run(["run", "--mode", "bypass", "go"], project, env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    fired: set[str] = set()
    deadline = time.monotonic() + 10  # `async` hooks finish on their own time
    while time.monotonic() < deadline:
        fired = (
            {json.loads(line)[0] for line in log.read_text().splitlines()}
            if log.exists()
            else set()
        )
        if set(expected) <= fired:
            break
        time.sleep(0.2)
    assert expected, "the configuration has hooks of events a scripted run raises"
    assert set(expected) <= fired, sorted(set(expected) - fired)


def test_a_prompt_hook_asks_the_model_once_and_its_no_refuses_the_call(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    claude_settings(
        project,
        {
            "hooks": {
                "PreToolUse": [
                    {
                        "matcher": "Write",
                        "hooks": [
                            {"type": "prompt", "prompt": "May this run? $ARGUMENTS", "timeout": 30}
                        ],
                    }
                ]
            }
        },
    )
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "w.txt", "content": "w\n"})]),
        Step(text='{"ok": false, "reason": "no writes on Sunday"}'),  # the hook's model call
        Step(text="understood"),
    ]
    env = env_for(fake, "openai", tmp_path) | {"CODINGCODE_TRUST_ALL": "1"}
    result = run(["run", "--mode", "bypass", "go"], project, env)
    assert result.returncode == 3, result.stderr  # the run's exit code for a denied call
    assert "no writes on Sunday" in result.stderr
    assert not (project / "w.txt").exists()
    asked = fake.bodies()[1]
    assert asked.get("tools") in (None, [])  # one plain model call
    assert "May this run?" in asked["messages"][-1]["content"]
    assert '"tool_name": "write_file"' in asked["messages"][-1]["content"]
    refused, _ = tool_results(fake.bodies()[2])[-1]
    assert "no writes on Sunday" in refused


@pytest.mark.parametrize("output_format", ["stream-json", "text"])
def test_a_status_message_is_shown_while_the_hook_runs(
    project: Path, fake: FakeModelServer, tmp_path: Path, output_format: str
) -> None:
    marker = tmp_path / "ran"
    claude_settings(
        project,
        {
            "hooks": {
                "PreToolUse": [
                    {
                        "matcher": "Write",
                        "hooks": [
                            {
                                "type": "command",
                                "command": f"touch {marker}",
                                "statusMessage": "Checking the write",
                            }
                        ],
                    }
                ]
            }
        },
    )
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "a.txt", "content": "a\n"})]),
        Step(text="ok"),
    ]
    env = env_for(fake, "openai", tmp_path) | {"CODINGCODE_TRUST_ALL": "1"}
    args = ["run", "--mode", "acceptEdits", "--output-format", output_format, "go"]
    result = run(args, project, env)
    assert result.returncode == 0, result.stderr
    assert marker.exists()
    if output_format == "text":
        assert result.stderr.count("… Checking the write (PreToolUse hook)") == 1, result.stderr
        return
    records = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [(r["type"], r.get("state")) for r in records]
    start = kinds.index(("hook_status", "start"))
    end = kinds.index(("hook_status", "end"))
    result_at = next(i for i, r in enumerate(records) if r["type"] == "tool_result")
    assert start < end < result_at  # shown while the hook ran, before the call's result
    assert records[start]["message"] == "Checking the write"
    assert records[start]["event"] == "PreToolUse"


def test_an_http_hook_the_network_policy_refuses_is_one_line_and_the_call_goes_on(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    import socket

    listener = socket.socket()  # would answer nothing; must not even be connected to
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0)
    port = listener.getsockname()[1]
    try:
        claude_settings(
            project,
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "Write",
                            "hooks": [{"type": "http", "url": f"http://127.0.0.1:{port}/h"}],
                        }
                    ]
                }
            },
        )
        ours = project / ".codingcode" / "settings.json"
        ours.parent.mkdir(exist_ok=True)
        ours.write_text(
            json.dumps(
                {"sandbox": {"network": {"mode": "limited", "allowedDomains": ["pypi.org"]}}}
            )
        )
        fake.script = [
            Step(tool_calls=[("write_file", {"path": "a.txt", "content": "a\n"})]),
            Step(text="ok"),
        ]
        env = env_for(fake, "openai", tmp_path) | {"CODINGCODE_TRUST_ALL": "1"}
        result = run(["run", "--mode", "acceptEdits", "go"], project, env)
        with pytest.raises(BlockingIOError):
            listener.accept()  # ground truth: no connection was ever made
    finally:
        listener.close()
    assert result.returncode == 0, result.stderr
    assert (project / "a.txt").read_text() == "a\n"
    lines = [line for line in result.stderr.splitlines() if "network policy" in line]
    assert len(lines) == 1, result.stderr
    assert "127.0.0.1 is not in sandbox.network.allowedDomains" in lines[0]
