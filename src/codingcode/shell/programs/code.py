"""Inline code of interpreters (python, perl, ruby, node, php, tcl...): what it runs and writes."""

from __future__ import annotations

import re
import shlex

from codingcode.shell.expand import decode_ansi_c
from codingcode.shell.model import DYN, literal_word
from codingcode.shell.programs.common import Part

# -- interpreters' inline code --------------------------------------------------------------
#: Calls that start a process, in the interpreters we know (one pattern for all).
_SPAWN = re.compile(
    r"\b(?:os\.system|os\.popen|os\.exec\w*|os\.spawn\w*|os\.posix_spawnp?|subprocess\.\w+|"
    r"pty\.spawn|commands\.getoutput|Popen|check_output|check_call|getoutput|getstatusoutput|"
    r"system|exec|execv\w*|popen|spawn\w*|execSync|execFileSync|spawnSync|execFile|"
    r"shell_exec|passthru|proc_open|pcntl_exec|io\.popen|os\.execute|IO\.popen|"
    r"Process\.spawn|Kernel\.(?:exec|system|spawn)|run|pipeline|open3|capture[23]?\w*|"
    r"Runtime\.getRuntime|ProcessBuilder|child_process|Bun\.spawn\w*|Deno\.(?:run|Command))\b"
)


_STRING_LIT = re.compile(
    r"'''(.*?)'''|\"\"\"(.*?)\"\"\"|'((?:[^'\\\n]|\\.)*)'|\"((?:[^\"\\\n]|\\.)*)\"|"
    r"`((?:[^`\\]|\\.)*)`|\bqq?[({\[<](.*?)[)}\]>]|\bqx[({\[<](.*?)[)}\]>]",
    re.DOTALL,
)


_BACKTICK_RUN = re.compile(r"`[^`]+`|\bqx[({\[<]|%x[({\[]")


def code_parts(code: str, lang: str) -> list[Part]:
    """What inline interpreter code runs: each process-starting call must take string
    literals (a command line or a list of words); they are analysed as commands. A call
    with anything else (a variable, string building) is opaque."""
    if lang in _TCL:
        return tcl_parts(code)
    _CURRENT_LANG[0] = lang
    spans = [m.span() for m in _STRING_LIT.finditer(code)]
    spawns = [m for m in _SPAWN.finditer(code) if not any(a <= m.start() < b for a, b in spans)]
    backticks = lang in ("perl", "ruby", "php", "julia", "node") and _BACKTICK_RUN.search(code)
    parts: list[Part] = file_writes(code)
    if not spawns and not backticks:
        return parts
    for m in spawns:
        name = m.group(0)
        if name in ("run", "pipeline", "exec", "system") and lang == "python":
            # plain run()/exec() in Python are not process calls unless imported so
            if not re.search(r"\bfrom\s+(os|subprocess)\b", code) and name in ("run", "pipeline"):
                continue
            if name == "exec":
                parts.append(("opaque", "python exec() runs code built at run time"))
                continue
        after = code[m.end() : m.end() + 2000]
        arg = _call_argument(after)
        if arg is None:
            parts.append(("opaque", f"{lang} {name}() starts a process the analysis cannot see"))
            continue
        parts.append(("script", literal_word(arg)))
        decoded = decode_ansi_c(arg)  # the language's own escapes (`\\`, `\x..`)
        if decoded != arg:
            parts.append(("script", literal_word(decoded)))
    if backticks:
        for lit in re.findall(r"`([^`]*)`", code):
            if "$" in lit or "#{" in lit:
                parts.append(("opaque", f"{lang} backticks run a command built at run time"))
            else:
                parts.append(("script", literal_word(lit)))
        if re.search(r"\bqx[({\[<]|%x[({\[]", code):
            parts.append(("opaque", f"{lang} qx/%x runs a command"))
    return parts


#: Inline code writing a file named by a string literal: open(F, "w"), Path(F).write_text,
#: fs.writeFileSync(F), File.write(F), file_put_contents(F), open(FH, ">", F)...
_Q = r"""(?P<q>['"])(?P<path>[^'"]+)(?P=q)"""


_WRITE_CALLS = (
    re.compile(r"\bopen\s*\(\s*" + _Q + r"""\s*,\s*(?:mode\s*=\s*)?['"][^'"]*[wax+]"""),
    re.compile(
        r"\bPath\s*\(\s*" + _Q + r"\s*\)\s*\.\s*(?:write_text|write_bytes|open|touch|unlink)"
    ),
    re.compile(
        r"\b(?:writeFileSync|writeFile|appendFileSync|appendFile|createWriteStream|"
        r"file_put_contents|File\.write|IO\.write)\s*\(\s*" + _Q
    ),
    re.compile(
        r"""\b(?:copyfile|copy2?|copyFileSync|copyFile|move|rename|renameSync)\s*\(\s*"""
        r"""['"][^'"]*['"]\s*,\s*""" + _Q
    ),
    re.compile(r"""\bFile\.open\s*\(\s*""" + _Q + r"""\s*,\s*['"][^'"]*[wa+]"""),
    re.compile(r"""\bopen\s*\(\s*[^,()]+,\s*['"]\+?>{1,2}\s*['"]\s*,\s*""" + _Q),
    re.compile(r"""\bopen\s*\(\s*[^,()'"]+,\s*(?P<q>['"])\+?>{1,2}\s*(?P<path>[^'"]+)(?P=q)"""),
)


def file_writes(code: str) -> list[Part]:
    """The files inline code writes, as far as string literals name them."""
    parts: list[Part] = []
    for rx in _WRITE_CALLS:
        for m in rx.finditer(code):
            path = m.group("path").strip()
            if path and DYN not in path:
                parts.append(("write", literal_word(path)))
    return parts


def _call_argument(after: str) -> str | None:
    """The command a call's arguments spell, when they are literals; else None."""
    s = after.lstrip()
    if s.startswith("("):
        s = s[1:].lstrip()
    elif not s or s[0] not in "'\"qe[`":
        return None
    if s.startswith("["):  # a list of literal words
        end = _matching(s, "[", "]")
        if end is None:
            return None
        inner = s[1:end]
        words = []
        for lit in _STRING_LIT.finditer(inner):
            words.append(next(g for g in lit.groups() if g is not None))
        rest = _STRING_LIT.sub("", inner).replace(",", "").strip()
        if rest or not words:
            return None
        return " ".join(shlex.quote(w) for w in words)
    perl_q = _perl_quoted(s)
    if perl_q is not None:
        first, end, interpolates = perl_q
        if interpolates and "$" in first:
            return None
        tail = s[end:].lstrip()
    else:
        found = _STRING_LIT.match(s)
        if not found:
            return None
        first = next((g for g in found.groups() if g is not None), "")
        tail = s[found.end() :].lstrip()
    if tail[:1] in ("+", ".", "%", "[") or "#{" in first:
        return None  # string building: the command is only known at run time
    if s[:1] == '"' and lang_interpolates(s) and "$" in first:
        return None  # "...$x..." in perl, ruby, php: a variable in the command
    words = [first]
    if tail[:1] == ",":
        close = _matching("(" + tail, "(", ")")
        for lit in _STRING_LIT.finditer(tail[: close if close is not None else len(tail)]):
            words.append(next(g for g in lit.groups() if g is not None))
    if len(words) == 1:
        return first
    return " ".join(shlex.quote(w) for w in words)


def lang_interpolates(s: str) -> bool:
    # Python and JavaScript never put a variable into "..."; perl, ruby, php may.
    return _CURRENT_LANG[0] in ("perl", "ruby", "php")


_CURRENT_LANG = ["python"]


_PAIRS = {"(": ")", "{": "}", "[": "]", "<": ">"}


def _perl_quoted(s: str) -> tuple[str, int, bool] | None:
    """perl's q(...) / qq{...} literal at the start of ``s``: (text, end, interpolates)."""
    m = re.match(r"(qq|q)\s*([({\[<])", s)
    if not m:
        return None
    open_c = m.group(2)
    close_c = _PAIRS[open_c]
    depth = 0
    for i in range(m.end() - 1, len(s)):
        c = s[i]
        if c == "\\":
            continue
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return s[m.end() : i], i + 1, m.group(1) == "qq"
    return None


def _matching(s: str, open_c: str, close_c: str) -> int | None:
    depth = 0
    quote: str | None = None
    i = 0
    while i < len(s):
        c = s[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


_TCL = frozenset({"tclsh", "wish", "expect"})


def tcl_parts(code: str, *, spawn: bool = False) -> list[Part]:
    parts: list[Part] = []
    runs = r"exec|spawn|open\s+\"?\|" if spawn else r"exec|open\s+\"?\|"
    for m in re.finditer(r"(?:^|[;\[\n])\s*(" + runs + r")\s*([^\];\n]*)", code):
        body = m.group(2).strip()
        if "$" in body or "[" in body:
            parts.append(("opaque", "tcl exec runs a command built at run time"))
        else:
            parts.append(("script", literal_word(body)))
    if re.search(r"\b(eval|uplevel|source|interp)\b", code):
        parts.append(("opaque", "tcl eval/source runs code the analysis does not follow"))
    return parts
