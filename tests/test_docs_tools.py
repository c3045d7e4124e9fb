"""docs/tools.md's table of the built-in tools says what the tools really declare: their
parameters, defaults and limits (from each tool's JSON Schema), effects and when they are
offered."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from codingcode.tools import ToolService

PAGE = Path(__file__).resolve().parents[1] / "docs" / "tools.md"
PARAM = re.compile(r"`(\w+)`(?: = `([^`]*)`)?(?: \(≤ (\d+)\))?")
#: Tools an agent session adds (not in ToolService.default()): their argument models.
SESSION_TOOLS = {"dispatch_agent": "DispatchAgentArgs", "tool_search": "ToolSearchArgs"}


def rows() -> dict[str, list[str]]:
    text = PAGE.read_text()
    table = text[text.index("| tool | parameters") :].split("\n\n", 1)[0]
    out = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        out[cells[0].strip("`")] = cells[1:]
    return out


def schema_of(name: str) -> dict[str, Any]:
    service = ToolService.default()
    if name in service.names():
        return dict(service.mcp_schema(service.get(name))["inputSchema"])
    from tests.test_docs_configuration import find_class

    return dict(find_class(SESSION_TOOLS[name]).model_json_schema())


def test_every_builtin_tool_is_in_the_table() -> None:
    names = set(ToolService.default().names()) | set(SESSION_TOOLS)
    assert names == set(rows())


@pytest.mark.parametrize("name", sorted(rows()))
def test_parameters_defaults_and_limits(name: str) -> None:
    props = schema_of(name)["properties"]
    documented = {m.group(1): m for m in PARAM.finditer(rows()[name][0])}
    assert set(documented) == set(props), name
    for param, m in documented.items():
        prop = props[param]
        if m.group(2) is not None:
            assert json.loads(m.group(2)) == prop.get("default"), (name, param)
        else:
            assert "default" not in prop or prop["default"] is None, (name, param)
        limit = prop.get("maximum", prop.get("maxItems", prop.get("maxLength")))
        assert (int(m.group(3)) if m.group(3) else None) == limit, (name, param)


@pytest.mark.parametrize("name", sorted(ToolService.default().names()))
def test_effects_and_offering(name: str) -> None:
    definition = ToolService.default().get(name)
    effects_cell, offered = rows()[name][1:3]
    written = set() if effects_cell == "—" else {e.strip() for e in effects_cell.split(",")}
    assert written == set(definition.effects or ()), name
    assert (offered == "from the start") == (not definition.deferred), name


def test_app_commands_table() -> None:
    """docs/agent.md lists exactly the interactive app's slash commands."""
    import importlib

    module = "codingcode.tui.slash"  # the app's slash commands (COMMANDS)
    commands = set(importlib.import_module(module).COMMANDS)
    text = (PAGE.parent / "agent.md").read_text()
    documented = set(re.findall(r"^\| `(/\w+)[^`]*` \|", text, re.M))
    assert documented == commands


def command_tree() -> dict[str, list[str]]:
    """Every sub-command of `codingcode` and, for a group, its sub-commands (read from the
    click command the CLI builds, as `codingcode --help` does)."""
    import typer.main

    import codingcode.cli as cli

    register = getattr(cli, "_register_commands", None)
    if register is not None:  # sub-commands are registered when the command runs
        register()
    root = typer.main.get_command(cli.app)
    return {
        name: sorted(getattr(command, "commands", {}) or {})
        for name, command in getattr(root, "commands", {}).items()
    }


def test_every_command_is_on_the_commands_page() -> None:
    """docs/cli.md names every sub-command of `codingcode` (and of its groups)."""
    text = (PAGE.parent / "cli.md").read_text()
    listed = re.findall(r"^\| `codingcode ([^`]*)`", text, re.M)
    words = {tuple(re.split(r"[ |/]+", entry.split(" -")[0])) for entry in listed}
    named = {w for entry in words for w in entry}
    tree = command_tree()
    assert "run" in tree and "tool" in tree, sorted(tree)  # the tree was really read
    missing = [c for c in tree if c not in named]
    missing += [f"{c} {sub}" for c, subs in tree.items() for sub in subs if sub not in named]
    assert not missing, f"docs/cli.md lacks: {missing}"
