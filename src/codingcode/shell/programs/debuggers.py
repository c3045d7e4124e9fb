"""Debuggers and database shells: gdb/lldb, sqlite3, expect."""

from __future__ import annotations

import re

from codingcode.shell.model import Command, Word, literal_word
from codingcode.shell.programs.code import tcl_parts
from codingcode.shell.programs.common import Part, lit_word, split_opts, ws


# -- gdb and other debuggers --------------------------------------------------------------
def gdb_parts(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        t = w.text
        if t in ("-ex", "--ex", "-eval-command", "--eval-command", "-iex", "--iex") and i + 1 < len(
            rest
        ):
            body = rest[i + 1].text.strip()
            if body.startswith(("shell ", "!")):
                parts.append(("script", lit_word(body.split(None, 1)[1] if " " in body else "")))
                if body.startswith("!"):
                    parts[-1] = ("script", lit_word(body[1:]))
            elif re.match(r"^(python|py|pi|guile|gu|source|pipe|\|)\b", body) or "system(" in body:
                parts.append(("opaque", f"gdb {body[:30]!r} can run commands"))
        elif t in ("-x", "--command", "-ix", "--init-command") or t.startswith("--command="):
            parts.append(("opaque", "gdb reads commands from a file"))
        elif t == "--args" and i + 1 < len(rest):
            parts.append(("argv", rest[i + 1 :]))
            break
    if cmd.stdin is not None and (cmd.stdin.text or cmd.stdin.opaque):
        parts.append(("opaque", "gdb reads commands from stdin"))
    return parts


_SQLITE_OPTS = ws("-cmd -separator -newline -nullvalue -init -vfs -mmap -pagecache -lookaside")


def sqlite_parts(cmd: Command) -> list[Part]:
    """sqlite3's dot-commands: ``.shell``/``.system`` and ``.output |CMD`` run commands,
    ``.read``/``.import`` read files, ``.output``/``.once`` write one, ``.load`` loads code;
    SQL itself runs nothing (its ``load_extension`` does: opaque)."""
    rest = list(cmd.argv[1:])
    texts: list[Word] = []
    opts, positional = split_opts(rest, _SQLITE_OPTS)
    texts.extend(opts.get("-cmd", []))
    for w in opts.get("-init", []):
        texts.append(literal_word(f".read {w.text}"))
    texts.extend(positional[1:])  # after the database: SQL or dot-commands
    if not positional[1:] and cmd.stdin is not None:
        if cmd.stdin.text is not None:
            texts.append(literal_word(cmd.stdin.text))
        elif cmd.stdin.opaque:
            return [("opaque", "sqlite3 runs commands from stdin only known at run time")]
    parts: list[Part] = []
    for w in texts:
        if w.dynamic:
            return [("opaque", "sqlite3 runs commands only known at run time")]
        if "load_extension" in w.text.lower():
            parts.append(("opaque", "sqlite3 load_extension loads a shared object"))
        for line in w.text.split("\n"):
            words = line.strip().split(None, 1)
            if not words or not words[0].startswith("."):
                continue
            dot, arg = words[0], (words[1].strip() if len(words) > 1 else "")
            name = arg.split()[0].strip("'\"") if arg else ""
            if dot in (".shell", ".system"):
                parts.append(("script", literal_word(arg)))
            elif dot in (".output", ".once", ".excel") and arg.startswith("|"):
                parts.append(("script", literal_word(arg[1:])))
            elif dot in (".output", ".once", ".log", ".save", ".backup", ".dump") and name:
                if dot != ".dump" and not name.startswith("-"):
                    parts.append(("write", literal_word(name)))
            elif dot in (".read", ".import", ".open", ".restore") and name:
                if name.startswith("|"):
                    parts.append(("script", literal_word(arg.lstrip("|"))))
                elif not name.startswith("-"):
                    parts.append(("read", literal_word(name)))
            elif dot == ".load":
                parts.append(("opaque", "sqlite3 .load loads a shared object"))
    return parts


def expect_parts(cmd: Command) -> list[Part]:
    """expect: ``-c CODE`` and a known stdin are Tcl (``spawn`` runs a program); a script
    file of the project is run like any interpreter's (one written in this line is caught
    by the written-files check)."""
    rest = list(cmd.argv[1:])
    parts: list[Part] = []
    files = 0
    for i, w in enumerate(rest):
        if w.text == "-c" and i + 1 < len(rest):
            code = rest[i + 1]
            if code.dynamic:
                return [("opaque", "expect runs Tcl only known at run time")]
            parts.extend(tcl_parts(code.text, spawn=True))
        elif not w.text.startswith("-") and (i == 0 or rest[i - 1].text != "-c"):
            files += 1
            if w.dynamic:
                return [("opaque", "expect runs a script whose name is only known at run time")]
    if files == 0 and not any(w.text == "-c" for w in rest):
        stdin = cmd.stdin
        if stdin is not None and stdin.text is not None:
            parts.extend(tcl_parts(stdin.text, spawn=True))
        elif stdin is not None and stdin.opaque:
            parts.append(("opaque", "expect runs Tcl from stdin only known at run time"))
    return parts
