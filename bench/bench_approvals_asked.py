"""How often a person is asked in an ordinary 50-call session (issue 13), before and after.

A scripted session of ordinary work on a small Python project — reading, searching, looking
at git, running the tests and the linter, editing and committing — goes through the real
approval pipeline (default mode, nothing pre-allowed). Three users:

* before: the pipeline as it was (every command asks; the user answers "yes, once",
  since "always" offered rules as broad as ``python3 *``);
* after, "yes once": read-only commands run unasked;
* after, "yes for this session": plus the narrow session grant each answer creates.

Prints the share of calls asked for each, and the ratio after/before.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

import anyio

from codingcode.approval.confirm import Answer, ConfirmRequest
from codingcode.approval.pipeline import ToolCall
from codingcode.approval.setup import build_pipeline
from codingcode.tools import ToolService
from codingcode.workspace import Workspace

EDIT = "edit_file"


def session_calls() -> list[tuple[str, dict[str, Any]]]:
    c = "execute_command"
    calls: list[tuple[str, dict[str, Any]]] = [
        (c, {"command": "ls"}),
        (c, {"command": "git status"}),
        ("read_file", {"path": "README.md"}),
        (c, {"command": "ls -la src tests"}),
        ("search_code", {"pattern": "def parse"}),
        (c, {"command": "cat src/app.py"}),
        (c, {"command": "git log --oneline -10"}),
        (c, {"command": "grep -rn 'TODO' src"}),
        ("read_file", {"path": "src/app.py"}),
        (c, {"command": "python3 -m pytest -q"}),
        (c, {"command": "wc -l src/*.py"}),
        (EDIT, {"path": "src/app.py", "old_string": "return 1", "new_string": "return 2"}),
        (c, {"command": "python3 -m pytest -q tests/test_app.py"}),
        (c, {"command": "git diff"}),
        ("search_files", {"pattern": "**/*.py"}),
        (c, {"command": "find . -name '*.py' -newer README.md"}),
        (EDIT, {"path": "src/util.py", "old_string": "x = 1", "new_string": "x = 3"}),
        (c, {"command": "python3 -m pytest -q -x"}),
        (c, {"command": "ruff check src"}),
        (c, {"command": "head -20 src/util.py"}),
        (EDIT, {"path": "src/util.py", "old_string": "y = 2", "new_string": "y = 4"}),
        (c, {"command": "ruff check src tests"}),
        (c, {"command": "python3 -m pytest -q"}),
        (c, {"command": "git diff --stat"}),
        ("write_file", {"path": "tests/test_util.py", "content": "def test_x():\n    pass\n"}),
        (c, {"command": "python3 -m pytest -q tests/test_util.py"}),
        (c, {"command": "cat tests/test_util.py"}),
        (c, {"command": "git status --short"}),
        (c, {"command": "git add src tests"}),
        (c, {"command": "git commit -m 'fix parse'"}),
        (c, {"command": "git log -1 --stat"}),
        ("read_file", {"path": "src/util.py"}),
        (c, {"command": "grep -n 'import' src/*.py"}),
        (EDIT, {"path": "src/app.py", "old_string": "def main", "new_string": "def run"}),
        (c, {"command": "python3 -m pytest -q"}),
        (c, {"command": "ruff format --check src"}),
        (c, {"command": "tail -5 src/app.py"}),
        (c, {"command": "git diff src/app.py"}),
        (c, {"command": "python3 -m mypy src"}),
        ("search_code", {"pattern": "main\\("}),
        (EDIT, {"path": "README.md", "old_string": "# Demo", "new_string": "# Demo app"}),
        (c, {"command": "git show --stat HEAD"}),
        (c, {"command": "python3 -m pytest -q"}),
        (c, {"command": "git add -A"}),
        (c, {"command": "git commit -m 'rename main to run'"}),
        (c, {"command": "git branch"}),
        (c, {"command": "du -sh src"}),
        (c, {"command": "python3 -m pytest -q --co"}),
        (c, {"command": "git log --oneline -3"}),
        (c, {"command": "pwd"}),
    ]
    assert len(calls) == 50
    return calls


def make_project(root: Path) -> Path:
    (root / "src").mkdir()
    (root / "tests").mkdir()
    (root / "README.md").write_text("# Demo\n")
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "src" / "util.py").write_text("x = 1\ny = 2\n")
    (root / "tests" / "test_app.py").write_text("def test_app():\n    pass\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


class Counting:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def confirm(self, request: ConfirmRequest) -> Answer:
        self.asked.append(f"{request.call.tool} {request.call.args}")
        return self.answer


async def asked(project: Path, *, before: bool, answer: Answer) -> int:
    service = ToolService.default()
    confirmer = Counting(answer)
    pipeline, _, _ = build_pipeline(Workspace.load(project), confirmer=confirmer)
    if before:  # as it was: no read-only commands, no check before asking, broad rules
        pipeline.read_only = None
        pipeline.precheck = None
    for tool, args in session_calls():
        d = service.get(tool)
        call = ToolCall(
            tool, args, project, arg_roles=d.arg_roles, effects=d.effects, origin=d.origin
        )
        await pipeline.decide(call)
    return len(confirmer.asked)


async def measure(project: Path) -> tuple[int, int, int]:
    old = await asked(project, before=True, answer=Answer.ALLOW)
    once = await asked(project, before=False, answer=Answer.ALLOW)
    session = await asked(project, before=False, answer=Answer.SESSION)
    return old, once, session


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = make_project(Path(tmp).resolve())
        n = len(session_calls())
        old, once, session = anyio.run(measure, project)
    print(f"calls in the session:                    {n}")
    print(f"asked before (every command asks):       {old}/{n} = {old / n:.0%}")
    print(f"asked after, answering 'yes once':       {once}/{n} = {once / n:.0%}")
    print(f"asked after, answering 'yes, session':   {session}/{n} = {session / n:.0%}")
    print(f"ratio after/before (session answers):    {session / old:.2f}")


if __name__ == "__main__":
    main()
