"""The shape of the code: no import cycles, and every import goes down the floors.

The import graph is read from the source (AST), not from ``sys.modules``, so an import that
only runs in one branch or one function still counts. Every import of a ``codingcode``
module counts: at module level, inside a function, and under ``if TYPE_CHECKING:``. A
function-level import is a real dependency taken later; a type-only import is a dependency
of the design (the module needs to know the other's shape); both make "following one call
enters each module once, in one direction" false, so neither may close a cycle.

An edge goes to the module named: ``from codingcode.a import b`` is an edge to
``codingcode.a.b`` when that is a module, else to ``codingcode.a``. The implicit import of
a module's parent packages is not an edge (every submodule would "cycle" with a package
that re-exports it).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "codingcode"

#: The top floor: the front ends a person or a peer talks to. Nothing below imports them.
FRONT_ENDS = ("codingcode.cli", "codingcode.tui", "codingcode.mcp_server")
ENTRY_POINTS = frozenset({"codingcode.__main__"})


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} (line {self.line})"


def modules(src: Path = SRC) -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name → (file, is a package)."""
    out: dict[str, tuple[Path, bool]] = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        out[".".join(parts)] = (path, is_package)
    return out


def _imported(node: ast.AST, name: str, is_package: bool) -> Iterator[tuple[str, str, int]]:
    """What ``node`` imports: (the submodule it may name, else the module it names, line).

    ``import X.y`` names X.y; ``from X import a`` names X.a when that is a module, else X.
    """
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, alias.name, node.lineno
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = name if is_package else name.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        for alias in node.names:
            yield f"{base}.{alias.name}", base, node.lineno


def import_graph(src: Path = SRC) -> dict[str, dict[str, int]]:
    """module → {imported module: first line}, for the package's own modules."""
    known = modules(src)

    def resolve(submodule: str, module: str) -> str | None:
        if submodule in known:
            return submodule
        while module and module not in known:  # `import codingcode.a.b`: the longest known
            module = module.rpartition(".")[0]
        return module or None

    graph: dict[str, dict[str, int]] = {}
    for name, (path, is_package) in known.items():
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for submodule, module, line in _imported(node, name, is_package):
                if module != PACKAGE and not module.startswith(PACKAGE + "."):
                    continue
                target = resolve(submodule, module)
                if target is not None and target != name:
                    edges.setdefault(target, line)
        graph[name] = edges
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The groups of modules that import each other (Tarjan, iterative), largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, {}))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups, key=len, reverse=True)


def one_cycle(graph: dict[str, dict[str, int]], group: Iterable[str]) -> list[Edge]:
    """A shortest cycle through the group's first module, as edges (to name it)."""
    members = set(group)
    start = min(members)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in graph[node]:
                if child not in members:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    path.reverse()
                    path.append(start)
                    return [Edge(a, b, graph[a][b]) for a, b in itertools.pairwise(path)]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle through {start}")


def cycle_report(graph: dict[str, dict[str, int]]) -> list[str]:
    report = []
    for group in strongly_connected(graph):
        edges = one_cycle(graph, group)
        report.append(
            f"{len(group)} modules import each other ({', '.join(group)}); e.g. "
            + "; ".join(str(e) for e in edges)
        )
    return report


def is_front_end(module: str) -> bool:
    return module in ENTRY_POINTS or any(
        module == top or module.startswith(top + ".") for top in FRONT_ENDS
    )


def layering_violations(graph: dict[str, dict[str, int]]) -> list[Edge]:
    return [
        Edge(source, target, line)
        for source, edges in graph.items()
        if not is_front_end(source)
        for target, line in edges.items()
        if is_front_end(target)
    ]


# -- the checks ------------------------------------------------------------------------------
def test_no_import_cycles() -> None:
    report = cycle_report(import_graph())
    assert not report, "import cycles:\n" + "\n".join(report)


def test_front_ends_are_the_top_floor() -> None:
    violations = layering_violations(import_graph())
    assert not violations, "modules below the front ends import them:\n" + "\n".join(
        map(str, violations)
    )


# -- the checker itself catches what it must (on a throwaway package) ----------------------
def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / PACKAGE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    "importer",
    [
        "from codingcode.a import f\n",  # module level
        "def g():\n    from codingcode import a\n",  # function level
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n",
        "import codingcode.a.sub\n",  # a submodule that does not exist: its package
    ],
)
def test_checker_finds_a_cycle_however_it_is_imported(tmp_path: Path, importer: str) -> None:
    src = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "def f(): pass\nfrom codingcode import b\n",
            "b.py": importer,
            "c.py": "import codingcode.a\n",  # imports into the cycle, is not in it
        },
    )
    report = cycle_report(import_graph(src))
    assert len(report) == 1
    assert "codingcode.a, codingcode.b" in report[0]
    assert "codingcode.a -> codingcode.b (line 2)" in report[0]
    assert "codingcode.c" not in report[0]


def test_checker_names_a_long_cycle_and_ignores_the_parent_package(tmp_path: Path) -> None:
    src = _package(
        tmp_path,
        {
            "__init__.py": "",
            "p/__init__.py": "from codingcode.p.x import X as X\n",  # a re-export: no cycle
            "p/x.py": "from codingcode.p.y import Y\nX = 1\n",
            "p/y.py": "from codingcode.q import Q\nY = 1\n",
            "q.py": "from codingcode.p import x\nQ = 1\n",
        },
    )
    report = cycle_report(import_graph(src))
    assert len(report) == 1
    assert report[0].count("->") == 3
    assert "codingcode.p.x -> codingcode.p.y" in report[0]
    assert "codingcode.q -> codingcode.p.x" in report[0]


def test_checker_finds_a_layering_violation(tmp_path: Path) -> None:
    src = _package(
        tmp_path,
        {
            "__init__.py": "",
            "cli/__init__.py": "from codingcode import runner\n",  # downward: fine
            "runner.py": "def f():\n    from codingcode.cli import app\n",
            "mcp_server/__init__.py": "from codingcode import runner\n",
            "tools.py": "from codingcode.mcp_server import serve\n",
        },
    )
    found = {str(e) for e in layering_violations(import_graph(src))}
    assert found == {
        "codingcode.runner -> codingcode.cli (line 2)",
        "codingcode.tools -> codingcode.mcp_server (line 1)",
    }


# -- the floors ----------------------------------------------------------------------------
#: Every package and module of ``codingcode`` on its floor, lowest first (DESIGN: floors). A
#: module imports its own floor and those below, never one above: following one call then
#: enters each floor once, going down. A new top-level module or package must be placed here
#: (``test_every_module_has_a_floor``).
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # ground: plain helpers and the shapes every floor shares, no policy
    (
        "ground",
        (
            "codingcode",  # the package itself (its version)
            "codingcode.errors",
            "codingcode.cancel",
            "codingcode.atomic",
            "codingcode.dirs",
            "codingcode.logs",
            "codingcode.lazy",  # a package's names imported on first use
            "codingcode.text",  # safe_text: strings made valid Unicode
            "codingcode.diffs",
            "codingcode.paths",  # path spellings, the control-file list
            "codingcode.skill_files",  # where skills live on disk (trust lists them)
            "codingcode.capabilities",  # what approval grants and the sandbox applies
            "codingcode.modes",  # the permission modes' names
            "codingcode.process",  # running a child process; the Launcher protocol
            "codingcode.process_tree",  # a launched command's processes, ended whole
            "codingcode.plugins",  # installed packages' entry points, loaded
        ),
    ),
    # the shell analysis library: what a command line does
    ("shell", ("codingcode.shell",)),
    # a project as a session sees it: settings files, trust records, the Workspace
    (
        "workspace",
        (
            "codingcode.config",
            "codingcode.claude_settings",
            "codingcode.trust",
            "codingcode.workspace",
        ),
    ),
    ("sandbox", ("codingcode.sandbox",)),
    ("tools", ("codingcode.tools",)),
    # deciding a call: approval, and the hooks that take part in the decision
    ("approval", ("codingcode.approval", "codingcode.hooks")),
    # what happened and how to undo it: the audit log, checkpoints
    ("record", ("codingcode.record", "codingcode.checkpoints")),
    # skills give the runner tools and the agent instructions
    ("skills", ("codingcode.skills",)),
    ("runner", ("codingcode.runner",)),
    # what runs sessions on a runner: the agent loop, MCP servers' tools, the fleet,
    # custom slash commands (rendered into agent turns)
    (
        "agent",
        ("codingcode.agent", "codingcode.mcp", "codingcode.fleet", "codingcode.custom_commands"),
    ),
    # the front ends a person or a peer talks to
    (
        "front ends",
        ("codingcode.cli", "codingcode.tui", "codingcode.mcp_server", "codingcode.__main__"),
    ),
)

#: Imports that are legal by the floors but not by design: the tools read their settings as
#: typed sections through the Workspace (``Workspace.section``), never the settings files'
#: module; approval and the hooks know tools by their declarations
#: (``codingcode.tools.declarations``: roles, effects, the edit preview), never a concrete
#: tool.
FORBIDDEN = (
    ("codingcode.tools", "codingcode.config"),
    ("codingcode.approval", "codingcode.tools.builtin"),
    ("codingcode.hooks", "codingcode.tools.builtin"),
)


def _within(module: str, unit: str) -> bool:
    if unit == PACKAGE:
        return module == PACKAGE
    return module == unit or module.startswith(unit + ".")


def floor_of(module: str, floors: tuple[tuple[str, tuple[str, ...]], ...] = FLOORS) -> int | None:
    """The index of ``module``'s floor (its longest placed prefix), or None if unplaced."""
    best: tuple[int, int] | None = None
    for index, (_, units) in enumerate(floors):
        for unit in units:
            if _within(module, unit) and (best is None or len(unit) > best[1]):
                best = (index, len(unit))
    return best[0] if best else None


def upward_imports(
    graph: dict[str, dict[str, int]],
    floors: tuple[tuple[str, tuple[str, ...]], ...] = FLOORS,
    forbidden: tuple[tuple[str, str], ...] = FORBIDDEN,
) -> list[str]:
    """Every import that goes up a floor, or is forbidden, as ``a -> b (line N): why``."""
    found = []
    for source, edges in sorted(graph.items()):
        low = floor_of(source, floors)
        for target, line in sorted(edges.items()):
            high = floor_of(target, floors)
            if low is not None and high is not None and high > low:
                found.append(
                    f"{source} -> {target} (line {line}): "
                    f"{floors[low][0]} imports {floors[high][0]}, a floor above"
                )
            elif any(_within(source, a) and _within(target, b) for a, b in forbidden):
                found.append(f"{source} -> {target} (line {line}): forbidden")
    return found


def test_every_module_has_a_floor() -> None:
    unplaced = [m for m in modules() if floor_of(m) is None]
    assert not unplaced, "modules on no floor (place them in FLOORS):\n" + "\n".join(unplaced)


def test_imports_go_down_the_floors() -> None:
    """Module-level, function-level and type-only imports all count: a type-only import is
    a dependency of the design too (the lower module would need to know the upper's
    shape), so none is exempt."""
    found = upward_imports(import_graph())
    assert not found, "imports going up the floors:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "importer",
    [
        "from codingcode.runner import build\n",  # module level
        "def f():\n    from codingcode import runner\n",  # function level
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..runner import build\n",
    ],
)
def test_checker_finds_an_upward_import(tmp_path: Path, importer: str) -> None:
    src = _package(
        tmp_path,
        {
            "__init__.py": "",
            "errors.py": "",
            "runner.py": "from codingcode.tools.x import y\nfrom codingcode import errors\n",
            "tools/__init__.py": "",
            "tools/x.py": importer,  # tools importing the runner: up
            "tools/y.py": "from codingcode.config import Settings\n",  # down, but forbidden
            "config.py": "",
            "cli.py": "from codingcode import runner\n",  # down: fine
        },
    )
    floors = (
        ("ground", ("codingcode", "codingcode.errors")),
        ("workspace", ("codingcode.config",)),
        ("tools", ("codingcode.tools",)),
        ("runner", ("codingcode.runner",)),
        ("front ends", ("codingcode.cli",)),
    )
    found = upward_imports(import_graph(src), floors)
    line = 3 if "TYPE_CHECKING" in importer else (2 if importer.startswith("def") else 1)
    assert found == [
        f"codingcode.tools.x -> codingcode.runner (line {line}): tools imports runner, "
        "a floor above",
        "codingcode.tools.y -> codingcode.config (line 1): forbidden",
    ]
    assert floor_of("codingcode.unplaced", floors) is None


# -- settings and trust are read once, by the front end (issue 19) -------------------------
#: The calls that read the settings files or the trust records.
READERS = frozenset({"load_settings", "TrustStore", "Workspace.load"})
#: Where they may be called below the front ends: the Workspace itself, and a tool's context
#: made with no session above it (a test, a library user), which reads one Workspace. The
#: runner and the agent session take the front end's Workspace (``Workspace.load``).
READ_ALLOWED = frozenset(
    {
        "codingcode.workspace",
        "codingcode.config.load_settings",  # its own default trust store
        "codingcode.tools.definition.ToolExecCtx.session_workspace",
    }
)


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return None


def settings_readers(src: Path = SRC) -> list[str]:
    """Every call of a settings or trust reader outside the front ends and READ_ALLOWED, as
    ``module.function: call (line)``."""
    found: list[str] = []
    for name, (path, _) in modules(src).items():
        if is_front_end(name):
            continue

        def walk(node: ast.AST, where: str) -> None:
            for child in ast.iter_child_nodes(node):
                inner = where
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    inner = f"{where}.{child.name}"
                if isinstance(child, ast.Call) and _called_name(child) in READERS:
                    allowed = any(inner == ok or inner.startswith(ok + ".") for ok in READ_ALLOWED)
                    if not allowed:
                        found.append(f"{inner}: {_called_name(child)} (line {child.lineno})")
                walk(child, inner)

        walk(ast.parse(path.read_text(encoding="utf-8")), name)
    return found


def test_only_the_front_ends_read_settings_and_trust() -> None:
    """Below the front ends, settings and trust come from the session's Workspace: a library
    function that read them itself would see other files than the session (a second read),
    and another trust decision than the user's answer."""
    readers = settings_readers()
    assert not readers, "settings or trust read below the front ends:\n" + "\n".join(readers)


def test_checker_finds_a_hidden_settings_read(tmp_path: Path) -> None:
    src = _package(
        tmp_path,
        {
            "__init__.py": "",
            "tool.py": (
                "from codingcode.config import load_settings\n"
                "class T:\n"
                "    def run(self, p):\n"
                "        return load_settings(p)\n"
            ),
            # the runner takes the front end's Workspace: a read there is found too
            "runner.py": "def build_runner(p):\n    return Workspace.load(p)\n",
            "workspace.py": "def load(p):\n    return load_settings(p)\n",
            "cli/__init__.py": "def main(p):\n    return TrustStore()\n",
        },
    )
    assert sorted(settings_readers(src)) == [
        "codingcode.runner.build_runner: Workspace.load (line 2)",
        "codingcode.tool.T.run: load_settings (line 4)",
    ]
