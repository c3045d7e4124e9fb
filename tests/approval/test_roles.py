"""Approval reads argument roles, not tool names: declared by each tool (the built-ins too),
inferred from the JSON schema for a tool that declares none (MCP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codingcode.approval.pipeline import ToolCall
from codingcode.approval.roles import BUILTIN_ROLES, call_roles, infer_arg_roles
from codingcode.approval.rules import Rule, RuleEngine
from codingcode.tools.definition import ArgRole, ToolOrigin

MCP = ToolOrigin("mcp", "files")


def _decide(
    tool: str,
    args: dict[str, Any],
    project: Path,
    roles: dict[str, ArgRole] | None = None,
    origin: ToolOrigin | None = None,
    rules: list[Rule] | None = None,
) -> tuple[str, str | None]:
    call = ToolCall(tool, args, project, arg_roles=roles or {}, origin=origin or ToolOrigin())
    r = RuleEngine(rules or [], project).evaluate(call)
    return r.action, r.rule


def test_builtin_fallback_equals_the_definitions() -> None:
    from codingcode.tools.builtin import builtin_tools

    declared = {t.name: t.arg_roles for t in builtin_tools()}
    # every built-in that declares roles is in the fallback, with the same roles
    assert {k: v for k, v in declared.items() if v or k in BUILTIN_ROLES} == BUILTIN_ROLES


def test_schema_inference_by_name_and_description() -> None:
    schema = {
        "properties": {
            "file_path": {"type": "string"},
            "cmd": {"type": "string"},
            "endpoint": {"type": "string"},
            "target_spec": {"type": "string", "description": "Path to the file to open"},
            "query": {"type": "string", "description": "what to look for"},
        }
    }
    assert infer_arg_roles(schema) == {
        "file_path": "path",
        "cmd": "command",
        "endpoint": "url",
        "target_spec": "path",
    }
    assert infer_arg_roles({"type": "object"}) == {}


def test_a_custom_tool_declaring_a_command_is_analysed_like_execute_command(
    tmp_path: Path,
) -> None:
    roles: dict[str, ArgRole] = {"script": "command"}
    assert _decide("deploy", {"script": "x=su; ${x}do id"}, tmp_path, roles)[0] == "deny"
    assert _decide("deploy", {"script": "make test"}, tmp_path, roles)[0] == "continue"
    # and a user's command rule for that tool matches each simple command
    rules = [Rule("deploy(git push *)", "deny")]
    got = _decide(
        "deploy", {"script": "git status && git push origin"}, tmp_path, roles, rules=rules
    )
    assert got == ("deny", "deploy(git push *)")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"file_path": "/etc/shadow"}, ("deny", "R6")),
        ({"options": {"nested": ["/etc/passwd"]}}, ("deny", "R7")),
        ({"shell_command": "bash -c 'reboot'"}, ("deny", "R5")),
        ({"location": "file:///etc/shadow", "url": "file:///etc/shadow"}, ("deny", "R6")),
        ({"query": "how does sudo work", "file_path": "docs/sudo.md"}, ("continue", None)),
    ],
)
def test_an_mcp_tool_declaring_nothing(
    args: dict[str, Any], expected: tuple[str, str | None], tmp_path: Path
) -> None:
    assert _decide("files:op", args, tmp_path, origin=MCP) == expected


def test_declared_roles_win_over_names(tmp_path: Path) -> None:
    # "path" here is declared as plain text (a breadcrumb), "body" as the command it runs
    roles: dict[str, ArgRole] = {"path": "text", "body": "command"}
    assert _decide("tool", {"path": "/etc/shadow", "body": "ls"}, tmp_path, roles)[0] == "continue"
    assert call_roles({}, {"cwd": "x", "file": "y"}) == {"cwd": "cwd", "file": "path"}
