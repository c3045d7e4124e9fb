"""Text tools: sed (e, w, s///e), awk (system, pipes, getline), split, sort, rg."""

from __future__ import annotations

import re

from codingcode.shell.model import Command, Word, literal_word
from codingcode.shell.programs.common import Part, lit_word

# -- sed --------------------------------------------------------------------------------
_SED_ADDR = re.compile(
    r"^\s*(?:(?:\d+|\$|/(?:[^/\\]|\\.)*/[IM]*|\\(.)(?:(?!\1).)*\1)"
    r"(?:\s*,\s*(?:\d+|\$|/(?:[^/\\]|\\.)*/[IM]*|[+~]\d+))?\s*!?\s*)?"
)


def sed_parts(script: str) -> list[Part]:
    """What a sed script runs (``e``, ``s///e``) and writes or reads (``w``, ``r``)."""
    parts: list[Part] = []
    for raw_line in script.split("\n"):
        for cmdtext in _sed_commands(raw_line):
            body = _SED_ADDR.sub("", cmdtext, count=1).lstrip("{ ").strip()
            if not body:
                continue
            c = body[0]
            arg = body[1:].strip()
            if c == "e":
                parts.append(
                    ("script", lit_word(arg)) if arg else ("opaque", "sed e runs the pattern space")
                )
            elif c in "wW":
                parts.append(("write", lit_word(arg)))
            elif c in "rR":
                parts.append(("read", lit_word(arg)))
            elif c == "s" and len(body) > 1:
                flags, wfile = _sed_s_flags(body)
                if "e" in flags:
                    parts.append(("opaque", "sed s///e runs the result as a command"))
                if wfile is not None:
                    parts.append(("write", lit_word(wfile)))
    return parts


def _sed_commands(line: str) -> list[str]:
    # e/w/r/a/i/c take the rest of the line; otherwise ';' separates commands.
    out: list[str] = []
    rest = line
    while rest:
        body = _SED_ADDR.sub("", rest, count=1).lstrip("{ ")
        if body[:1] in ("e", "w", "W", "r", "R", "a", "i", "c"):
            out.append(rest)
            break
        if body[:1] == "s" and len(body) > 1:
            end = _sed_s_end(body)
            out.append(rest[: len(rest) - len(body) + end])
            rest = rest[len(rest) - len(body) + end :].lstrip("; }")
            continue
        head, sep, tail = rest.partition(";")
        out.append(head)
        rest = tail if sep else ""
    return out


def _sed_s_flags_start(body: str) -> int:
    """Index just after the third delimiter of ``s/a/b/flags`` (where the flags begin)."""
    delim = body[1]
    i, seen = 2, 0
    while i < len(body) and seen < 2:
        if body[i] == "\\":
            i += 2
            continue
        if body[i] == delim:
            seen += 1
        i += 1
    return i


def _sed_s_end(body: str) -> int:
    """Index just after the flags of ``s/a/b/flags`` (the w flag takes the line)."""
    i = _sed_s_flags_start(body)
    while i < len(body) and body[i] not in ";}\n":
        if body[i] == "w":
            return len(body)
        i += 1
    return i


def _sed_s_flags(body: str) -> tuple[str, str | None]:
    flags = body[_sed_s_flags_start(body) : _sed_s_end(body)]
    if "w" in flags:
        before, _, path = flags.partition("w")
        return before, path.strip()
    return flags, None


def sed_command_parts(cmd: Command) -> list[Part]:
    rest = list(cmd.argv[1:])
    scripts: list[Word] = []
    explicit = False
    i = 0
    positional: list[Word] = []
    while i < len(rest):
        t = rest[i].text
        if t in ("-e", "--expression") and i + 1 < len(rest):
            scripts.append(rest[i + 1])
            explicit = True
            i += 2
            continue
        if t.startswith("--expression="):
            scripts.append(lit_word(t.split("=", 1)[1]))
            explicit = True
        elif (
            (t in ("-f", "--file") and i + 1 < len(rest))
            or t.startswith("--file=")
            or (t.startswith("-f") and len(t) > 2)
        ):
            return [("opaque", "sed -f reads its script from a file")]
        elif t.startswith("-") and len(t) > 1 and not t.startswith("--") and "e" in t[1:]:
            if i + 1 < len(rest):
                scripts.append(rest[i + 1])
                explicit = True
                i += 2
                continue
        elif not t.startswith("-") or t == "-":
            positional.append(rest[i])
        i += 1
    if not explicit and positional:
        scripts.append(positional[0])
    parts: list[Part] = []
    for w in scripts:
        if w.dynamic:
            parts.append(("opaque", "sed runs a script only known at run time"))
        else:
            parts.extend(sed_parts(w.text))
    return parts


# -- awk --------------------------------------------------------------------------------
AWK_LIKE = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk", "original-awk"})


_AWK_STR = r'"((?:[^"\\]|\\.)*)"'


_AWK_SYSTEM = re.compile(r"\bsystem\s*\(")


_AWK_SYSTEM_LIT = re.compile(r"\bsystem\s*\(\s*" + _AWK_STR + r"\s*\)")


_AWK_PIPE_TO = re.compile(r"(?<![|])\|(?![|&])\s*(?!getline)")


_AWK_PIPE_LIT = re.compile(r"(?<![|])\|(?![|&])\s*" + _AWK_STR)


_AWK_GETLINE_LIT = re.compile(_AWK_STR + r"\s*\|\s*getline")


_AWK_GETLINE = re.compile(r"\|\s*getline")


_AWK_COPROC = re.compile(r"\|&")


def awk_parts(code: str) -> list[Part]:
    """Commands an awk program runs: ``system("...")``, ``print | "cmd"``,
    ``"cmd" | getline``; a command built at run time is opaque."""
    parts: list[Part] = []
    literals = [_awk_unescape(m) for m in _AWK_SYSTEM_LIT.findall(code)]
    if len(_AWK_SYSTEM.findall(code)) != len(literals):
        parts.append(("opaque", "awk's system() runs a command built at run time"))
    getlines = _AWK_GETLINE_LIT.findall(code)
    pipes_to = _AWK_PIPE_LIT.findall(code)
    n_getline = len(_AWK_GETLINE.findall(code))
    n_pipes = len(_AWK_PIPE_TO.findall(code)) - n_getline
    if n_getline != len(getlines) or n_pipes > len(pipes_to) or _AWK_COPROC.search(code):
        parts.append(("opaque", "awk pipes to or from a command built at run time"))
    for lit in [*literals, *(_awk_unescape(g) for g in getlines), *map(_awk_unescape, pipes_to)]:
        parts.append(("script", literal_word(lit)))
    return parts


def _awk_unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)


def awk_command_parts(cmd: Command) -> list[Part]:
    rest = list(cmd.argv[1:])
    i = 0
    while i < len(rest):
        t = rest[i].text
        if t in ("-f", "--file") or t.startswith("-f"):
            return [("opaque", "awk -f reads its program from a file")]
        if t in ("-v", "-F", "--assign", "--field-separator"):
            i += 2
            continue
        if t == "--":
            i += 1
            break
        if t.startswith("-") and len(t) > 1:
            i += 1
            continue
        break
    if i >= len(rest):
        return []
    prog = rest[i]
    if prog.dynamic:
        return [("opaque", "awk runs a program only known at run time")]
    return awk_parts(prog.text)


def split_parts(cmd: Command) -> list[Part]:
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        if w.text == "--filter" and i + 1 < len(rest):
            return [("script", rest[i + 1])]
        if w.text.startswith("--filter="):
            return [("script", lit_word(w.text.partition("=")[2]))]
    return []


#: Options whose value is a program the command runs (``rg --pre CMD``, ``sort
#: --compress-program=CMD``, ``less``/``zless`` are pagers elsewhere).
PROGRAM_OPTIONS = {
    "rg": ("--pre",),
    "sort": ("--compress-program",),
    "gsort": ("--compress-program",),
    "diff": ("--diff-program",),
    "sdiff": ("--diff-program",),
}


def program_option_parts(cmd: Command, options: tuple[str, ...]) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        name, eq, val = w.text.partition("=")
        if name in options:
            value = lit_word(val) if eq else (rest[i + 1] if i + 1 < len(rest) else None)
            if value is not None:
                parts.append(("script", value))
    return parts
