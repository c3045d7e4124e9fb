"""``codingcode run`` end to end: the real command against the fake model server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step, system_text, tool_names, tool_results

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def env_for(fake: FakeModelServer, provider: str, tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "CODINGCODE_"))
    }
    env |= fake.env(provider)
    env["CODINGCODE_CONFIG_DIR"] = str(tmp_path / "user-config")
    env["CODINGCODE_STATE_DIR"] = str(tmp_path / "user-state")
    env["CODINGCODE_MODEL"] = f"{provider}:fake-model"
    return env


def run(
    args: list[str], project: Path, env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codingcode", *args],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_run_reads_and_edits_a_file(
    project: Path, fake: FakeModelServer, tmp_path: Path, provider: str
) -> None:
    (project / "greet.py").write_text('print("hello")\n')
    fake.script = [
        Step(text="Let me look.", tool_calls=[("read_file", {"path": "greet.py"})]),
        Step(
            tool_calls=[
                (
                    "edit_file",
                    {"path": "greet.py", "old_string": '"hello"', "new_string": '"hello, world"'},
                )
            ]
        ),
        Step(text="Changed the greeting to hello, world."),
    ]
    result = run(
        ["run", "make it greet the world", "--mode", "acceptEdits"],
        project,
        env_for(fake, provider, tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Changed the greeting to hello, world."
    assert (project / "greet.py").read_text() == 'print("hello, world")\n'
    assert "> read_file(" in result.stderr and "> edit_file(" in result.stderr
    bodies = fake.bodies()
    assert 'print("hello")' in tool_results(bodies[1])[-1][0]
    assert str(project) in system_text(bodies[0])


def test_headless_ask_becomes_deny(project: Path, fake: FakeModelServer, tmp_path: Path) -> None:
    """In default mode an edit needs confirmation; with no one to ask, it is denied."""
    (project / "a.txt").write_text("old\n")
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "a.txt", "content": "new\n"})]),
        Step(text="I could not write it."),
    ]
    result = run(["run", "overwrite a.txt"], project, env_for(fake, "openai", tmp_path))
    # The model gave up right after the denial: exit 3, its answer still printed.
    assert result.returncode == 3, result.stderr
    assert result.stdout.strip() == "I could not write it."
    assert (project / "a.txt").read_text() == "old\n"
    denial, _ = tool_results(fake.bodies()[1])[-1]
    assert "denied" in denial.lower()


def test_json_transcript(project: Path, fake: FakeModelServer, tmp_path: Path) -> None:
    (project / "n.txt").write_text("42\n")
    fake.script = [
        Step(tool_calls=[("read_file", {"path": "n.txt"}), ("search_files", {"pattern": "*.txt"})]),
        Step(text="The number is 42."),
    ]
    result = run(["run", "what number?", "--json"], project, env_for(fake, "anthropic", tmp_path))
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["ok"] is True and payload["status"] == "answered"
    assert (
        payload["answer"] == "The number is 42."
        and payload["num_turns"] == 2
        and payload["turn"] == 1
    )
    assert payload["model"] == "anthropic:fake-model"
    roles = [m["role"] for m in payload["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    kinds = [e["type"] for e in payload["events"]]
    assert kinds.count("tool_call_started") == 2 and kinds.count("tool_call_finished") == 2
    # Both calls of the one response were sent back together, in order.
    results = tool_results(fake.bodies()[1])
    assert "42" in results[0][0] and "n.txt" in results[1][0]


def test_sub_agent_through_the_cli(project: Path, fake: FakeModelServer, tmp_path: Path) -> None:
    (project / "lib.py").write_text("VALUE = 7\n")
    fake.script = [
        Step(tool_calls=[("dispatch_agent", {"agent": "explore", "prompt": "Find VALUE."})]),
        Step(tool_calls=[("search_code", {"pattern": "VALUE"})]),
        Step(text="VALUE is 7 in lib.py:1."),
        Step(text="VALUE is 7."),
    ]
    result = run(["run", "what is VALUE?", "--json"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["answer"] == "VALUE is 7."
    sub_events = [e for e in payload["events"] if "/explore-1" in e["session_id"]]
    assert any(
        e["type"] == "tool_call_started" and e["call"]["name"] == "search_code" for e in sub_events
    )
    assert "lib.py:1" in tool_results(fake.bodies()[2])[-1][0]
    assert "dispatch_agent" not in tool_names(fake.bodies()[1])
    assert tool_results(fake.bodies()[3])[-1][0] == "VALUE is 7 in lib.py:1."
    # The same audit log records both sessions' calls, the sub-agent's linked to its parent.
    from codingcode.record.audit import AuditLog

    records = AuditLog(tmp_path / "user-state" / "audit.db").query(limit=500)
    by_tool = {(r.tool, r.session) for r in records}
    main_id = payload["session_id"]
    assert ("dispatch_agent", main_id) in by_tool
    assert ("search_code", f"{main_id}/explore-1") in by_tool


def test_no_model_configured(project: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODINGCODE_")}
    env["CODINGCODE_CONFIG_DIR"] = str(tmp_path / "cfg")
    result = run(["run", "hi"], project, env)
    assert result.returncode == 2
    assert "No model is configured" in result.stderr and "--model" in result.stderr
    assert "`codingcode tool` and `codingcode mcp` need no model" in result.stderr
    assert "Traceback" not in result.stderr


def test_model_unreachable(project: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODINGCODE_"))}
    env |= {
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEY": "x",
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "cfg"),
        "OPENAI_MAX_RETRIES": "0",
    }
    result = run(["run", "hi", "--model", "openai:m"], project, env)
    assert result.returncode == 1
    assert "Cannot reach the model endpoint" in result.stderr and "Traceback" not in result.stderr


def test_turn_limit_exit_code(project: Path, fake: FakeModelServer, tmp_path: Path) -> None:
    (project / "f").write_text("x")
    fake.script = [Step(tool_calls=[("read_file", {"path": "f"})]) for _ in range(2)]
    result = run(["run", "loop", "--max-turns", "2"], project, env_for(fake, "openai", tmp_path))
    assert result.returncode == 4
    assert "Stopped after 2 model responses" in result.stderr


def test_ctrl_c_cancels_and_kills_the_command(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    token = "73.4561"
    fake.script = [
        Step(tool_calls=[("execute_command", {"command": f"touch started; exec sleep {token}"})]),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "codingcode", "run", "sleep", "--mode", "bypass"],
        cwd=project,
        env=env_for(fake, "openai", tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (project / "started").exists():
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert _running(token)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert not _running(token)


def _running(token: str) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes().replace(b"\0", b" "):
                    return True
            except OSError:
                continue
    return False


def test_project_mcp_server_tools_reach_the_model(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    """A trusted project's .mcp.json server: its tools are offered and called through run."""
    server = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "tiny_server.py"
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"tiny": {"command": sys.executable, "args": [str(server)]}}})
    )
    env = env_for(fake, "anthropic", tmp_path)
    fake.script = [Step(text="nothing to do")]
    untrusted = run(["run", "hi"], project, env)
    assert untrusted.returncode == 0, untrusted.stderr
    assert "note: MCP server 'tiny'" in untrusted.stderr  # not started, and it says so
    assert not any(n.startswith("tiny") for n in tool_names(fake.bodies()[0]))

    assert run(["trust"], project, env).returncode == 0
    assert run(["rules", "add", "allow", "tiny:*"], project, env).returncode == 0
    fake.script = [
        Step(tool_calls=[("tiny__shout", {"text": "hello"})]),
        Step(text="It shouted."),
    ]
    result = run(["run", "shout hello"], project, env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "It shouted."
    assert "tiny__shout" in tool_names(fake.bodies()[1])
    assert "HELLO" in tool_results(fake.bodies()[2])[-1][0]


def test_prompt_from_stdin(project: Path, fake: FakeModelServer, tmp_path: Path) -> None:
    fake.script = [Step(text="read it")]
    result = subprocess.run(
        [sys.executable, "-m", "codingcode", "run", "-", "--quiet"],
        cwd=project,
        input="a long task\nover two lines\n",
        capture_output=True,
        text=True,
        env=env_for(fake, "openai", tmp_path),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "read it\n" and result.stderr == ""
    user = [m for m in fake.bodies()[0]["messages"] if m["role"] == "user"]
    assert user[-1]["content"] == "a long task\nover two lines\n"


def test_missing_credentials_are_a_clear_error(project: Path, tmp_path: Path) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    base |= {"HOME": str(tmp_path), "CODINGCODE_CONFIG_DIR": str(tmp_path / "cfg")}
    for model, needle in [
        ("anthropic:claude-sonnet-4-5", "No Anthropic credentials: set ANTHROPIC_API_KEY"),
        ("openai:gpt-4.1", "OPENAI_API_KEY is not set"),
    ]:
        result = run(["run", "hi", "--model", model], project, base)
        assert result.returncode == 1, result.stderr
        assert needle in result.stderr and "Traceback" not in result.stderr


def test_installed_plugin_tool_is_offered_by_run(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    """C1 through the CLI: a package's `codingcode.tools` entry point registers at set-up."""
    site = tmp_path / "site"
    (site / "cc_plugin_demo-0.1.dist-info").mkdir(parents=True)
    (site / "cc_plugin_demo-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: cc-plugin-demo\nVersion: 0.1\n"
    )
    (site / "cc_plugin_demo-0.1.dist-info" / "entry_points.txt").write_text(
        "[codingcode.tools]\nreverse = cc_plugin_demo:reverse\n"
    )
    (site / "cc_plugin_demo.py").write_text(
        "from codingcode.tools import tool\n\n"
        "@tool\nasync def reverse(text: str) -> str:\n"
        '    """Reverse a text."""\n    return text[::-1]\n'
    )
    env = env_for(fake, "openai", tmp_path) | {"PYTHONPATH": str(site)}
    assert run(["rules", "add", "allow", "reverse"], project, env).returncode == 0
    fake.script = [Step(tool_calls=[("reverse", {"text": "abc"})]), Step(text="reversed")]
    result = run(["run", "reverse abc"], project, env)
    assert result.returncode == 0, result.stderr
    assert "reverse" in tool_names(fake.bodies()[0])
    assert tool_results(fake.bodies()[1])[-1][0] == "cba"
    # the same tool reaches every other front end: tools, tool and check
    assert "reverse" in run(["tools"], project, env).stdout
    called = run(["tool", "reverse", '{"text": "xyz"}'], project, env)
    assert called.returncode == 0 and called.stdout.strip() == "zyx", called.stderr
    checked = run(["check", "reverse", '{"text": "x"}'], project, env)
    assert json.loads(checked.stdout)["decision"] == "allow"


def test_mode_defaults_to_the_settings(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    """Without --mode, permissions.defaultMode of the (user's) settings decides."""
    env = env_for(fake, "openai", tmp_path)
    cfg = Path(env["CODINGCODE_CONFIG_DIR"])
    cfg.mkdir(parents=True)
    (cfg / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "acceptEdits"}}))
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "n.txt", "content": "x\n"})]),
        Step(text="written"),
    ]
    result = run(["run", "write", "--json"], project, env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["mode"] == "acceptEdits"
    assert (project / "n.txt").read_text() == "x\n"


def test_a_session_without_mcp_servers_loads_no_mcp_sdk(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    """The MCP SDK is a tenth of a session's start-up: a project without servers (and every
    `codingcode run` of a fleet) does not pay for it, nor for the other provider's SDK."""
    from tests.cli.test_startup import heavy_among, imported

    fake.script = [Step(text="done")]
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "codingcode", "run", "hi"],
        cwd=project,
        capture_output=True,
        text=True,
        env=env_for(fake, "openai", tmp_path),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "done"
    names = imported(proc.stderr)
    assert "openai" in names and "codingcode.mcp.client" in names  # what it did use
    heavy = ("mcp", "mcp_types", "anthropic", "codingcode.mcp.connection")
    assert heavy_among(names, heavy) == []
