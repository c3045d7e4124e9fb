"""The real `codingcode` command: one tool call, the tool list, and every kind of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.e2e


def test_tool_call_prints_the_output(project: Path) -> None:
    (project / "notes.txt").write_text("hello\nworld\n")
    r = run_cli(["tool", "read_file", '{"path": "notes.txt"}'], cwd=project)
    assert r.code == 0, r.stderr
    assert r.stdout.splitlines() == ["notes.txt: lines 1-2 of 2", "     1\thello", "     2\tworld"]


def test_args_from_stdin_and_project_option(project: Path, tmp_path: Path) -> None:
    content = "x" * 300_000  # too large for a comfortable command-line argument
    args = json.dumps({"path": "big.txt", "content": content})
    # acceptEdits: headless, a write needs a mode or a rule that allows it (approval).
    argv = ["tool", "write_file", "-", "--project", str(project), "--mode", "acceptEdits"]
    r = run_cli(argv, cwd=tmp_path, input=args)
    assert r.code == 0, r.stderr
    assert (project / "big.txt").read_text() == content


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["tool", "read_file", "{not json"], "ARGS_JSON is not valid JSON"),
        (["tool", "read_file", "[1]"], "ARGS_JSON must be a JSON object"),
        (["tool", "no_such_tool", "{}"], "Unknown tool 'no_such_tool'"),
        (["tool", "read_file", "{}"], "`path` is required"),
        (["tool", "read_file", '{"path": 5}'], "`path`: Input should be a valid string"),
        (
            ["tool", "read_file", '{"path": "a", "limit": 0}'],
            "`limit`: Input should be greater than or equal to 1",
        ),
        (["tool", "read_file", '{"path": "a", "limit": 501}'], "less than or equal to 500"),
        (["tool", "read_file", '{"path": "missing.txt"}'], "File not found: missing.txt"),
        (["tool", "read_file"], "Missing argument"),
        (["tool", "read_file", "{}", "--mode", "yolo"], "unknown mode 'yolo'"),
        (["tool", "read_file", "{}", "--project", "/nonexistent/dir"], "is not a directory"),
        (["tools", "--bogus"], "No such option"),
    ],
)
def test_bad_input_is_a_short_error_without_traceback(
    project: Path, argv: list[str], expected: str
) -> None:
    r = run_cli(argv, cwd=project)
    # 2 for bad input; only a call that ran and failed (a missing file) is 1
    assert r.code == (1 if "File not found" in expected else 2)
    assert expected in r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert 1 <= len(r.stderr.strip().splitlines()) <= 2


def test_tools_lists_short_descriptions_and_json_schemas(project: Path) -> None:
    r = run_cli(["tools"], cwd=project)
    assert r.code == 0
    assert any(line.startswith("read_file ") for line in r.stdout.splitlines())
    r = run_cli(["tools", "--json"], cwd=project)
    tools = {t["name"]: t for t in json.loads(r.stdout)}
    assert tools["read_file"]["input_schema"]["properties"]["limit"]["maximum"] == 500


def test_version_and_help(project: Path) -> None:
    from codingcode import __version__

    r = run_cli(["--version"], cwd=project)
    assert r.stdout.strip() == f"codingcode {__version__}"
    r = run_cli(["--help"], cwd=project)
    assert r.code == 0 and "tool" in r.stdout


def test_mcp_tool_through_the_cli_only_once_the_project_is_trusted(project: Path) -> None:
    import sys

    server = Path(sys.executable).parent / "mcp-server-time"  # a third-party server from PyPI
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"time": {"command": str(server)}}})
    )
    argv = ["tool", "time:get_current_time", '{"timezone": "UTC"}', "--mode", "bypass"]
    r = run_cli(argv, cwd=project)
    assert r.code != 0
    assert "MCP server 'time' skipped" in r.stderr and "codingcode trust" in r.stderr
    assert run_cli(["trust"], cwd=project).code == 0
    r = run_cli(argv, cwd=project)
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["timezone"] == "UTC"
    # an MCP tool is no read-only built-in: without a rule or bypass, headless means denied
    r = run_cli(argv[:3], cwd=project)
    assert r.code != 0 and "was denied" in r.stderr
