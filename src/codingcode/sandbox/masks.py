"""What every command's sandbox hides unless its approval named it (issue 11, part 1).

The one list: the secret classes of :mod:`codingcode.sandbox.secrets` (``default_masks``;
``DEFAULT_MASKS`` is their static part). Settings add to it (``sandbox.denyRead``), and so do
the user's deny rules on paths (the front end turns them into patterns; the sandbox knows
no rules). Each pattern is resolved to existing paths when a command starts:

- ``~/...`` under each home of the command (its ``$HOME`` and the account's);
- ``/...`` an absolute path or glob (``/etc/*shadow*``); ``**`` is only followed inside the
  project;
- a ``scan="root-only"`` spec (``/etc``): the entries under it "other" cannot read, found
  by :class:`codingcode.sandbox.secrets.RootOnlyScan`;
- anything else, and absolute patterns inside the project, by one bounded walk of the
  project (``**/.env`` matches in every sub-directory).

The walk skips ``.git``, ``node_modules``, virtual environments and caches, and stops after
:data:`MAX_SCAN_ENTRIES` entries (the files it did not reach are not masked, and the
result says so). It is incremental: a directory whose modification time did not change
is not listed again, so a command's start pays a ``stat`` per directory, not a walk.
A file created *during* a command (or after the walk stopped) is not masked by mounts.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import glob
import os
import pwd
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codingcode.sandbox.etc_scan import RootOnlyScan

#: Entries the project walk looks at before it stops (a huge tree must not slow every
#: command down); past it, files are not masked and ``notes`` says so.
MAX_SCAN_ENTRIES = 20_000
#: Directories the walk never enters: tool caches and installed packages, not secrets.
SKIP_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "site-packages",
    }
)
#: ``.env`` templates that hold no secrets and stay readable (documented in docs/sandbox.md).
ENV_TEMPLATES = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist"})
#: At most this many matches of one absolute glob outside the project are masked.
MAX_GLOB_MATCHES = 1_000
#: At most this many paths the project walk masks for one command (each is a mount; the
#: command line of bwrap must stay within the kernel's argument limit).
MAX_WALK_MASKS = 2_000


@dataclass(frozen=True)
class MaskSpec:
    """One pattern to mask, where it came from, and (for defaults) what it protects."""

    pattern: str
    origin: str = "default"
    what: str = ""
    #: Only files match (``.env`` as a directory is usually a virtual environment).
    files_only: bool = False
    #: File names this pattern never masks.
    keep: frozenset[str] = frozenset()
    #: False: no approval exposes it (a user's deny rule: the rules refuse such a call).
    exposable: bool = True
    #: The secret class it belongs to (``codingcode.sandbox.secrets``); "" for the user's.
    secret_class: str = ""
    #: "root-only": the pattern is a directory; what "other" cannot read under it is masked.
    scan: str = ""

    def how_to_allow(self, path: str) -> str:
        """For a command that failed on this mask: what hid it and how to let it through."""
        why = f"{self.what} ({self.origin})" if self.what else self.origin
        if not self.exposable:
            return (
                f"{path} is masked by the sandbox: {why}. No approval shows it; remove the "
                "deny rule to allow it."
            )
        text = (
            f"{path} is masked by the sandbox: {why}. To let one command see it, name it "
            "literally in that command (e.g. `cat PATH`, not a glob or a variable) and approve "
            "the call: that call alone sees exactly the paths it named, read-only unless it "
            "writes them."
        )
        if self.origin.startswith("sandbox."):
            text += f" Or remove it from {self.origin}."
        return text


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A ``/``-separated glob as a regex: ``**`` spans directories, ``*`` and ``?`` do not,
    ``[...]`` is a class; a trailing ``/**`` also matches the directory itself."""
    return re.compile(glob_pattern(pattern))


def glob_pattern(pattern: str) -> str:
    """The text of :func:`glob_regex` (for a caller that joins several before compiling)."""
    dir_itself = pattern.endswith("/**")
    if dir_itself:
        pattern = pattern[:-3]
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                out.append(re.escape(c))
            else:
                cls = _char_class(pattern[i + 1 : end])
                if cls is None:  # not a valid class: a literal '['
                    out.append(re.escape(c))
                else:
                    out.append(cls)
                    i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out) + ("(?:/.*)?" if dir_itself else "") + r"\Z"


def _char_class(body: str) -> str | None:
    negate = body.startswith("!")
    inner = body[1:] if negate else body
    inner = inner.replace("\\", "\\\\").replace("[", "\\[")
    if inner.startswith("^"):
        inner = "\\" + inner
    cls = "[" + ("^" if negate else "") + inner + "]"
    try:
        re.compile(cls)
    except re.error:
        return None
    return cls


@functools.lru_cache(maxsize=256)
def _name_regex(pattern: str) -> re.Pattern[str]:
    """One file name's glob (as ``glob`` matches it; hidden names included)."""
    return re.compile(fnmatch.translate(pattern))


def has_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


@dataclass
class Resolved:
    """The existing paths to mask now (real paths), each with the spec that masks it."""

    paths: dict[Path, MaskSpec] = field(default_factory=dict)
    #: What could not be masked and why (shown by ``sandbox status`` and in hints).
    notes: list[str] = field(default_factory=list)

    def add(self, path: str | Path, spec: MaskSpec, *, real: bool = False) -> None:
        """``real``: ``path`` is already a real path (no symlink to resolve)."""
        if not real:
            path = Path(os.path.realpath(path))
        elif not isinstance(path, Path):
            path = Path(path)
        self.paths.setdefault(path, spec)


@dataclass
class _Dir:
    mtime_ns: int
    subdirs: list[str]
    matches: list[tuple[Path, int]]  # (real path, index of the walk pattern)
    entries: int


#: Environment variables that move a home store elsewhere: (variable, the home path it
#: replaces). A colon-separated value (``KUBECONFIG``) names several.
RELOCATIONS: tuple[tuple[str, str], ...] = (
    ("XDG_CONFIG_HOME", ".config"),
    ("XDG_DATA_HOME", ".local/share"),
    ("GH_CONFIG_DIR", ".config/gh"),
    ("CLOUDSDK_CONFIG", ".config/gcloud"),
    ("DOCKER_CONFIG", ".docker"),
    ("KUBECONFIG", ".kube"),
    ("AWS_SHARED_CREDENTIALS_FILE", ".aws"),
    ("AWS_CONFIG_FILE", ".aws"),
    ("AZURE_CONFIG_DIR", ".azure"),
    ("GNUPGHOME", ".gnupg"),
    ("PASSWORD_STORE_DIR", ".password-store"),
    ("NPM_CONFIG_USERCONFIG", ".npmrc"),
    ("npm_config_userconfig", ".npmrc"),
    ("NETRC", ".netrc"),
    ("CARGO_HOME", ".cargo"),
    ("VAULT_CONFIG_PATH", ".vault-token"),
)


def relocated(rest: str, env: Mapping[str, str], homes: Sequence[Path]) -> list[str]:
    """Where the environment moved the home store ``~/rest`` (absolute values only; never
    ``/`` or a home itself, which would mask everything)."""
    out: list[str] = []
    spared = {"/", *(str(h) for h in homes)}
    for var, prefix in RELOCATIONS:
        if rest != prefix and not rest.startswith(prefix + "/"):
            continue
        for value in env.get(var, "").split(":"):
            if not value.startswith("/") or os.path.realpath(value) in spared:
                continue
            out.append(value.rstrip("/") + rest[len(prefix) :])
    return out


def relocated_specs(
    specs: Sequence[MaskSpec], env: Mapping[str, str], homes: Sequence[Path]
) -> list[MaskSpec]:
    """The home specs again at the places ``env`` moved their stores to (for approval's
    matcher, which judges paths, not a command's mounts)."""
    from dataclasses import replace

    out: list[MaskSpec] = []
    for spec in specs:
        pattern = spec.pattern.strip()
        if pattern.startswith("~"):
            rest = pattern[1:].lstrip("/")
            out += [replace(spec, pattern=moved) for moved in relocated(rest, env, homes)]
    return out


def _mask_around(
    masked: Path, keep: Sequence[Path], spec: MaskSpec, out: Resolved, limit: int = MAX_WALK_MASKS
) -> None:
    """Masks the entries of ``masked`` (a directory that holds a kept path: the project or a
    writable root) one by one, down the way to each kept path and inside it: the kept paths
    stay visible (a mount over their parent would hide them) while the secret files next to
    them and in them do not (``cd ~/.aws && codingcode`` must not show the credentials)."""
    stack = [masked]
    count = 0
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                names = sorted(e.name for e in it)
        except OSError:
            continue
        for name in names:
            path = directory / name
            if any(k == path or k.is_relative_to(path) for k in keep):
                if os.path.isdir(path) and not os.path.islink(path):
                    stack.append(path)
                continue
            if count >= limit:
                out.notes.append(f"{masked}: only its first {limit} entries masked")
                return
            out.add(path, spec, real=True)
            count += 1
    out.notes.append(
        f"{masked} ({spec.origin}) holds the project or a writable root: its entries are "
        "masked one by one, the way to them stays visible"
    )


class MaskResolver:
    """Resolves a fixed list of specs for one project, remembering its walk between calls."""

    def __init__(
        self,
        specs: Sequence[MaskSpec],
        project: Path,
        *,
        keep_visible: Iterable[Path] = (),
        max_entries: int = MAX_SCAN_ENTRIES,
    ) -> None:
        self.specs = tuple(specs)
        self.project = Path(os.path.realpath(project))
        self.max_entries = max_entries
        #: Never masked (nor any parent of them): the project and the writable roots.
        self.keep_visible = [Path(os.path.realpath(p)) for p in (self.project, *keep_visible)]
        self._walk: list[tuple[re.Pattern[str], MaskSpec]] = []
        self._cache: dict[str, _Dir] = {}
        self._home_specs: list[MaskSpec] = []
        self._absolute: list[tuple[str, MaskSpec]] = []
        self._scans: list[tuple[RootOnlyScan, MaskSpec]] = []
        self._listings: dict[str, tuple[int, list[str]]] = {}
        prefix = str(self.project).rstrip("/") + "/"
        for spec in self.specs:
            pattern = spec.pattern.strip()
            if spec.scan == "root-only":
                from codingcode.sandbox.etc_scan import RootOnlyScan

                self._scans.append((RootOnlyScan(pattern), spec))
            elif pattern.startswith("~"):
                self._home_specs.append(spec)
            elif pattern.startswith("**"):
                self._walk.append((glob_regex(pattern), spec))
            elif pattern.startswith("/"):
                if pattern.startswith(prefix) and has_glob(pattern):
                    self._walk.append((glob_regex(pattern[len(prefix) :]), spec))
                else:
                    self._absolute.append((pattern, spec))
            else:
                relative = pattern.removeprefix("./")
                if has_glob(relative):
                    self._walk.append((glob_regex(relative), spec))
                else:
                    self._absolute.append((prefix + relative, spec))

    def resolve(self, homes: Sequence[Path], env: Mapping[str, str] | None = None) -> Resolved:
        """``env``: the command's environment, for the stores it moves out of the home
        (``XDG_CONFIG_HOME``, ``KUBECONFIG``, ``GNUPGHOME``, ...: :data:`RELOCATIONS`)."""
        out = Resolved()
        for spec in self._home_specs:
            rest = spec.pattern.strip()[1:].lstrip("/")
            for home in homes:
                self._absolute_pattern(str(home).rstrip("/") + "/" + rest, spec, out)
            for moved in relocated(rest, env or {}, homes):
                self._absolute_pattern(moved, spec, out)
        for pattern, spec in self._absolute:
            self._absolute_pattern(pattern, spec, out)
        for scan, spec in self._scans:
            for found in scan.paths():
                out.add(found, spec, real=True)
            out.notes.extend(scan.notes)
        if self._walk:
            self._scan(out)
        keep = [str(k) for k in self.keep_visible]
        for path in list(out.paths):
            text = str(path).rstrip("/") + "/"
            if any((k.rstrip("/") + "/").startswith(text) for k in keep):
                spec = out.paths.pop(path)
                # The project (or a writable root) lies in the masked directory: it stays
                # visible, and everything of the mask around and inside it is masked.
                _mask_around(path, [Path(k) for k in keep], spec, out)
        return out

    def _absolute_pattern(self, pattern: str, spec: MaskSpec, out: Resolved) -> None:
        if pattern.endswith("/**") and not has_glob(pattern[:-3]):
            pattern = pattern[:-3]  # `dir/**`: the directory and all beneath it
        if not has_glob(pattern):
            if os.path.lexists(pattern):
                out.add(pattern, spec)
            return
        if "**" in pattern:
            out.notes.append(
                f"{pattern} ({spec.origin}): '**' is only followed inside the project; "
                "outside it this pattern masks nothing"
            )
            return
        directory, name = os.path.split(pattern)
        if not has_glob(directory):
            # One listing of the directory serves every pattern in it (/etc/*shadow*,
            # /etc/sudoers*, /etc/credstore*, ...), kept while its mtime is unchanged.
            matches: Iterable[str] = (
                os.path.join(directory, n) for n in self._names(directory, name)
            )
        else:
            matches = glob.iglob(pattern, include_hidden=True)
        for count, match in enumerate(matches):
            if count >= MAX_GLOB_MATCHES:
                out.notes.append(f"{pattern}: only its first {MAX_GLOB_MATCHES} matches masked")
                break
            if spec.files_only and os.path.isdir(match):
                continue
            out.add(match, spec)

    def _names(self, directory: str, pattern: str) -> list[str]:
        try:
            mtime = os.stat(directory).st_mtime_ns
        except OSError:
            return []
        cached = self._listings.get(directory)
        if cached is None or cached[0] != mtime:
            try:
                names = os.listdir(directory)
            except OSError:
                names = []
            cached = self._listings[directory] = (mtime, names)
        regex = _name_regex(pattern)
        return [n for n in cached[1] if regex.match(n)]

    def _scan(self, out: Resolved) -> None:
        """The bounded, incremental walk of the project for the walk patterns."""
        root = str(self.project)
        seen = masked = 0
        stack = [root]
        fresh: dict[str, _Dir] = {}
        while stack:
            directory = stack.pop()
            try:
                mtime = os.stat(directory).st_mtime_ns
            except OSError:
                continue
            cached = self._cache.get(directory)
            if cached is None or cached.mtime_ns != mtime:
                cached = self._list(directory, mtime)
            fresh[directory] = cached
            seen += cached.entries
            for path, index in cached.matches:
                if masked >= MAX_WALK_MASKS:
                    out.notes.append(
                        f"the project walk found more than {MAX_WALK_MASKS} paths to mask: "
                        "the ones past that are not masked"
                    )
                    self._cache = {**self._cache, **fresh}
                    return
                out.add(path, self._walk[index][1], real=True)
                masked += 1
            if seen > self.max_entries:
                out.notes.append(
                    f"the project has more than {self.max_entries} entries: files past the "
                    "first ones walked are not masked (.env and denyRead patterns)"
                )
                break
            stack.extend(reversed(cached.subdirs))
        self._cache = fresh

    def _list(self, directory: str, mtime: int) -> _Dir:
        subdirs: list[str] = []
        matches: list[tuple[Path, int]] = []
        count = 0
        root = str(self.project)
        real_dir = os.path.realpath(directory) == directory
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return _Dir(mtime, [], [], 0)
        for entry in entries:
            count += 1
            rel = os.path.relpath(entry.path, root)
            is_dir = False
            with contextlib.suppress(OSError):
                is_dir = entry.is_dir(follow_symlinks=False)
            matched = False
            for index, (regex, spec) in enumerate(self._walk):
                if entry.name in spec.keep or (spec.files_only and is_dir):
                    continue
                if regex.match(rel):
                    # Resolved once, when the directory is listed (a link is masked where
                    # it leads).
                    real = entry.path if real_dir else os.path.realpath(entry.path)
                    if entry.is_symlink():
                        real = os.path.realpath(entry.path)
                    matches.append((Path(real), index))
                    matched = True
                    break
            if is_dir and not matched and entry.name not in SKIP_DIRS:
                subdirs.append(entry.path)
        return _Dir(mtime, subdirs, matches, count)


# -- the file tools: the same paths refused (issue 11) ------------------------------------
class ReadGuard:
    """``sandbox.denyRead`` (and ``masked_paths``, and the user's deny rules on paths) for
    the file tools: read_file, edit_file, search_code and search_files refuse or leave out
    exactly the paths a command's sandbox would mask for these patterns. The built-in
    defaults (.env, ~/.ssh, ...) are not here: for the file tools the preset rules R6-R9
    ask about those, and an approved call may read them.

    A path is matched as written (made absolute) and with its symlinks resolved; a pattern
    naming a directory covers everything beneath it."""

    def __init__(self, specs: Sequence[MaskSpec], project: Path, homes: Sequence[Path]) -> None:
        self.specs = tuple(specs)
        self.project = Path(os.path.realpath(project))
        roots = [self.project]
        if Path(project).absolute() != self.project:
            roots.append(Path(project).absolute())
        #: Each pattern's regex, as text: compiled on the first path that matches one of
        #: them (see :attr:`_compiled`); most guards never see one.
        self.patterns: list[tuple[str, MaskSpec]] = []
        for spec in self.specs:
            pattern = spec.pattern.strip()
            if not pattern:
                continue
            if pattern.startswith("~"):
                rest = pattern[1:].lstrip("/")
                bases = [str(h).rstrip("/") + "/" + rest for h in homes]
            elif pattern.startswith("/"):
                bases = [pattern]
            else:
                rel = pattern.removeprefix("./")
                bases = [str(r).rstrip("/") + "/" + rel for r in roots]
            for base in dict.fromkeys(bases):
                body = glob_pattern(base).removesuffix(r"\Z")
                self.patterns.append((body + r"(?:/.*)?\Z", spec))

    @functools.cached_property
    def _compiled(self) -> list[tuple[re.Pattern[str], MaskSpec]]:
        return [(re.compile(text), spec) for text, spec in self.patterns]

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def denied(self, path: str | Path) -> MaskSpec | None:
        """The pattern that hides ``path`` (absolute), or None."""
        if not self.patterns:
            return None
        text = os.path.normpath(os.path.abspath(path))
        spellings = [text]
        real = os.path.realpath(text)
        if real != text:
            spellings.append(real)
        for spelling in spellings:
            for regex, spec in self._compiled:
                if regex.match(spelling):
                    return spec
        return None

    @staticmethod
    def refusal(shown: str, spec: MaskSpec) -> str:
        """The error a file tool gives: what hid the path and how to allow it."""
        where = spec.origin
        if where.startswith("sandbox."):
            fix = f"remove {spec.pattern!r} from sandbox.denyRead to let tools read it"
        elif where.startswith("deny rule"):
            fix = "remove the deny rule to let tools read it"
        else:
            fix = "remove it from that setting to let tools read it"
        return (
            f"{shown} is not readable: {where} masks it (pattern {spec.pattern!r}); "
            f"the file tools and every command are refused it. {fix[0].upper()}{fix[1:]}."
        )


_GUARDS: dict[tuple[tuple[MaskSpec, ...], str, tuple[Path, ...]], ReadGuard] = {}


def read_guard(specs: Sequence[MaskSpec], project: Path, homes: Sequence[Path]) -> ReadGuard:
    """One guard per (patterns, project, homes), compiled once."""
    key = (tuple(specs), str(project), tuple(homes))
    guard = _GUARDS.get(key)
    if guard is None:
        if len(_GUARDS) > 64:
            _GUARDS.clear()
        guard = _GUARDS[key] = ReadGuard(specs, project, homes)
    return guard


def guard_for(launcher: object) -> ReadGuard | None:
    """The read guard of the sandbox a tool call runs with (its launcher), or None when
    the call has no sandbox service or nothing to guard."""
    policy = getattr(launcher, "policy", None)
    project = getattr(policy, "project", None)
    if policy is None or not isinstance(project, Path):
        return None
    specs: list[MaskSpec] = [
        *(MaskSpec(str(p), "sandbox.masked_paths") for p in getattr(policy, "masked_paths", ())),
        *getattr(policy, "deny_read", ()),
    ]
    if not specs:
        return None
    return read_guard(specs, project, home_dirs(os.environ))


def home_dirs(env: Mapping[str, str]) -> list[Path]:
    """The command's ``$HOME`` and the account's home (they differ in tests and sudo)."""
    homes = []
    if env.get("HOME"):
        homes.append(Path(env["HOME"]))
    with contextlib.suppress(KeyError):
        homes.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    return list(dict.fromkeys(Path(os.path.realpath(h)) for h in homes))


def check_readable(path: Path, shown: str, launcher: object) -> None:
    """Raise :class:`DeniedError` if ``path`` is masked for the tools (see :class:`ReadGuard`)."""
    guard = guard_for(launcher)
    spec = guard.denied(path) if guard is not None else None
    if spec is not None:
        from codingcode.errors import DeniedError

        raise DeniedError(ReadGuard.refusal(shown, spec))
