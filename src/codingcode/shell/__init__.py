"""Shell command analysis for rules, as a package.

- :mod:`.parse` — :func:`analyze` (cached); :mod:`.walker` walks the bash grammar (:mod:`.source`):
  every simple command, wherever it hides; :mod:`.words` (word expansion on the tree),
  :mod:`.variables`, :mod:`.redirects` (files written, stdin feeds), :mod:`.nested` (what a
  command runs: wrappers, shells, eval, Makefile/package.json scripts), :mod:`.static`
  (printf, echo... evaluated);
- :mod:`.expand` — static word expansion (quotes, escapes, ``$'...'``, braces, ``~``);
- :mod:`.wrappers` — wrappers and runners looked through (``env``, ``xargs``, ``ssh``, ...);
- :mod:`.programs` — shells, interpreters and downloaders, and how they get their code;
- :mod:`.model` — what the analysis produces (:class:`Analysis`, :class:`Command`, :class:`Word`).

``from codingcode.shell import analyze, Command, ...`` keeps working.
"""

from __future__ import annotations

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
    Invocation,
    code_flags,
    is_interpreter,
)
from codingcode.shell.wrappers import WRAPPERS

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
