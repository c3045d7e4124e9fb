"""The commands hooks, editors and scripts call once per action pay only for what they use.

``codingcode check …`` and ``codingcode tool read_file …`` run for real (``python -X
importtime``, which lists every module the process imported); none of the heavy modules
below may be among them: the provider SDKs, the MCP SDK, the HTTP stack, the web and
terminal UI stacks, the network proxy, the agent and the other front ends. The CPU figures
are ``bench/bench_startup.py``'s.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Modules (and their sub-modules) a check or a file read must not import.
HEAVY = (
    # the command-line framework: these two commands parse their line without it
    "typer",
    "click",
    "shellingham",
    "openai",
    "anthropic",
    "mcp",
    "mcp_types",
    "httpx",
    "httpx2",
    "httpcore",
    "h11",
    "html_to_markdown",
    "markdown",
    "markdown_it",
    "rich",
    "pygments",
    "prompt_toolkit",
    "starlette",
    "sse_starlette",
    "uvicorn",
    "codingcode.agent",
    "codingcode.mcp.connection",
    "codingcode.mcp.client",
    "codingcode.mcp_server",
    "codingcode.tui.app",
    "codingcode.checkpoints",
    # the hooks that run (the project has none): only the hooks section is read
    "codingcode.hooks.pre_tool_use",
    "codingcode.hooks.lifecycle",
    "codingcode.sandbox.network.proxy",
    "codingcode.sandbox.network.runtime",
    # the other front ends' and commands' modules
    "codingcode.cli.root",
    "codingcode.cli.approval_commands",
    "codingcode.cli.tool_commands",
    "codingcode.tui.app",
    # built-in tools the call does not use (each module loads with its first tool)
    "codingcode.tools.builtin.web",
    "codingcode.tools.builtin.background",
    "codingcode.tools.builtin.code_search",
    "codingcode.tools.builtin.state",
)

#: What each command line may not import beyond :data:`HEAVY`.
NOT_FOR = {
    # a dry run needs no event loop (``codingcode.cli.dry_run``)
    "check-read": ("codingcode.tools.builtin.shell", "asyncio", "anyio._backends"),
    # a file read analyses no command line
    "tool-read": ("codingcode.tools.builtin.shell", "codingcode.shell.parse"),
    "check-command": ("codingcode.tools.builtin.fs", "asyncio", "anyio._backends"),
}


def imported(stderr: str) -> set[str]:
    """The modules ``-X importtime`` says the process imported."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "imported package":
                names.add(name)
    return names


def heavy_among(names: set[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in heavy))


def _run(args: list[str], cwd: Path, code: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-X", "importtime"]
    argv += ["-c", code] if code is not None else ["-m", "codingcode", *args]
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, env=dict(os.environ), timeout=120
    )


@pytest.mark.parametrize(
    "args",
    [
        ["check", "execute_command", '{"command": "ls -la | grep x"}'],
        ["check", "read_file", '{"path": "a.txt"}'],
        ["tool", "read_file", '{"path": "a.txt"}'],
    ],
    ids=["check-command", "check-read", "tool-read"],
)
def test_a_check_or_a_read_imports_nothing_heavy(
    project: Path, args: list[str], request: pytest.FixtureRequest
) -> None:
    (project / "a.txt").write_text("hello\n")
    proc = _run(args, project)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = imported(proc.stderr)
    assert "codingcode.runner" in names  # the real command ran (and was listed)
    if args[0] == "tool":
        assert "hello" in proc.stdout
    else:
        assert '"decision"' in proc.stdout
    assert heavy_among(names) == []
    case = request.node.callspec.id
    assert heavy_among(names, NOT_FOR[case]) == []


def test_the_listing_catches_a_heavy_import(tmp_path: Path) -> None:
    proc = _run([], tmp_path, code="import codingcode.errors, h11")
    assert proc.returncode == 0, proc.stderr
    names = imported(proc.stderr)
    assert "codingcode.errors" in names
    assert "h11" in heavy_among(names)
    assert not any(n.startswith("codingcode") for n in heavy_among(names))


# -- lazy sub-commands: a command line registers only the module of the command it names --
def test_command_map_is_complete() -> None:
    """``COMMANDS`` names exactly the top-level commands each module registers."""
    from importlib import import_module

    import typer
    import typer.main

    from codingcode.cli import COMMANDS

    for module, names in COMMANDS.items():
        app = typer.Typer()

        @app.callback()
        def _root() -> None:
            pass

        import_module(module).register(app)
        assert sorted(typer.main.get_command(app).commands) == sorted(names), module  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["check", "read_file", "{}"], "check"),
        (["-p", "/x", "--mode", "plan", "tool", "read_file"], "tool"),
        (["--project=/x", "-mplan", "-c", "rules", "list"], "rules"),
        (["--help"], None),
        (["--version"], None),
        ([], None),
        (["chek"], None),  # a typo: every command registered, click suggests
    ],
)
def test_the_command_a_line_names(argv: list[str], named: str | None) -> None:
    from codingcode.cli import _command_named

    assert _command_named(argv) == named


def test_help_still_lists_every_command(project: Path) -> None:
    from codingcode.cli import COMMANDS

    proc = subprocess.run(
        [sys.executable, "-m", "codingcode", "--help"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.splitlines() if line.startswith("  ")}
    assert {n for names in COMMANDS.values() for n in names} <= listed
