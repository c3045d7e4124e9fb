"""Shell command analysis: :func:`analyze`, cached.

A rule about ``sudo`` must see it in ``s\\udo id``, ``bash -c 'sudo id'``, ``x=$(sudo id)``,
``env FOO=1 nohup sudo id``, ``find . -exec sudo rm {} \\;`` and ``echo 'sudo id' | sh``, and
must *not* see it in ``git commit -m "drop sudo"``. So commands are parsed with the real
bash grammar (tree-sitter-bash), every simple command is found wherever it hides (lists,
pipes, subshells, groups, if/for/while/case, functions, ``$(...)``, backticks, process
substitution, arithmetic), words are resolved the way bash resolves them (quotes, escapes,
``$'...'``, braces, ``~``, known variables), wrappers and nested shells are looked through,
and whatever cannot be seen through (a program name computed at run time, ``eval`` of
something dynamic, a parse error) is reported as *opaque*: the rules then ask, never allow.

The walk itself is :class:`codingcode.shell.walker.Walker`.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from codingcode.shell.cache import BoundedLRU
from codingcode.shell.context import Ctx
from codingcode.shell.model import MAX_COMMAND_CHARS, Analysis
from codingcode.shell.walker import Walker


def analyze(command: str, cwd: str) -> Analysis:
    """Every simple command of ``command`` run in ``cwd``, and what could not be seen.

    A pure function of the text and ``cwd`` (it reads no file; ``$HOME`` is taken as fixed
    for the process, as :func:`codingcode.paths.lexical` takes it), so it is
    cached in a cache bounded by entries and by size (ANALYSES). The result is shared:
    callers read it, never change it."""
    key = (command, cwd)
    found = ANALYSES.get(key)
    if found is None:
        found = _analyze_fresh(command, cwd)
        ANALYSES.put(key, found, analysis_weight(command, found))
    return found


#: At most this many analyses, of at most this weight in all (about 40 MB).
MAX_CACHED_ANALYSES = 2048


MAX_CACHED_WEIGHT = 400_000


def analysis_weight(command: str, analysis: Analysis) -> int:
    """About the memory an analysis holds, in units of ~100 bytes: its text, its simple
    commands (~300 bytes each) and their words (~400 bytes each, measured)."""
    return 1 + len(command) // 100 + sum(3 + 4 * len(c.argv) for c in analysis.commands)


ANALYSES: BoundedLRU[tuple[str, str], Analysis] = BoundedLRU(MAX_CACHED_ANALYSES, MAX_CACHED_WEIGHT)


_LOCK = threading.Lock()


def _analyze_fresh(command: str, cwd: str) -> Analysis:
    out = Analysis()
    if len(command) > MAX_COMMAND_CHARS:
        out.opaque.append(f"the command is longer than {MAX_COMMAND_CHARS} characters")
        return out
    try:
        with _LOCK, _gc_paused():  # one parser, shared: tree-sitter parsers are not thread-safe
            walker = Walker(out)
            walker.script(command, Ctx(cwd, {}, 0))
            walker.finish()
    except (RecursionError, ValueError, UnicodeError) as exc:
        # Fail closed: what cannot be analysed is asked about, never allowed.
        out.opaque.append(f"the command could not be analysed ({type(exc).__name__})")
    return out


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while one line is analysed.

    An analysis makes several small objects per simple command and keeps them all until it
    ends (a 20,000-stage pipeline: ~100,000), so the collector's passes over them cost a
    quarter of the decision. Nothing the walk makes forms a cycle that must be freed early:
    reference counting frees the rest, and the collector runs again as soon as the analysis,
    bounded by MAX_COMMAND_CHARS and MAX_COMMANDS, ends.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
