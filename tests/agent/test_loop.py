"""The agent loop against the fake model server, over both real protocols."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from codingcode.agent import open_session, parse_model
from codingcode.agent.session import AgentSession
from codingcode.agent.transcript import (
    AgentEvent,
    AgentTextDelta,
    TodosChanged,
    ToolCallFinished,
    ToolCallStarted,
)
from codingcode.tools import ToolExecCtx, ToolService, tool
from codingcode.workspace import Workspace
from tests.agent.fake_model import FakeModelServer, Step, tool_names, tool_results

pytestmark = pytest.mark.anyio


def processes_running(token: str) -> list[int]:
    """Pids whose command line contains ``token`` (works whatever PID namespace ran them)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if token in cmdline:
                found.append(int(entry.name))
    return found


def make_session(
    project: Path,
    model: str,
    events: list[AgentEvent] | None = None,
    service: ToolService | None = None,
    mode: str = "default",
    **kw: Any,
) -> AgentSession:
    sink = events.append if events is not None else (lambda e: None)
    return open_session(
        Workspace.load(project),
        model=parse_model(model, source="test"),
        service=service,
        sink=sink,
        mode=mode,
        session_id="main",
        **kw,
    )


async def test_streamed_answer(project: Path, fake: FakeModelServer, model_env: str) -> None:
    fake.script = [Step(text="Hello there, how can I help?")]
    events: list[AgentEvent] = []
    session = make_session(project, model_env, events)
    outcome = await session.send("hi")
    await session.aclose()
    assert outcome.ok and outcome.text == "Hello there, how can I help?"
    deltas = [e.text for e in events if isinstance(e, AgentTextDelta)]
    assert len(deltas) >= 2 and "".join(deltas) == outcome.text  # it really streamed
    body = fake.bodies()[0]
    assert body["stream"] is True and body["model"] == "fake-model"
    # The session's tools are offered: every core built-in plus dispatch_agent.
    names = tool_names(body)
    for expected in ("read_file", "edit_file", "execute_command", "fetch_url", "dispatch_agent"):
        assert expected in names
    headers = fake.requests[0].headers
    key = fake.env(model_env.split(":")[0]).popitem()[1]
    assert key in (
        headers.get("x-api-key"),
        headers.get("authorization", "").removeprefix("Bearer "),
    )


async def test_tool_call_result_goes_back(
    project: Path, fake: FakeModelServer, model_env: str
) -> None:
    (project / "notes.txt").write_text("alpha\nbeta\n")
    fake.script = [
        Step(text="Reading.", tool_calls=[("read_file", {"path": "notes.txt"})]),
        Step(text="The file says alpha and beta."),
    ]
    events: list[AgentEvent] = []
    session = make_session(project, model_env, events)
    outcome = await session.send("what is in notes.txt?")
    assert outcome.ok and outcome.responses == 2
    results = tool_results(fake.bodies()[1])
    assert len(results) == 1
    content, is_error = results[0]
    assert "alpha" in content and "beta" in content and not is_error
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.call.name for e in started] == ["read_file"]
    assert finished[0].result.content == content
    # The assistant's call is in the history sent back (the protocol needs it).
    assert len(fake.bodies()[1]["messages"]) > len(fake.bodies()[0]["messages"])


async def test_errors_go_back_to_the_model(
    project: Path, fake: FakeModelServer, model_env: str
) -> None:
    fake.script = [
        Step(
            tool_calls=[
                ("read_file", {"path": "missing.txt"}),
                ("no_such_tool", {}),
                ("read_file", '{"path": '),  # invalid JSON
                ("read_file", {"path": "x", "limit": 9999}),
            ]
        ),
        Step(text="ok"),
    ]
    session = make_session(project, model_env)
    outcome = await session.send("go")
    assert outcome.ok
    results = tool_results(fake.bodies()[1])
    assert len(results) == 4
    assert "File not found: missing.txt" in results[0][0]
    assert "Unknown tool 'no_such_tool'" in results[1][0]
    assert "not a JSON object" in results[2][0]
    assert "limit" in results[3][0] and "500" in results[3][0]
    if model_env.startswith("anthropic"):
        assert all(is_error for _, is_error in results)


async def test_parallel_calls_run_at_once(
    project: Path, fake: FakeModelServer, model_env: str
) -> None:
    """Two calls in one response run concurrently: each waits for the other to start."""
    started = {"a": anyio.Event(), "b": anyio.Event()}

    @tool
    async def rendezvous(me: str, other: str) -> str:
        """Wait for another call to start."""
        started[me].set()
        with anyio.fail_after(5):
            await started[other].wait()
        return f"{me} met {other}"

    service = ToolService.default()
    service.register(rendezvous)
    fake.script = [
        Step(
            tool_calls=[
                ("rendezvous", {"me": "a", "other": "b"}),
                ("rendezvous", {"me": "b", "other": "a"}),
            ]
        ),
        Step(text="both met"),
    ]
    session = make_session(project, model_env, service=service, mode="bypass")
    with anyio.fail_after(10):
        outcome = await session.send("meet")
    assert outcome.ok
    assert [c for c, _ in tool_results(fake.bodies()[1])] == ["a met b", "b met a"]


async def test_custom_tool_offered_without_further_step(
    project: Path, fake: FakeModelServer, model_env: str
) -> None:
    """C1: registering with the ToolService is all it takes."""

    @tool
    async def word_count(path: str, ctx: ToolExecCtx) -> str:
        """Count the words of a file."""
        return str(len(ctx.resolve_path(path).read_text().split()))

    (project / "a.txt").write_text("one two three")
    service = ToolService.default()
    service.register(word_count)
    fake.script = [Step(tool_calls=[("word_count", {"path": "a.txt"})]), Step(text="3 words")]
    session = make_session(project, model_env, service=service, mode="bypass")
    outcome = await session.send("count")
    assert outcome.ok
    assert "word_count" in tool_names(fake.bodies()[0])
    assert tool_results(fake.bodies()[1])[0][0] == "3"


async def test_turn_limit(project: Path, fake: FakeModelServer, model_env: str) -> None:
    (project / "f").write_text("x")
    fake.script = [Step(tool_calls=[("read_file", {"path": "f"})]) for _ in range(3)]
    session = make_session(project, model_env, max_turns=3)
    outcome = await session.send("loop forever")
    assert outcome.status == "turn_limit" and not outcome.ok
    assert "Stopped after 3 model responses" in outcome.text
    assert len(fake.requests) == 3


async def test_cancel_a_running_call_keeps_the_session(
    project: Path, fake: FakeModelServer, model_env: str
) -> None:
    fake.script = [
        Step(
            tool_calls=[
                ("execute_command", {"command": "echo started > pid; exec sleep 61.2345"}),
                ("read_file", {"path": "nothing"}),
            ]
        ),
        Step(text="second prompt answered"),
    ]
    events: list[AgentEvent] = []
    session = make_session(project, model_env, events, mode="bypass")

    def wait_for_pid_file() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if (project / "pid").exists() and (project / "pid").read_text().strip():
                return
            time.sleep(0.02)

    async def cancel_when_running() -> None:
        await anyio.to_thread.run_sync(wait_for_pid_file)
        assert processes_running("61.2345")  # it really runs before the cancel
        session.cancel()

    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_when_running)
            outcome = await session.send("run it")
    assert outcome.status == "cancelled"
    assert not processes_running("61.2345")  # the command's process is gone
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert any(e.result.error_kind == "cancelled" for e in finished)
    # The session goes on: the next prompt gets an answer, and the model saw the cancellation.
    outcome = await session.send("next")
    assert outcome.ok and outcome.text == "second prompt answered"
    assert any("cancelled" in c.lower() for c, _ in tool_results(fake.bodies()[1]))


async def test_cancel_while_streaming(project: Path, fake: FakeModelServer, model_env: str) -> None:
    fake.script = [Step(text="thinking very hard", hang=True), Step(text="fine")]
    session = make_session(project, model_env)

    async def cancel_soon() -> None:
        await anyio.to_thread.run_sync(fake.hanging.wait, 10)
        session.cancel()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_soon)
            outcome = await session.send("long")
    assert outcome.status == "cancelled"
    assert (await session.send("again")).text == "fine"


async def test_todo_list_events(project: Path, fake: FakeModelServer, model_env: str) -> None:
    plan = [{"step": "read", "status": "completed"}, {"step": "edit", "status": "in_progress"}]
    fake.script = [Step(tool_calls=[("todo_write", {"plan": plan})]), Step(text="planned")]
    events: list[AgentEvent] = []
    session = make_session(project, model_env, events)
    await session.send("plan it")
    todos = [e for e in events if isinstance(e, TodosChanged)]
    assert todos and todos[-1].todos == plan
    assert session.state.todos == plan


async def test_model_error_is_clear(project: Path, fake: FakeModelServer, model_env: str) -> None:
    from codingcode.agent.model import ModelError

    fake.script = [Step(text="model overloaded", status=400)]
    session = make_session(project, model_env)
    with pytest.raises(ModelError, match=r"HTTP 400.*model overloaded"):
        await session.send("hi")


async def test_mcp_style_names_are_valid_on_the_wire(
    project: Path, fake: FakeModelServer, model_env: str
) -> None:
    """`server:tool` is not a valid API tool name; it goes out as server__tool and comes back."""

    @tool(name="srv:echo")
    async def echo(text: str) -> str:
        """Echo the text."""
        return f"echo: {text}"

    service = ToolService.default()
    service.register(echo)
    fake.script = [Step(tool_calls=[("srv__echo", {"text": "hi"})]), Step(text="done")]
    events: list[AgentEvent] = []
    session = make_session(project, model_env, events, service=service, mode="bypass")
    assert (await session.send("echo")).ok
    import re

    names = tool_names(fake.bodies()[0])
    assert "srv__echo" in names and all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", n) for n in names)
    assert tool_results(fake.bodies()[1])[-1][0] == "echo: hi"
    assert [e.call.name for e in events if isinstance(e, ToolCallStarted)] == ["srv:echo"]
    # The history sent back uses the wire name too.
    assert "srv:echo" not in json.dumps(fake.bodies()[1]["messages"])


async def test_deferred_tool_loads_through_tool_search(
    project: Path, fake: FakeModelServer, model_env: str
) -> None:
    """L2: a deferred tool is not offered until tool_search finds it; then it is, next turn."""

    @tool(deferred=True)
    async def frobnicate(level: int) -> str:
        """Frobnicate the widget at a level."""
        return f"frobnicated at {level}"

    service = ToolService.default()
    service.register(frobnicate)
    fake.script = [
        Step(tool_calls=[("tool_search", {"query": "frobnicate widget"})]),
        Step(tool_calls=[("frobnicate", {"level": 3})]),
        Step(text="done"),
    ]
    session = make_session(project, model_env, service=service, mode="bypass")
    assert (await session.send("frob")).ok
    first, second, _ = (tool_names(b) for b in fake.bodies())
    assert "frobnicate" not in first and "tool_search" in first
    assert "frobnicate" in second
    assert tool_results(fake.bodies()[2])[-1][0] == "frobnicated at 3"


class Crash(BaseException):
    """Not an AgentError and not an Exception: what a bug below the tool layer looks like."""


async def test_a_crash_cancels_and_drains_the_other_calls(
    project: Path, fake: FakeModelServer, model_env: str
) -> None:
    token = "62.7182"

    @tool
    async def crash_when_running() -> str:
        """Crash once the sibling command runs."""

        def wait_for_sibling() -> None:
            # The file is written by the command itself, so its start has surely returned
            # (a cancel landing inside the spawn itself can leak the process: a process.py
            # race, reported, not this test's subject).
            deadline = time.monotonic() + 10
            while not (project / "started").exists() and time.monotonic() < deadline:
                time.sleep(0.02)

        await anyio.to_thread.run_sync(wait_for_sibling)
        assert processes_running(token)
        raise Crash("boom")

    service = ToolService.default()
    service.register(crash_when_running)
    fake.script = [
        Step(
            tool_calls=[
                ("execute_command", {"command": f"touch started; exec sleep {token}"}),
                ("crash_when_running", {}),
            ]
        )
    ]
    session = make_session(project, model_env, service=service, mode="bypass")
    with anyio.fail_after(15), pytest.raises(Crash):
        await session.send("go")
    # The sibling's process tree was killed, not left behind (a sandboxed tree's innermost
    # process may need a moment after its parent's death to be gone).
    deadline = time.monotonic() + 3
    while processes_running(token) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not processes_running(token)


@pytest.mark.parametrize("provider_name", ["openai"])
async def test_compatible_server_quirks(
    project: Path, fake: FakeModelServer, model_env: str, provider_name: str
) -> None:
    """Servers that reject stream_options, or send each tool call whole at index 0."""
    (project / "a").write_text("A\n")
    (project / "b").write_text("B\n")
    fake.quirks = {"no_stream_options", "index0"}
    fake.script = [
        Step(tool_calls=[("read_file", {"path": "a"}), ("read_file", {"path": "b"})]),
        Step(text="read both"),
    ]
    session = make_session(project, model_env)
    assert (await session.send("read")).ok
    results = [c for c, _ in tool_results(fake.bodies()[-1])]
    assert len(results) == 2 and "A" in results[0] and "B" in results[1]
    assert "stream_options" not in fake.bodies()[-1]
