"""Approval reads what a tool declares, never its name (issue 19).

Two tools approval has never heard of — ``jot`` writes a file its ``target`` argument
names, ``peek`` reads one — declared only through their argument roles and effects, are
judged exactly like ``write_file`` and ``read_file``: acceptEdits passes ``jot`` inside the
project only, a deny rule on ``peek`` is a path rule (normalised paths, the paths a shell
command names, a sandbox mask), the question shows ``jot``'s diff. And the approval and
sandbox sources name no built-in tool.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from codingcode.approval.capabilities import deny_rule_masks
from codingcode.approval.confirm import describe_call, headline
from codingcode.approval.pipeline import ToolCall
from codingcode.approval.rules import Rule, RuleEngine, load_policy
from codingcode.config import load_settings
from codingcode.runner import ToolRunner, build_runner
from codingcode.tools import declarations
from codingcode.tools.builtin import builtin_tools
from codingcode.tools.definition import ToolDefinition, tool
from codingcode.tools.service import ToolService
from codingcode.workspace import Workspace

pytestmark = pytest.mark.anyio

SRC = Path(__file__).resolve().parents[2] / "src" / "codingcode"


def _tools() -> list[ToolDefinition]:
    @tool(arg_roles={"target": "path", "text": "content"}, effects=frozenset({"writes"}))
    async def jot(target: str, text: str) -> str:
        """Write a note into a file."""
        return "written"

    @tool(arg_roles={"target": "path"}, effects=frozenset({"reads"}))
    async def peek(target: str) -> str:
        """Show a file."""
        return "shown"

    return [jot, peek]


def _service() -> ToolService:
    service = ToolService.default()
    for t in _tools():
        service.register(t)
    return service


def _runner(project: Path, mode: str = "default", deny: list[str] | None = None) -> ToolRunner:
    if deny:
        settings = project / ".codingcode" / "settings.json"
        settings.parent.mkdir(exist_ok=True)
        settings.write_text(json.dumps({"permissions": {"deny": deny}}))
    return build_runner(Workspace.load(project), mode=mode, service=_service(), audit=False)


async def _decide(runner: ToolRunner, tool_name: str, args: dict[str, Any]) -> tuple[str, str]:
    d = await runner.decide(tool_name, args, dry_run=True)
    return d.decision, d.layer


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("notes/today.md", ("allow", "PermissionMode")),
        ("./notes/../notes/today.md", ("allow", "PermissionMode")),
        ("/tmp/elsewhere/today.md", ("ask", "UserConfirmation")),
        ("../outside.md", ("ask", "UserConfirmation")),
        (".codingcode/settings.local.json", ("ask", "UserConfirmation")),
        (".git/hooks/pre-commit", ("ask", "UserConfirmation")),
    ],
)
async def test_accept_edits_passes_a_declared_writer_inside_the_project_only(
    project: Path, target: str, expected: tuple[str, str]
) -> None:
    runner = _runner(project, "acceptEdits")
    assert await _decide(runner, "jot", {"target": target, "text": "x"}) == expected
    # exactly as write_file is judged
    assert await _decide(runner, "write_file", {"path": target, "content": "x"}) == expected


async def test_a_declared_writer_is_not_read_only_and_a_reader_is_not_whitelisted(
    project: Path,
) -> None:
    runner = _runner(project)
    assert await _decide(runner, "jot", {"target": "a.md", "text": "x"}) == (
        "ask",
        "UserConfirmation",
    )
    # A2 passes built-ins that only read; a custom tool's word that it only reads is not
    # enough (as before: the whitelist is the built-ins').
    assert await _decide(runner, "peek", {"target": "a.md"}) == ("ask", "UserConfirmation")
    plan = _runner(project, "plan")
    decision = await plan.decide("jot", {"target": "a.md", "text": "x"}, dry_run=True)
    assert (decision.decision, decision.layer) == ("deny", "PermissionMode")
    # plan mode's refusal lists the read-only tools the registry holds
    assert "read_file" in decision.reason and "search_code" in decision.reason
    assert "jot" not in decision.reason.split(";")[0]


async def test_the_preset_rules_see_a_declared_path(project: Path) -> None:
    runner = _runner(project, "bypass")
    d = await runner.decide("peek", {"target": "/etc/shadow"}, dry_run=True)
    assert (d.decision, d.rule) == ("deny", "R6")
    d = await runner.decide("jot", {"target": ".env", "text": "A=1"}, dry_run=True)
    assert (d.decision, d.rule) == ("ask", "R9")


@pytest.mark.parametrize(
    ("target", "denied"),
    [
        ("private/key", True),
        ("./private/../private/key", True),
        ("private", True),  # `dir/**` also means the directory itself
        ("public/key", False),
        ("notprivate/key", False),
    ],
)
async def test_a_deny_rule_on_a_declared_reader_is_a_path_rule(
    project: Path, target: str, denied: bool
) -> None:
    runner = _runner(project, deny=["peek(private/**)"])
    d = await runner.decide("peek", {"target": str(target)}, dry_run=True)
    assert (d.decision == "deny") is denied, d.reason
    if denied:
        assert d.rule == "peek(private/**)"
    # an absolute spelling of the same file is the same file
    absolute = await runner.decide("peek", {"target": str(project / target)}, dry_run=True)
    assert (absolute.decision == "deny") is denied


async def test_a_declared_readers_deny_rule_covers_commands_and_masks_the_sandbox(
    project: Path,
) -> None:
    runner = _runner(project, deny=["peek(private/**)", "jot(drafts/**)"])
    d = await runner.decide("execute_command", {"command": "cat private/key"}, dry_run=True)
    assert (d.decision, d.rule) == ("deny", "peek(private/**)")
    d = await runner.decide("execute_command", {"command": "ls && cat ./private/a"}, dry_run=True)
    assert (d.decision, d.rule) == ("deny", "peek(private/**)")
    # denyRead: the reader's deny rule is a sandbox mask; the writer's is not (it would
    # hide files the user only wanted kept unchanged), as with read_file and write_file
    rules = load_policy(load_settings(project)).rules
    masks = deny_rule_masks(rules, project, declarations.lookup(_service()))
    assert [m.pattern for m in masks] == [f"{project}/private/**"]
    policy = runner.launcher.policy
    assert f"{project}/private/**" in [m.pattern for m in policy.deny_read]
    # without the registry, nothing is known of peek: no mask is made up
    assert deny_rule_masks(rules, project) == []
    same = [Rule("read_file(private/**)", "deny"), Rule("write_file(drafts/**)", "deny")]
    assert [m.pattern for m in deny_rule_masks(same, project)] == [f"{project}/private/**"]


def test_the_engine_reads_declarations_from_its_lookup(project: Path) -> None:
    service = _service()
    rules = [Rule("peek(secret/**)", "deny")]
    call = ToolCall(
        "peek",
        {"target": "./secret/a"},
        project,
        arg_roles={"target": "path"},
        effects=frozenset({"reads"}),
    )
    engine = RuleEngine(rules, project, declarations.lookup(service))
    assert engine.evaluate(call).action == "deny"
    # an engine that knows nothing of peek reads the SPEC as a plain value glob
    assert RuleEngine(rules, project).evaluate(call).action == "continue"
    # the always/never suggestion is a path rule too
    fresh = ToolCall("peek", {"target": "docs/a.md"}, project, arg_roles={"target": "path"})
    assert engine.suggest(fresh) == "peek(docs/**)"


def test_the_question_shows_a_declared_writers_diff(project: Path) -> None:
    (project / "notes.md").write_text("old line\n")
    call = ToolCall(
        "jot",
        {"target": "notes.md", "text": "new line\n"},
        project,
        arg_roles={"target": "path", "text": "content"},
        effects=frozenset({"writes"}),
    )
    assert headline(call) == "Write notes.md"
    shown = describe_call(call)
    assert "-old line" in shown and "+new line" in shown


def _literals(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module, docstrings left out (f-string parts included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def test_approval_and_the_sandbox_name_no_tool() -> None:
    names = {d.name for d in builtin_tools()} | {"tool_search", "exit_plan_mode", "dispatch_agent"}
    found = []
    for package in ("approval", "sandbox"):
        for path in sorted((SRC / package).rglob("*.py")):
            for line, text in _literals(path):
                head = text.split("(", 1)[0].strip()
                if text in names or head in names or text.startswith("skill_"):
                    found.append(f"{path.relative_to(SRC)}:{line}: {text[:60]!r}")
    assert found == [], "approval/sandbox must read declarations, not tool names:\n" + "\n".join(
        found
    )
