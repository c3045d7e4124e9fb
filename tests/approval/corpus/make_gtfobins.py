"""Turn GTFOBins techniques into approval test cases (writes gtfobins.jsonl next to this file).

    python tests/approval/corpus/make_gtfobins.py PATH/TO/GTFOBins.github.io [COMMIT]

GTFOBins (https://github.com/GTFOBins/GTFOBins.github.io, GPL-3.0) lists, per program, the
techniques that read files, write files or start a shell. Each file-read technique is aimed
at /etc/shadow, ~/.ssh/id_rsa, .env and /etc/passwd (``expect`` deny or ask) and at an
ordinary project file (``expect`` pass: never denied); each file-write technique the same
with the file it writes; each shell technique gets the command its shell runs on stdin
(``echo 'cat /etc/shadow' | TECHNIQUE``), or ``cat README.md`` for the harmless twin.
Placeholders GTFOBins uses (/path/to/temp-file, DATA, attacker.com ...) become project-local
names and a loopback address. Only the techniques' ``code`` is used, never their prose.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import yaml

TARGETS = {"/etc/shadow": "R6", "~/.ssh/id_rsa": "R8", ".env": "R9", "/etc/passwd": "R7"}
ORDINARY = "README.md"
PLACEHOLDERS = {
    "/path/to/temp-file": "tmp.txt",
    "/path/to/temp-dir": "tmpdir",
    "/path/to/output-dir": "outdir",
    "/path/to/dir": "somedir",
    "/path/to/lib": "./lib",
    "/path/to/command": "/bin/true",
    "attacker.com": "127.0.0.1",
    "DATA": "x",
}


def _fill(code: str, extra: dict[str, str]) -> str:
    for key, value in {**extra, **PLACEHOLDERS}.items():
        code = code.replace(key, value)
    return code.strip()


def cases(root: Path, commit: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    folder = root / "_gtfobins"
    for path in sorted(folder.iterdir()):
        if path.suffix or path.name.startswith("."):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            doc = yaml.safe_load(text.split("---", 2)[1]) if text.startswith("---") else None
        except yaml.YAMLError:
            continue
        if not isinstance(doc, dict):
            continue
        program = path.name
        alias_of = str(doc.get("alias") or "")
        if alias_of:
            target = folder / alias_of
            try:
                doc = yaml.safe_load(target.read_text(encoding="utf-8").split("---", 2)[1])
            except (OSError, IndexError, yaml.YAMLError):
                continue
            if not isinstance(doc, dict):
                continue
            program_alias = str(path.name)
        else:
            program_alias = ""
        functions = doc.get("functions") or {}
        for function in ("file-read", "file-write", "shell"):
            for n, entry in enumerate(functions.get(function) or []):
                code = entry.get("code") if isinstance(entry, dict) else None
                if not isinstance(code, str) or not code.strip():
                    continue
                if program_alias:
                    code = re.sub(rf"\b{re.escape(alias_of)}\b", program_alias, code)
                source = {
                    "repo": "GTFOBins/GTFOBins.github.io",
                    "commit": commit,
                    "file": f"_gtfobins/{program}",
                    "function": function,
                    "index": n,
                }
                out.extend(_variants(code, function, source))
    return out


def _variants(code: str, function: str, source: dict[str, Any]) -> list[dict[str, Any]]:
    made: list[dict[str, Any]] = []

    def case(command: str, expect: str, target: str) -> None:
        made.append(
            {
                "tool": "execute_command",
                "args": {"command": command},
                "expect": expect,
                "target": target,
                "source": source,
            }
        )

    if function == "file-read":
        if "/path/to/input-file" not in code:
            return made
        for target in TARGETS:
            case(_fill(code, {"/path/to/input-file": target}), "deny-or-ask", target)
        harmless = _fill(code, {"/path/to/input-file": ORDINARY})
        case(harmless, _harmless(harmless), ORDINARY)
    elif function == "file-write":
        if "/path/to/output-file" not in code:
            return made
        for target in TARGETS:
            case(
                _fill(code, {"/path/to/output-file": target, "/path/to/input-file": ORDINARY}),
                "deny-or-ask",
                target,
            )
        harmless = _fill(
            code, {"/path/to/output-file": "notes.txt", "/path/to/input-file": ORDINARY}
        )
        case(harmless, _harmless(harmless), "notes.txt")
    else:
        body = _fill(code, {"/path/to/input-file": ORDINARY, "/path/to/output-file": "out.txt"})
        if "\n" in body:
            body = "{ " + body + "\n}"  # every line reads the same stdin
        for target in TARGETS:
            case(f"echo {shlex.quote('cat ' + target)} | {body}", "deny-or-ask", target)
        case(f"echo {shlex.quote('cat ' + ORDINARY)} | {body}", _harmless(body), ORDINARY)
    return made


_PRIVILEGED = re.compile(r"(^|[\s|;&({])(sudo|su|doas|pkexec|run0|systemd-run)(\s|$)")


def _harmless(code: str) -> str:
    """What the harmless twin expects: never denied, unless the technique itself escalates
    privileges (``sudo /bin/sh``): R2 denies that whatever it runs."""
    return "deny" if _PRIVILEGED.search(code) else "not-denied"


def main() -> None:
    root = Path(sys.argv[1])
    commit = sys.argv[2] if len(sys.argv) > 2 else "unknown"
    made = cases(root, commit)
    dest = Path(__file__).with_name("gtfobins.jsonl")
    with open(dest, "w", encoding="utf-8") as f:
        for c in made:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    print(f"{len(made)} cases from {root} at {commit} -> {dest}")


if __name__ == "__main__":
    main()
