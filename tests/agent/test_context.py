"""The system prompt (instructions, imports, environment), spilled outputs, compaction."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from codingcode.agent.context.compaction import compact, render, split_point
from codingcode.agent.context.prompt import (
    MAX_IMPORT_DEPTH,
    environment,
    load_instructions,
    render_instructions,
)
from codingcode.agent.context.settings import load_agent_settings
from codingcode.agent.context.spill import spill_output
from codingcode.agent.context.tokens import context_window, cost_usd
from codingcode.agent.session import approval_import_check
from codingcode.agent.transcript import (
    Message,
    TextDelta,
    ToolCall,
    ToolResult,
    TurnComplete,
    Usage,
)
from codingcode.config import SettingsError
from codingcode.runner import build_runner
from codingcode.workspace import Workspace


@pytest.fixture(autouse=True)
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "user-config"))
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "user-state"))
    return tmp_path


def test_instruction_order_and_fallback(project: Path, tmp_path: Path) -> None:
    (project / ".git").mkdir()
    sub = project / "pkg" / "mod"
    sub.mkdir(parents=True)
    (project / "AGENTS.md").write_text("root agents\n")
    (project / "CLAUDE.md").write_text("root claude\n")
    (project / "pkg" / "CLAUDE.md").write_text("pkg claude\n")
    (sub / "AGENTS.md").write_text("mod agents\n")
    (tmp_path / "user-config").mkdir()
    (tmp_path / "user-config" / "CLAUDE.md").write_text("user claude\n")
    # Above the repository root: not read.
    (project.parent / "AGENTS.md").write_text("outside the repo\n")
    items = load_instructions(Workspace.load(sub))
    texts = [i.text.strip() for i in items]
    # AGENTS.md and CLAUDE.md are both read (as Claude Code users expect), each once.
    assert texts == ["user claude", "root agents", "root claude", "pkg claude", "mod agents"]
    assert [i.scope for i in items] == ["user", "project", "project", "project", "project"]


def test_claude_md_importing_agents_md_reads_each_once_and_the_local_file(
    project: Path,
) -> None:
    (project / "AGENTS.md").write_text("shared rules\n")
    (project / "CLAUDE.md").write_text("See @AGENTS.md\nclaude extras\n")
    (project / "CLAUDE.local.md").write_text("my own notes\n")
    items = load_instructions(Workspace.load(project))
    joined = "\n".join(i.text for i in items)
    assert joined.count("shared rules") == 1
    assert "claude extras" in joined and "my own notes" in joined
    assert [i.path.name for i in items] == ["AGENTS.md", "CLAUDE.md", "CLAUDE.local.md"]


def test_no_repository_reads_only_the_project(project: Path) -> None:
    (project.parent / "AGENTS.md").write_text("parent\n")
    (project / "AGENTS.md").write_text("here\n")
    assert [i.text.strip() for i in load_instructions(Workspace.load(project))] == ["here"]


def test_imports_are_bounded_inside_and_through_the_rules(project: Path) -> None:
    (project / ".git").mkdir()
    chain = [f"n{i}.md" for i in range(MAX_IMPORT_DEPTH + 2)]
    for i, name in enumerate(chain[:-1]):
        (project / name).write_text(f"level {i} @{chain[i + 1]}\n")
    (project / chain[-1]).write_text("too deep\n")
    (project / ".env").write_text("SECRET=hunter2\n")
    (project.parent / "outside.md").write_text("outside text\n")
    (project / "AGENTS.md").write_text(
        "start @n0.md\nsecret @.env\nout @../outside.md\nmail me@example.com\n"
        "`@n0.md` in code\n```\n@n0.md\n```\ncycle @AGENTS.md\n"
    )
    workspace = Workspace.load(project)
    runner = build_runner(workspace)
    [item] = load_instructions(workspace, check=approval_import_check(runner))
    rendered = render_instructions([item])
    assert "level 0" in rendered and f"level {MAX_IMPORT_DEPTH - 1}" in rendered
    assert "too deep" not in rendered and "nest at most" in rendered
    assert "hunter2" not in rendered and "@.env not imported" in rendered
    assert "outside text" not in rendered and "outside the project" in rendered
    assert rendered.count("level 0") == 1  # imported once, the code spans not followed


def test_environment_facts(project: Path) -> None:
    runner = build_runner(Workspace.load(project), mode="plan")
    env = environment(
        project,
        mode=runner.mode,
        launcher=runner.launcher,
        spill_dir=project / "out",
        tool_output_limit=1234,
        today=datetime.date(2030, 1, 2),
    )
    text = env.render()
    assert "2030-01-02" in text and str(project) in text and "not a git repository" in text
    assert "plan" in text and "read-only" in text and "present a plan" in text
    assert "NO network" in text and "1234 characters" in text and str(project / "out") in text


def test_agent_settings_validated(project: Path) -> None:
    (project / ".codingcode").mkdir()
    path = project / ".codingcode" / "settings.json"
    path.write_text(json.dumps({"contextWindow": 5000, "appendSystemPrompt": "x"}))
    s = load_agent_settings(Workspace.load(project))
    assert s.context_window == 5000 and s.append_system_prompt == ["x"]
    assert context_window("fake", s.context_window) == 5000
    path.write_text(json.dumps({"compactThreshold": 2}))
    with pytest.raises(SettingsError, match="compactThreshold"):
        load_agent_settings(Workspace.load(project))
    path.write_text(json.dumps({"toolOutputLimit": "big"}))
    with pytest.raises(SettingsError, match=str(path)):
        load_agent_settings(Workspace.load(project))


def test_window_table_and_cost() -> None:
    assert context_window("gpt-4.1-mini") == 1_047_576
    assert context_window("openrouter/anthropic/claude-sonnet-4") == 200_000
    assert context_window("something-new") == 128_000
    assert cost_usd("gpt-4.1", Usage(1_000_000, 0)) == 2.0
    assert cost_usd("my-local-model", Usage(5, 5)) is None


def test_spill_keeps_everything_and_read_file_reads_it(project: Path, tmp_path: Path) -> None:
    content = "".join(f"line {i}\n" for i in range(20_000))
    # where a session spills: <state>/projects/<project>/<session>/outputs (the state dir is
    # masked from tools but for this: the model is told to read its own spilled output)
    directory = tmp_path / "user-state" / "projects" / "p" / "s" / "outputs"
    shown, path = spill_output(content, limit=2_000, directory=directory, call_id="c/1", tool="x")
    assert path is not None and path.read_text() == content
    assert len(shown) < 2_000 and shown.startswith("line 0\n") and shown.endswith("line 19999\n")
    assert str(path) in shown
    small, none = spill_output("short", limit=2_000, directory=directory, call_id="c2", tool="x")
    assert small == "short" and none is None
    runner = build_runner(Workspace.load(project))  # headless: anything that asks is denied
    out = anyio.run(runner.run, "read_file", {"path": str(path), "offset": 15_000, "limit": 3})
    assert "line 14999" in out and "line 15001" in out


def test_spill_failure_keeps_the_output(project: Path) -> None:
    blocker = project / "file"
    blocker.write_text("")
    shown, path = spill_output("y" * 5_000, limit=1_000, directory=blocker, call_id="c", tool="t")
    assert shown == "y" * 5_000 and path is None


def exchange(i: int, size: int = 2_000) -> list[Message]:
    call = ToolCall(f"c{i}", "read_file", {"path": f"f{i}.py"}, json.dumps({"path": f"f{i}.py"}))
    return [
        Message("user", f"request {i}"),
        Message("assistant", f"looking {i}", [call]),
        Message("tool", results=[ToolResult(f"c{i}", "read_file", "z" * size)]),
        Message("assistant", f"answer {i}"),
    ]


def test_split_point_never_starts_at_tool_results() -> None:
    history = [m for i in range(10) for m in exchange(i)]
    for budget in (0, 100, 1_000, 3_000, 100_000):
        cut = split_point(history, budget)
        assert 1 <= cut < len(history)
        assert history[cut].role != "tool"
    assert split_point([Message("user", "only")], 1_000) == 1


class SummaryModel:
    name = "fake"
    model = "fake"

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[str, list[Message], list[Any]]] = []
        self.fail = fail

    async def stream(self, system: str, messages: Any, tools: Any) -> Any:
        self.calls.append((system, list(messages), list(tools)))
        if self.fail:
            raise RuntimeError("down")
        yield TextDelta("The summary.")
        yield TurnComplete(Message("assistant", "The summary."))

    async def aclose(self) -> None:
        pass


def test_compaction_summarises_older_keeps_recent_todos_and_files() -> None:
    history = [m for i in range(12) for m in exchange(i)]
    model = SummaryModel()
    todos = [{"step": "fix the bug", "status": "in_progress"}]
    result = anyio.run(
        lambda: compact(history, provider=model, window=8_000, todos=todos, focus="the bug")
    )
    assert result is not None
    [(system, sent, tools)] = model.calls
    assert tools == [] and "summarise" in system.lower() and "the bug" in sent[0].text
    first = result.history[0]
    assert first.role == "user" and "The summary." in first.text
    assert "[>] fix the bug" in first.text and "f11.py" in first.text
    assert result.history[-1].text == "answer 11"
    assert result.kept + result.summarized == len(history)
    # A failing summary call still compacts (without the model).
    fallback = anyio.run(
        lambda: compact(history, provider=SummaryModel(fail=True), window=8_000, todos=[])
    )
    assert fallback is not None and "request 0" in fallback.summary


def test_render_stays_in_budget_and_keeps_a_previous_summary() -> None:
    from codingcode.agent.sessions.store import summary_message

    history = [summary_message("old summary")] + [m for i in range(50) for m in exchange(i)]
    text = render(history, 5_000)
    assert text.startswith("USER: [Summary") and "old summary" in text
    assert len(text) < 5_000 + 200 and "answer 49" in text and "request 0" not in text
