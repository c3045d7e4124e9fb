"""Shell command analysis for rules, as a package.

- :mod:`.parse` — :func:`analyze` (cached); :mod:`.walker` walks the bash grammar (:mod:`.source`):
  every simple command, wherever it hides; :mod:`.words` (word expansion on the tree),
  :mod:`.variables`, :mod:`.redirects` (files written, stdin feeds), :mod:`.nested` (what a
  command runs: wrappers, shells, eval, Makefile/package.json scripts), :mod:`.static`
  (printf, echo... evaluated);
- :mod:`.flow` — what a name may be on every path (branches, loops, ``&``, functions,
  aliases): a program named by a value that differs between paths is unknown;
- :mod:`.hidden` — commands hidden in arguments, scripts a line may have downloaded;
- :mod:`.expand` — static word expansion (quotes, escapes, ``$'...'``, braces, ``~``);
- :mod:`.programs` — what the analysis knows of each program, one module per family
  (interpreters, wrappers, runners, git/make, sed/awk, editors, remote, packages...);
- :mod:`.model` — what the analysis produces (:class:`Analysis`, :class:`Command`, :class:`Word`).

``from codingcode.shell import analyze, Command, ...`` keeps working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codingcode.lazy import lazy_names

if TYPE_CHECKING:
    from codingcode.shell.expand import decode_ansi_c, expand_braces
    from codingcode.shell.model import (
        DYN,
        MAX_COMMAND_CHARS,
        MAX_DEPTH,
        Analysis,
        Command,
        Redirect,
        Stdin,
        Word,
        literal_word,
    )
    from codingcode.shell.parse import analyze
    from codingcode.shell.programs import (
        CODE_FLAGS,
        DOWNLOADERS,
        INTERPRETERS,
        NAME_ARGS,
        NON_RUNNERS,
        RISKY_VARIABLES,
        SHELLS,
        SOURCE_BUILTINS,
        WRAPPERS,
        Invocation,
        code_flags,
        is_interpreter,
    )

#: Where each name lives: imported on first use, so that a command that analyses no command
#: line (``codingcode tool read_file``) does not load the grammar and the program tables.
_HOMES = {
    "decode_ansi_c": "codingcode.shell.expand",
    "expand_braces": "codingcode.shell.expand",
    **dict.fromkeys(
        (
            "DYN",
            "MAX_COMMAND_CHARS",
            "MAX_DEPTH",
            "Analysis",
            "Command",
            "Redirect",
            "Stdin",
            "Word",
            "literal_word",
        ),
        "codingcode.shell.model",
    ),
    "analyze": "codingcode.shell.parse",
    **dict.fromkeys(
        (
            "CODE_FLAGS",
            "DOWNLOADERS",
            "INTERPRETERS",
            "NAME_ARGS",
            "NON_RUNNERS",
            "RISKY_VARIABLES",
            "SHELLS",
            "SOURCE_BUILTINS",
            "WRAPPERS",
            "Invocation",
            "code_flags",
            "is_interpreter",
        ),
        "codingcode.shell.programs",
    ),
}


__getattr__ = lazy_names(__name__, _HOMES)


__all__ = [
    "CODE_FLAGS",
    "DOWNLOADERS",
    "DYN",
    "INTERPRETERS",
    "MAX_COMMAND_CHARS",
    "MAX_DEPTH",
    "NAME_ARGS",
    "NON_RUNNERS",
    "RISKY_VARIABLES",
    "SHELLS",
    "SOURCE_BUILTINS",
    "WRAPPERS",
    "Analysis",
    "Command",
    "Invocation",
    "Redirect",
    "Stdin",
    "Word",
    "analyze",
    "code_flags",
    "decode_ansi_c",
    "expand_braces",
    "is_interpreter",
    "literal_word",
]
