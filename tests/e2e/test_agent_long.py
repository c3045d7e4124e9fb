"""Long work end to end: the real ``codingcode`` against the scripted model server.

A 20-turn session whose tool outputs add up to several times the model's window ends
normally (compaction before the window is full, and again when the server refuses a request
as too long, as OpenAI and Anthropic do); ``--continue`` sends the earlier turns;
stream-json lines parse; AGENTS.md and the date reach the system prompt.
"""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.agent.fake_model import FakeModelServer, Step, request_tokens, system_text
from tests.e2e.test_agent_run import env_for, fake, run

pytestmark = pytest.mark.e2e
__all__ = ["fake"]

SUMMARY_MARK = "You summarise"


def is_summary_request(body: dict[str, Any]) -> bool:
    return SUMMARY_MARK in system_text(body)


def settings(project: Path, **values: Any) -> None:
    (project / ".codingcode").mkdir(exist_ok=True)
    (project / ".codingcode" / "settings.json").write_text(json.dumps(values))


def long_script(turns: int, files: int) -> list[Any]:
    """The agent reads ``files`` big files, one a turn (then answers); summary requests get a
    summary, whenever they come."""
    state = {"turn": 0, "summaries": 0}

    def step(body: dict[str, Any]) -> Step:
        if is_summary_request(body):
            assert not body.get("tools"), "the summary call must offer no tools"
            state["summaries"] += 1
            return Step(text=f"Summary {state['summaries']}: read big files so far.")
        state["turn"] += 1
        if state["turn"] <= turns:
            name = f"big{state['turn'] % files}.txt"
            return Step(tool_calls=[("read_file", {"path": name, "limit": 500})])
        return Step(text="All files read; done.")

    return [step] * (turns * 3 + 10)


def make_big_files(project: Path, files: int) -> int:
    size = 0
    for i in range(files):
        text = "".join(f"file {i} line {n:04d} " + "x" * 40 + "\n" for n in range(300))
        (project / f"big{i}.txt").write_text(text)
        size = len(text)
    return size


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_twenty_turns_over_a_small_window_end_normally(
    project: Path, fake: FakeModelServer, tmp_path: Path, provider: str
) -> None:
    """The server refuses requests over its window; the settings' window is right, so the
    loop compacts before it is full. Raw tool outputs add up to ~10x the window."""
    window = 8_000
    size = make_big_files(project, 3)
    assert 20 * size / 4 > 8 * window
    settings(project, contextWindow=window, toolOutputLimit=6_000)
    fake.context_window = window
    fake.script = long_script(20, 3)
    result = run(["run", "read them all"], project, env_for(fake, provider, tmp_path), timeout=240)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "All files read; done."
    agent_requests = [b for b in fake.bodies() if not is_summary_request(b)]
    assert len(agent_requests) == 21
    summaries = [b for b in fake.bodies() if is_summary_request(b)]
    assert summaries, "the conversation was never compacted"
    # Compacted in time: no request had to be refused.
    assert fake.refused == 0
    assert all(request_tokens(b) <= window for b in fake.bodies())
    # After a compaction the summary goes on in the conversation.
    last = json.dumps(agent_requests[-1])
    assert "Summary of the earlier part of this conversation" in last
    # Each output was spilled whole to the session's directory; the model got the path.
    outputs = list((tmp_path / "user-state" / "projects").glob("*/*/outputs/*.txt"))
    assert len(outputs) == 20
    assert all("line 0299" in p.read_text() and p.stat().st_size > 6_000 for p in outputs)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_context_length_exceeded_compacts_and_retries(
    project: Path, fake: FakeModelServer, tmp_path: Path, provider: str
) -> None:
    """The settings claim a far bigger window than the server has: the loop learns from the
    server's refusal (OpenAI 400 context_length_exceeded / Anthropic "prompt is too long")."""
    window = 8_000
    make_big_files(project, 3)
    settings(project, contextWindow=400_000, toolOutputLimit=6_000)
    fake.context_window = window
    fake.script = long_script(20, 3)
    result = run(["run", "read them all"], project, env_for(fake, provider, tmp_path), timeout=240)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "All files read; done."
    assert fake.refused >= 1
    assert any(is_summary_request(b) for b in fake.bodies())


def test_overflow_that_compaction_cannot_fix_is_one_line(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    fake.context_window = 300  # smaller than the system prompt and tools alone
    fake.script = [Step(text="never")]
    result = run(["run", "hi"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "too long" in lines[0] and "Traceback" not in result.stderr


def sessions(project: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    out = run(["sessions", "--json"], project, env)
    assert out.returncode == 0, out.stderr
    rows: list[dict[str, Any]] = json.loads(out.stdout)
    return rows


def test_continue_resume_and_fork(project: Path, fake: FakeModelServer, tmp_path: Path) -> None:
    env = env_for(fake, "openai", tmp_path)
    fake.script = [Step(text="Noted: the number is 42.")]
    first = run(["run", "remember the number 42"], project, env)
    assert first.returncode == 0, first.stderr
    [row] = sessions(project, env)
    assert row["first_prompt"] == "remember the number 42" and row["turns"] == 1
    assert row["input_tokens"] > 0

    fake.script = [Step(text="It was 42.")]
    again = run(["run", "--continue", "what was the number?"], project, env)
    assert again.returncode == 0, again.stderr
    sent = fake.bodies()[-1]["messages"]
    texts = [m.get("content") for m in sent]
    assert "remember the number 42" in texts and "Noted: the number is 42." in texts
    assert texts[-1] == "what was the number?"
    assert len(sessions(project, env)) == 1  # the same session went on

    # --fork: a copy with a new id; the original is left as it was.
    original = next((tmp_path / "user-state" / "projects").glob(f"*/{row['id']}/session.jsonl"))
    before = original.read_bytes()
    fake.script = [Step(text="Forked.")]
    forked = run(
        ["run", "--resume", row["id"][:12], "--fork", "--output-format", "json", "go on"],
        project,
        env,
    )
    assert forked.returncode == 0, forked.stderr
    payload = json.loads(forked.stdout)
    assert payload["session_id"] != row["id"]
    assert original.read_bytes() == before
    rows = sessions(project, env)
    assert {r["id"] for r in rows} == {row["id"], payload["session_id"]}
    assert [r["parent"] for r in rows if r["id"] == payload["session_id"]] == [row["id"]]
    sent = fake.bodies()[-1]["messages"]
    assert any(m.get("content") == "It was 42." for m in sent)


def test_stream_json(project: Path, fake: FakeModelServer, tmp_path: Path) -> None:
    (project / "n.txt").write_text("42\n")
    fake.script = [
        Step(text="Reading.", tool_calls=[("read_file", {"path": "n.txt"})]),
        Step(text="The number is 42."),
    ]
    proc = subprocess.Popen(
        [*run_argv(), "run", "--output-format", "stream-json", "what number?"],
        cwd=project,
        env=env_for(fake, "openai", tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    kinds = [r["type"] for r in records]
    assert kinds[0] == "init" and kinds[-1] == "result"
    init = records[0]
    assert init["model"] == "openai:fake-model" and "read_file" in init["tools"]
    assert all(r["session_id"] == init["session_id"] for r in records)
    order = [k for k in kinds if k in ("tool_call", "decision", "tool_result")]
    assert order == ["tool_call", "decision", "tool_result"]
    decision = records[kinds.index("decision")]
    assert decision["decision"] == "allow" and decision["tool"] == "read_file"
    assert "42" in records[kinds.index("tool_result")]["content"]
    assert kinds.count("usage") == 2 and kinds.count("assistant") == 2
    final = records[-1]
    assert final["answer"] == "The number is 42." and final["num_turns"] == 2 and final["turn"] == 1
    assert final["status"] == "answered" and final["exit_code"] == 0
    assert final["usage"]["input_tokens"] == 22 and final["usage"]["output_tokens"] == 14


def run_argv() -> list[str]:
    import sys

    return [sys.executable, "-m", "codingcode"]


def test_stream_json_model_error_ends_with_a_result(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    fake.script = [Step(text="overloaded", status=400)]
    result = run(
        ["run", "--output-format", "stream-json", "hi"], project, env_for(fake, "openai", tmp_path)
    )
    assert result.returncode == 1
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records[0]["type"] == "init" and records[-1]["type"] == "result"
    assert records[-1]["status"] == "error" and "refused" in records[-1]["error"]


def git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True)


def test_agents_md_date_and_environment_reach_the_system_prompt(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    git(project, "init", "-q", "-b", "feature-x")
    (project / "AGENTS.md").write_text(
        "Always run the linter.\nStyle: @docs/style.md\nSecrets: @.env\n"
    )
    (project / "docs").mkdir()
    (project / "docs" / "style.md").write_text("Use four spaces.\n")
    (project / ".env").write_text("API_TOKEN=very-secret-value\n")
    (project / "CLAUDE.md").write_text("ALSO READ: CLAUDE.md beside AGENTS.md.\n")
    user = tmp_path / "user-config"
    user.mkdir()
    (user / "AGENTS.md").write_text("User says: be brief.\n")
    settings(project, appendSystemPrompt="From the settings: hello.")
    fake.script = [Step(text="ok")]
    result = run(
        ["run", "--mode", "plan", "--append-system-prompt", "From the flag: bye.", "hi"],
        project,
        env_for(fake, "openai", tmp_path),
    )
    assert result.returncode == 0, result.stderr
    system = system_text(fake.bodies()[0])
    assert datetime.date.today().isoformat() in system
    assert "Always run the linter." in system and "Use four spaces." in system
    assert "very-secret-value" not in system and "@.env not imported" in system
    assert "ALSO READ: CLAUDE.md beside AGENTS.md." in system  # both, as Claude Code users expect
    assert system.index("User says: be brief.") < system.index("Always run the linter.")
    assert "feature-x" in system and "uncommitted changes" in system
    assert "Permission mode: plan" in system and "present a plan" in system
    assert "Network:" in system and "read_file" in system
    assert system.index("From the settings: hello.") < system.index("From the flag: bye.")


def test_tool_rules_on_the_command_line(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    (project / "a.txt").write_text("old\n")
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "a.txt", "content": "new\n"})]),
        Step(text="Written."),
    ]
    result = run(
        ["run", "--allowed-tools", "write_file(a.txt)", "--disallowed-tools", "fetch_url", "go"],
        project,
        env_for(fake, "openai", tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert (project / "a.txt").read_text() == "new\n"
    names = [t["function"]["name"] for t in fake.bodies()[0]["tools"]]
    assert "fetch_url" not in names and "write_file" in names
    bad = run(
        ["run", "--allowed-tools", "read_file(", "go"], project, env_for(fake, "openai", tmp_path)
    )
    assert bad.returncode == 2 and "--allowed-tools" in bad.stderr


def test_bad_session_input_is_one_line(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    env = env_for(fake, "openai", tmp_path)
    nothing = run(["run", "--continue", "hi"], project, env)
    assert nothing.returncode == 2 and "no saved session" in nothing.stderr
    unknown = run(["run", "--resume", "nope", "hi"], project, env)
    assert unknown.returncode == 2 and "No session 'nope'" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1

    fake.script = [Step(text="first")]
    assert run(["run", "one"], project, env).returncode == 0
    path = next((tmp_path / "user-state" / "projects").glob("*/*/session.jsonl"))
    good = path.read_bytes()
    # A crash while writing the last record: skipped with a note, the session goes on.
    path.write_bytes(good + b'{"type":"message","mess')
    fake.script = [Step(text="second")]
    cut = run(["run", "--continue", "two"], project, env)
    assert cut.returncode == 0, cut.stderr
    assert "was cut" in cut.stderr and cut.stdout.strip() == "second"
    lines = path.read_bytes().split(b"\n")
    assert lines[: len(good.split(b"\n")) - 1] == good.split(b"\n")[:-1]
    # A damaged line in the middle: refused, nothing written.
    damaged = good.replace(b'"type":"usage"', b'"type":usage"', 1)
    path.write_bytes(damaged)
    refused = run(["run", "--continue", "three"], project, env)
    assert refused.returncode == 2 and "damaged at line" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert path.read_bytes() == damaged


def test_global_options_before_the_sub_command(project: Path, tmp_path: Path) -> None:
    env = {
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "c"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "s"),
    }
    import os

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CODINGCODE_")}, **env}
    args = ["check", "write_file", '{"path": "a.txt", "content": "x"}']
    plan = run(["--mode", "plan", *args], tmp_path, env)
    default = run([*args, "--project", str(project)], tmp_path, env)
    assert json.loads(plan.stdout)["decision"] == "deny"
    assert json.loads(default.stdout)["decision"] == "ask"
    listed = run(["-p", str(project), "tools", "--json"], tmp_path, env)
    assert listed.returncode == 0, listed.stderr
    names = {t["name"]: t for t in json.loads(listed.stdout)}
    assert names["dispatch_agent"]["kind"] == "agent" and names["read_file"]["kind"] == "builtin"
    refused = run(["--model", "openai:x", "audit"], tmp_path, env)
    assert (
        refused.returncode == 2 and "--model does not apply to `codingcode audit`" in refused.stderr
    )
    rules = run(["-p", str(project), "rules", "list", "--json"], tmp_path, env)
    assert rules.returncode == 0, rules.stderr


def test_tools_lists_mcp_tools_once_trusted(project: Path, tmp_path: Path) -> None:
    import os
    import sys

    server = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "tiny_server.py"
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"tiny": {"command": sys.executable, "args": [str(server)]}}})
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODINGCODE_")}
    env |= {
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "c"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "s"),
    }
    before = run(["tools", "-p", str(project), "--json"], tmp_path, env)
    assert before.returncode == 0, before.stderr
    assert not any(t["name"].startswith("tiny:") for t in json.loads(before.stdout))
    assert "tiny" in before.stderr  # the note says the server was not started
    assert run(["trust", "-p", str(project)], tmp_path, env).returncode == 0
    after = run(["-p", str(project), "tools"], tmp_path, env)
    assert after.returncode == 0, after.stderr
    assert "tiny:add" in after.stdout and "(mcp)" in after.stdout
