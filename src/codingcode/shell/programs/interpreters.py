"""Shells and interpreters: their names, code flags, and how they get their code."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from codingcode.shell.model import Command, Word, literal_word

SHELLS = frozenset(
    {
        "sh",
        "bash",
        "dash",
        "zsh",
        "ksh",
        "mksh",
        "ash",
        "yash",
        "posh",
        "rbash",
        "fish",
        "csh",
        "tcsh",
        "elvish",
        "rc",
        "sash",
        "nu",
        "xonsh",
        "oksh",
        "loksh",
        "es",
    }
)


#: Interpreters that run a script given as code, a file, or on stdin.
INTERPRETERS = frozenset(
    {
        "python",
        "python2",
        "python3",
        "perl",
        "ruby",
        "node",
        "nodejs",
        "php",
        "lua",
        "luajit",
        "tclsh",
        "Rscript",
        "R",
        "julia",
        "elixir",
        "guile",
        "racket",
        "sbcl",
        "osascript",
        "groovy",
        "wish",
        "deno",
        "bun",
        "pwsh",
    }
)


#: Flags after which an interpreter's next argument is code.
CODE_FLAGS = {
    "python": ("-c",),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "node": ("-e", "-p", "--eval", "--print"),
    "php": ("-r",),
    "lua": ("-e",),
    "Rscript": ("-e",),
    "pwsh": ("-c", "-Command"),
}


SOURCE_BUILTINS = frozenset({"source", "."})


# -- shells and interpreters ---------------------------------------------------------
@dataclass(frozen=True)
class Invocation:
    code: Word | None = None  # -c / -e code
    script: Word | None = None  # a script file
    reads_stdin: bool = False


@lru_cache(maxsize=4096)
def is_interpreter(prog: str) -> bool:
    return prog in INTERPRETERS or python_like(prog)


def python_like(prog: str) -> bool:
    return prog.startswith("python") and all(c.isdigit() or c == "." for c in prog[6:])


def code_flags(prog: str) -> tuple[str, ...]:
    if prog in SHELLS:
        return ("-c",)
    if python_like(prog):
        return ("-c",)
    base = "node" if prog == "nodejs" else "lua" if prog == "luajit" else prog
    return CODE_FLAGS.get(base, ("-e",))


_SHELL_OPTS_WITH_ARG = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


_INTERP_OPTS_WITH_ARG = frozenset({"-m", "-W", "-X", "-I", "-r", "--require", "-M", "-x"})


def invocation(cmd: Command, prog: str) -> Invocation:
    """How a shell or interpreter gets its code."""
    args = list(cmd.argv[1:])
    flags = code_flags(prog)
    is_shell = prog in SHELLS
    wants_code = False
    stdin_flag = False
    i = 0
    while i < len(args):
        t = args[i].text
        if t == "--":
            i += 1
            break
        if t == "-":
            stdin_flag = True
            i += 1
            break
        if t.startswith(("-", "+")) and len(t) > 1 and not args[i].dynamic:
            if t in flags:
                return Invocation(code=args[i + 1] if i + 1 < len(args) else literal_word(""))
            if is_shell and not t.startswith("--") and "c" in t[1:]:
                wants_code = True
            elif is_shell and not t.startswith("--") and "s" in t[1:]:
                stdin_flag = True
            elif not is_shell and t[:2] in flags and len(t) > 2:
                return Invocation(code=literal_word(t[2:]))  # python -cCODE
            if (t in _SHELL_OPTS_WITH_ARG and is_shell) or (
                t in _INTERP_OPTS_WITH_ARG and not is_shell
            ):
                if t == "-m" and not is_shell:
                    return Invocation(script=args[i + 1] if i + 1 < len(args) else None)
                i += 2
                continue
            i += 1
            continue
        break
    positional = args[i:]
    if wants_code:
        return Invocation(code=positional[0] if positional else literal_word(""))
    if stdin_flag or not positional:
        return Invocation(reads_stdin=True)
    return Invocation(script=positional[0])
