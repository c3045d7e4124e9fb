"""Approval reads a tool's declared argument roles, not its name (issue 19).

A custom tool that runs a command line under another name and another argument name is
judged like ``execute_command``: the paths its command names make its capability set, a
grant for it is narrowed to the command, the question shows the command. An MCP tool's
call is shown whole (a server's tool may do more than run the line).
"""

from __future__ import annotations

from pathlib import Path

from codingcode.approval.call import ToolCall
from codingcode.approval.capabilities import capabilities_for
from codingcode.approval.confirm import describe_call, headline
from codingcode.approval.rules import RuleEngine
from codingcode.approval.setup import suggest_grant
from codingcode.tools.definition import ToolOrigin


def run_call(project: Path, line: str, origin: str = "custom") -> ToolCall:
    return ToolCall(
        "project_shell",
        {"script": line, "where": "."},
        project,
        arg_roles={"script": "command", "where": "cwd"},
        effects=frozenset({"runs", "reads", "writes"}),
        origin=ToolOrigin(origin),  # type: ignore[arg-type]
    )


def test_the_command_role_makes_the_capability_set(project: Path) -> None:
    (project / ".env").write_text("KEY=1\n")
    (project / "out.txt").write_text("")
    caps = capabilities_for(run_call(project, "cat .env > out.txt"))
    assert {p.name for p in caps.read_paths} == {".env"}
    assert {p.name for p in caps.write_paths} == {"out.txt"}
    # The same line under an argument with no command role names nothing.
    plain = ToolCall("notes", {"text": "cat .env"}, project, arg_roles={"text": "text"})
    assert capabilities_for(plain).empty


def test_a_grant_is_narrowed_to_the_command(project: Path) -> None:
    engine = RuleEngine([], project)
    assert suggest_grant(run_call(project, "git push origin main"), engine) == (
        "project_shell(git push origin *)"
    )
    # An MCP tool keeps the engine's suggestion (its server decides what the line means).
    assert suggest_grant(run_call(project, "git push", "mcp"), engine) == "project_shell"


def test_the_question_shows_the_command(project: Path) -> None:
    call = run_call(project, "make test")
    assert headline(call) == "Run a command"
    assert describe_call(call) == "$ make test"
    mcp = run_call(project, "make test", "mcp")
    assert headline(mcp) == "Use the tool project_shell"
    assert '"script": "make test"' in describe_call(mcp)
