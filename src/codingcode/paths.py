"""Path normalisation for rules: what a path a tool or a command names really is.

A rule about ``/etc/passwd`` must see it behind ``/etc//passwd``, ``/usr/../etc/passwd``,
``~/../../etc/passwd``, a path relative to the cwd, or a symlink in the project. So every
path is made absolute against its cwd, ``~`` and ``$HOME`` expanded, ``//`` and ``..``
folded, and checked twice: as written (lexically) and with symlinks resolved.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import stat
import threading
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path


def home_dir() -> str:
    return os.path.expanduser("~")


def expand_user(path: str) -> str:
    """``~`` and ``~user`` at the start of a path."""
    if path.startswith("~"):
        return os.path.expanduser(path)
    return path


def lexical(path: str, cwd: str | Path) -> str:
    """Absolute, ``~`` expanded, ``.``/``..``/``//`` folded; symlinks left alone."""
    return _lexical(path, str(cwd))


@lru_cache(maxsize=8192)
def _lexical(path: str, cwd: str) -> str:  # pure string work: safe to cache
    p = expand_user(path)
    if not p.startswith("/"):
        p = posixpath.join(str(cwd), p)
    p = posixpath.normpath(p)
    # POSIX lets normpath keep a leading "//"; for rules it is the same root.
    while p.startswith("//"):
        p = p[1:]
    return p


def _real(path: str) -> str:
    # Never cached across calls: a file may become a symlink between two calls.
    plain = _PLAIN_ABSOLUTE.fullmatch(path) is not None
    if plain and path.count("/") > 2:
        # A deeper path: the kernel resolves it in one open, and names what it opened.
        found = _kernel_real(path)
        if found is not None:
            return found
    elif plain and _unlinked(path):
        return path
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _unlinked(path: str) -> bool:
    """Every component of a plain absolute path exists and none is a symlink: the path is
    its own real path (one lstat per component, without realpath's bookkeeping; cheaper
    than the kernel's way for a path of one or two components)."""
    try:
        end = 0
        while True:
            end = path.find("/", end + 1)
            if stat.S_ISLNK(os.lstat(path if end == -1 else path[:end]).st_mode):
                return False
            if end == -1:
                return True
    except (OSError, ValueError):
        return False


def _kernel_real(path: str) -> str | None:
    """The real path of a plain absolute ``path`` as the kernel resolves it (an ``O_PATH``
    open, named by its ``/proc/self/fd`` link), or None where that cannot tell (no /proc, a
    deleted directory, a link to nowhere): then realpath's own way is taken. Existence is
    asked with ``access`` first, which answers without an exception."""
    if not os.access(path, os.F_OK):
        return _missing_real(path)
    return _opened_real(path)


def _opened_real(path: str) -> str | None:
    """The kernel's name for what an ``O_PATH`` open of ``path`` (which exists) reaches, or
    None where it cannot tell (the open fails: a link to nowhere, no descriptor left)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        found = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    finally:
        os.close(fd)
    if not found.startswith("/") or found.endswith(" (deleted)"):
        return None
    return found


def _missing_real(path: str) -> str | None:
    """realpath of a plain path that does not resolve: the real path of its longest part
    that exists, and the rest as written (what realpath gives), or None when the path is
    there as a link to nowhere (realpath follows it)."""
    if os.access(path, os.F_OK, follow_symlinks=False):
        return None
    head, rest = path, []
    while True:
        head, _, name = head.rpartition("/")
        rest.append(name)
        if not head:
            return path  # nothing of it exists
        if os.access(head, os.F_OK, follow_symlinks=False):
            break
    # ``head`` exists: opened at once (a link to nowhere fails the open, and realpath's own
    # way is taken, as _kernel_real's ``access`` would have sent it there).
    if head.count("/") <= 2 and _unlinked(head):
        found: str | None = head
    else:
        found = _opened_real(head)
    return None if found is None else _join(found, "/".join(reversed(rest)))


#: An absolute path with no empty, ``.`` or ``..`` component (and no trailing ``/``).
_PLAIN_ABSOLUTE = re.compile(r"(?:/(?!\.\.?(?:/|$))[^/\x00]+)+")


def _real_name(
    joined: str, cwd: str, name: str, cache: dict[tuple[str, str], tuple[str, ...]] | None
) -> str:
    try:
        # Most words of a command name nothing in cwd: ``access`` says so without the cost
        # of an exception; what is there is looked at with ``lstat``.
        is_link = os.access(joined, os.F_OK, follow_symlinks=False) and stat.S_ISLNK(
            os.lstat(joined).st_mode
        )
    except (OSError, ValueError):
        is_link = False
    if is_link:
        return _real(joined)
    return _join(_real_memo(cwd, cache), name)


def _join(directory: str, name: str) -> str:
    """``posixpath.join`` of two strings (the hot path of every decision: without its
    type checks)."""
    if name.startswith("/"):
        return name
    if not directory or directory.endswith("/"):
        return directory + name
    return directory + "/" + name


def _real_memo(path: str, cache: dict[tuple[str, str], tuple[str, ...]] | None) -> str:
    """realpath, remembered for the rest of this one decision only."""
    key = ("\0real", path)
    found = cache.get(key) if cache is not None else None
    if found is None:
        found = (_real(path),)
        if cache is not None:
            cache[key] = found
    return found[0]


_decision = threading.local()


def begin_decision() -> None:
    """Start one decision: symlinks are resolved afresh, once per path within it. Nested
    (the rule engine inside the pipeline's decision): the outer one's memo goes on."""
    depth = getattr(_decision, "depth", 0)
    if depth == 0:
        _decision.cache = {}
    _decision.depth = depth + 1


def end_decision() -> None:
    """End it: a resolution outside a decision is fresh every time (never the last one's)."""
    depth = max(0, getattr(_decision, "depth", 0) - 1)
    _decision.depth = depth
    if depth == 0:
        _decision.cache = None


_PROC_ROOT = re.compile(r"^/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/root(/.*)?$")


def spellings(path: str, cwd: str | Path) -> tuple[str, ...]:
    """The lexical form and the symlink-resolved form (one if they agree)."""
    cwd_s = cwd if isinstance(cwd, str) else str(cwd)
    key = (path, cwd_s)
    cache: dict[tuple[str, str], tuple[str, ...]] | None = getattr(_decision, "cache", None)
    if cache is not None:
        found = cache.get(key)
        if found is not None:
            return found
    lex = _lexical(path, cwd_s)
    p = expand_user(path)
    joined = _join(cwd_s, p)
    if "/" not in p and p not in (".", ".."):
        # One name in cwd (most words of a command): one lstat instead of a full walk.
        real = _real_name(joined, cwd_s, p, cache)
    else:
        real = _real_memo(joined, cache)
    result = (lex,) if real == lex else (lex, real)
    root = _PROC_ROOT.match(lex)
    if root is not None:
        # /proc/PID/root is the root directory of that process: every spelling under it
        # is also the same path from the root (whether or not it can be resolved here)
        same = "/" + (root.group(1) or "").lstrip("/")
        if same not in result:
            result = (*result, same)
    if cache is not None and len(cache) < 4096:
        cache[key] = result
    return result


def is_inside(path: str, root: Path) -> bool:
    """True when ``path`` (relative to ``root``) stays inside ``root``, symlinks included."""
    root_s = str(root)
    return all(
        s == root_s or s.startswith(root_s.rstrip("/") + "/") for s in spellings(path, root_s)
    )


#: Files in a project that configure what the agent may do or what runs on its own:
#: an edit of one is never passed by a mode (it could grant itself permissions).
#: Claude Code's ``.claude/`` is read beside ``.codingcode/``, so it is one too.
CONTROL_FILES = (".codingcode", ".claude", ".mcp.json", ".git/hooks", ".git/config")


def is_control_file(path: str, root: Path) -> bool:
    root_s = str(root).rstrip("/")
    for s in spellings(path, root_s):
        rel = s[len(root_s) + 1 :] if s.startswith(root_s + "/") else None
        if rel is not None and any(rel == c or rel.startswith(c + "/") for c in CONTROL_FILES):
            return True
    return False


# -- protected paths (R6–R9) ----------------------------------------------------------
#: R6 and its neighbours: the shadow file, the group shadow file and their backups.
SHADOW_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-")
#: R7 and its backup copy.
PASSWD_FILES = ("/etc/passwd", "/etc/passwd-")
#: Templates that are meant to be committed and hold no secrets.
ENV_TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist")


def is_env_name(name: str) -> bool:
    if name == ".env":
        return True
    return name.startswith(".env.") and not name.endswith(ENV_TEMPLATE_SUFFIXES)


def classify(path: str) -> set[str]:
    """Which preset path rules one absolute, normalised path touches."""
    hits: set[str] = set()
    if path in SHADOW_FILES or (
        # any *shadow* file right under /etc (backups such as /etc/shadow.bak), as the
        # sandbox masks them
        path.startswith("/etc/") and "shadow" in path[5:] and "/" not in path[5:]
    ):
        hits.add("R6")
    elif path in PASSWD_FILES:
        hits.add("R7")
    parts = path.split("/")
    if ".ssh" in parts:
        hits.add("R8")
    if parts and is_env_name(parts[-1]) and not os.path.isdir(path):
        hits.add("R9")
    return hits


def classify_path(path: str, cwd: str | Path) -> set[str]:
    """Preset path rules touched by ``path`` written relative to ``cwd`` (both spellings)."""
    hits: set[str] = set()
    for s in spellings(path, cwd):
        hits |= classify(s)
    return hits


# -- globs ------------------------------------------------------------------------------
GLOB_CHARS = frozenset("*?[")
_PROTECTED_LITERALS = (*SHADOW_FILES, *PASSWD_FILES)
_MAX_EXPANSION = 200


def has_glob(text: str) -> bool:
    return any(c in GLOB_CHARS for c in text)


def classify_glob(pattern: str, cwd: str | Path, *, expand: bool = True) -> set[str]:
    """Preset path rules a shell glob could touch: matched, and (``expand``) expanded on disk."""
    hits: set[str] = set()
    absolute = lexical(pattern, cwd)
    for protected in _PROTECTED_LITERALS:
        if fnmatch.fnmatchcase(protected, absolute):
            hits |= classify(protected)
    parts = absolute.split("/")
    if any(_component_matches(part, ".ssh") for part in parts):
        hits.add("R8")
    if parts and _component_matches(parts[-1], ".env"):
        hits.add("R9")
    # What it expands to right now: symlinks to a protected file count too.
    for found in _expand(absolute) if expand else ():
        hits |= classify_path(found, "/")
    return hits


def _component_matches(pattern: str, name: str) -> bool:
    # A shell glob does not match a leading dot unless the pattern spells it.
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatch.fnmatchcase(name, pattern)


def _expand(pattern: str) -> Iterable[str]:
    import glob as globmod

    try:
        it = globmod.iglob(pattern, recursive=False)
        for n, found in enumerate(it):
            if n >= _MAX_EXPANSION:
                break
            yield found
    except (OSError, ValueError, RecursionError):
        return


def glob_to_regex(pattern: str) -> str:
    """A path glob (``**`` any depth, ``*`` one component, ``?``, ``[...]``) as a regex."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                i += 2
                if i < n and pattern[i] == "/":
                    out.append("(?:.*/)?")
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pattern.find("]", i + 2)
            if j == -1:
                out.append(r"\[")
            else:
                body = pattern[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        else:
            out.append(_escape(c))
        i += 1
    return "".join(out)


def _escape(c: str) -> str:
    import re

    return re.escape(c)
