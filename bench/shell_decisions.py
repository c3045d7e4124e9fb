"""The shell analysis's outcomes over a large set of command lines, to compare two versions.

    python bench/shell_decisions.py dump OUT.jsonl     # this checkout's outcomes
    python bench/shell_decisions.py compare A B         # lines whose outcome differs

A refactoring of ``codingcode.shell`` (or of the program knowledge the approval uses) must
leave every outcome the same: dump before, dump after, compare. For each command line it
records the analysis (every simple command: program, words, cwd, redirects, via, opaque; the
line's opaque reasons, risky assignments, written files, reads), whether it is read-only,
and the rule engine's decision with no user rules in the default and the bypass modes.

The lines: the approval corpora in tests/approval/corpus, the GTFOBins cases in
/work/shared/corpus (when present), the oracle's seeded obfuscation generator, every
string literal of the shell and approval tests that parses as a command, and generated
combinations of control flow, variables and programs (seeded).
"""

from __future__ import annotations

import ast
import json
import os
import random
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path("/work/shared/corpus/gtfobins_cases.jsonl")


def _corpus_lines() -> Iterator[str]:
    for name in ("attacks.jsonl", "benign.jsonl", "gtfobins.jsonl"):
        path = ROOT / "tests" / "approval" / "corpus" / name
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                case = json.loads(line)
                if case.get("tool") == "execute_command":
                    yield case["args"]["command"]
    if SHARED.exists():
        for line in SHARED.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            if case.get("tool") == "execute_command":
                yield case["args"]["command"]


def _test_literals() -> Iterator[str]:
    for folder in ("tests/shell", "tests/approval"):
        for path in sorted((ROOT / folder).glob("test_*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    text = node.value
                    if 0 < len(text) < 2000 and " " in text and "\x00" not in text:
                        yield text


def _oracle_lines() -> Iterator[str]:
    sys.path.insert(0, str(ROOT))
    from tests.approval import oracle

    for c in oracle.generate(seed=20260, count=150):
        yield c.command


_PROGRAMS = ["cat", "ls", "echo hi", "git status", "sudo id", "rm -rf x", "head", "true"]
_TARGETS = ["/etc/shadow", "README.md", "~/.ssh/id_rsa", ".env", "src"]


def _flow_lines(seed: int = 7, count: int = 600) -> Iterator[str]:
    """Generated control flow around variables, aliases and functions naming programs."""
    rng = random.Random(seed)
    for _ in range(count):
        a, b = rng.sample(_PROGRAMS, 2)
        target = rng.choice(_TARGETS)
        v = rng.choice(["p", "cmd", "x"])
        flow = rng.choice(
            [
                f"{v}='{a}'; [ -e y ] && {v}='{b}'; ${v} {target}",
                f"{v}='{a}'; {v}='{b}' & wait; ${v} {target}",
                f"{v}='{a}'; for {v} in {b.split()[0]}; do :; done; ${v} {target}",
                f"{v}='{a}'; case q in r) {v}='{b}';; esac; ${v} {target}",
                f"{v}='{a}'; if [ -e y ]; then {v}='{b}'; fi; ${v} {target}",
                f"{v}='{a}'; while false; do {v}='{b}'; done; ${v} {target}",
                f"{v}='{a}'; f() {{ {v}='{b}'; }}; [ -e y ] && f; ${v} {target}",
                f"shopt -s expand_aliases\nalias {v}='{b}'\n{v} {target}",
                f"{v}='{a}'; (  {v}='{b}' ); ${v} {target}",
                f"{a} {target} && {b} {target}",
            ]
        )
        yield flow


def lines() -> list[str]:
    seen: dict[str, None] = {}
    for source in (_corpus_lines, _test_literals, _oracle_lines, _flow_lines):
        for text in source():
            seen.setdefault(text, None)
    return list(seen)


def _word(w: Any) -> list[Any]:
    return [w.text, w.dynamic, w.glob, w.subst, w.download, w.content is not None]


def _analysis(a: Any) -> dict[str, Any]:
    return {
        "commands": [
            {
                "argv": [_word(w) for w in c.argv],
                "cwd": c.cwd,
                "redirects": [
                    [r.op, _word(r.target) if r.target else None, r.heredoc] for r in c.redirects
                ],
                "stdin": None
                if c.stdin is None
                else [c.stdin.kind, c.stdin.text, c.stdin.download, c.stdin.opaque],
                "via": list(c.via),
                "transparent": c.transparent,
                "assigns": [[n, _word(v)] for n, v in c.assigns],
                "opaque": c.opaque,
            }
            for c in a.commands
        ],
        "opaque": list(a.opaque),
        "downloads_into_shell": list(a.downloads_into_shell),
        "downloaded_files": sorted(a.downloaded_files),
        "program_globs": list(a.program_globs),
        "parse_error": a.parse_error,
        "risky": list(a.risky_assignments),
        "fallback": list(a.fallback_words),
        "written": a.written_files,
        "read_paths": list(a.read_paths),
        "speculative": [list(s) for s in a.speculative],
    }


def dump(out: Path) -> None:
    from codingcode import shell
    from codingcode.approval.pipeline import ToolCall
    from codingcode.approval.readonly import classify
    from codingcode.approval.rules import RuleEngine

    with tempfile.TemporaryDirectory() as tmp:
        # one fixed project path: the outcomes name it, and two dumps are compared
        project = Path(tempfile.gettempdir()) / "codingcode-shell-decisions"
        shutil.rmtree(project, ignore_errors=True)
        (project / "src").mkdir(parents=True)
        (project / "README.md").write_text("hi\n")
        os.environ.setdefault("CODINGCODE_STATE_DIR", str(Path(tmp) / "state"))
        os.environ.setdefault("CODINGCODE_CONFIG_DIR", str(Path(tmp) / "config"))
        engine = RuleEngine([], project)
        cwd = str(project)
        with out.open("w", encoding="utf-8") as f:
            for text in lines():
                text = text.replace("{H}", os.path.expanduser("~")).replace("{P}", cwd)
                row: dict[str, Any] = {"command": text}
                row["analysis"] = _analysis(shell.analyze(text, cwd))
                row["readonly"] = list(classify(text, cwd, project).__dict__.values())
                for mode in ("default", "bypass"):
                    r = engine.evaluate(
                        ToolCall("execute_command", {"command": text}, project, mode=mode)
                    )
                    row[mode] = [r.action, r.reason]
                f.write(json.dumps(row, sort_keys=True) + "\n")


def compare(a: Path, b: Path) -> int:
    def load(p: Path) -> dict[str, str]:
        rows = (json.loads(x) for x in p.read_text(encoding="utf-8").splitlines())
        return {r["command"]: json.dumps(r, sort_keys=True) for r in rows}

    left, right = load(a), load(b)
    differ = [k for k in left if k in right and left[k] != right[k]]
    only = [k for k in left if k not in right] + [k for k in right if k not in left]
    for k in differ[:40]:
        la, rb = json.loads(left[k]), json.loads(right[k])
        keys = [x for x in la if la[x] != rb.get(x)]
        print(f"DIFFERS {k!r}: {keys}")
        for x in keys:
            print(f"   before {x}: {json.dumps(la[x])[:300]}")
            print(f"   after  {x}: {json.dumps(rb[x])[:300]}")
    print(
        f"{len(left)} lines before, {len(right)} after; {len(differ)} differ; {len(only)} unpaired"
    )
    return 1 if differ or only else 0


if __name__ == "__main__":
    if os.environ.get("PYTHONHASHSEED") != "0":  # reasons built from sets: one fixed order
        os.execve(
            sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"}
        )
    if sys.argv[1:2] == ["dump"]:
        dump(Path(sys.argv[2]))
    elif sys.argv[1:2] == ["compare"]:
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        print(__doc__)
        sys.exit(2)
