"""Read-only commands (issue 13): ``ls``, ``git status``, ``grep -rn x src`` run unasked.

:func:`classify` says whether a whole ``execute_command`` line only reads inside the project
(or the usual system locations) and prints. It stands on the shell analysis's public
output (:func:`codingcode.shell.analyze`: every simple command with its program,
arguments, cwd and redirects, and an opaque flag) and on a list kept as data
(``shell/programs/readonly.toml``, extensible in settings). Anything it cannot prove — an opaque
or dynamic part, a program not on the list, an option that writes or runs code, an output
redirection, a path outside the project or a masked one, a variable assignment, a git
repository whose config can run programs — is not read-only, and the call is asked about
as before. A read-only command still runs in the sandbox.
"""

from __future__ import annotations

import glob as globlib
import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from codingcode import shell
from codingcode.paths import spellings

#: Directories any read-only command may read besides the project.
SYSTEM_READ_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt")
#: Never read unasked, wherever they are (the sandbox masks them too).
MASKED_NAMES = frozenset(
    {
        ".ssh",
        ".gnupg",
        ".aws",
        ".azure",
        ".kube",
        ".docker",
        ".netrc",
        ".pgpass",
        ".npmrc",
        ".pypirc",
        ".git-credentials",
        "id_rsa",
        "id_ed25519",
        "id_ecdsa",
        "id_dsa",
    }
)
MASKED_PREFIXES = (
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
    "/etc/ssl/private",
    "/proc",
    "/sys",
)
#: Output redirections that write nowhere.
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
#: Keys of a repository's git config that make read commands run programs.
_GIT_CONFIG_RISKS = (
    "fsmonitor",
    "pager",
    "external",
    "textconv",
    "command",
    "sshcommand",
    "include",
    "clean",
    "smudge",
    "process",
    "askpass",
)
MAX_GLOB_MATCHES = 2000
#: More words than this in one line: not checked one by one, asked about (a bounded cost).
MAX_WORDS = 1000


@dataclass(frozen=True)
class ProgramSpec:
    paths: bool = True
    pattern_first: bool = False
    deny: tuple[str, ...] = ()
    positional: bool = True
    subcommands: tuple[str, ...] = ()
    global_allowed: tuple[str, ...] = ()
    sub: Mapping[str, ProgramSpec] = field(default_factory=dict)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ProgramSpec:
        sub = {k: cls.from_data(v) for k, v in dict(data.get("sub", {})).items()}
        return cls(
            paths=bool(data.get("paths", True)),
            pattern_first=bool(data.get("pattern_first", False)),
            deny=tuple(str(x) for x in data.get("deny", ())),
            positional=bool(data.get("positional", True)),
            subcommands=tuple(str(x) for x in data.get("subcommands", ())),
            global_allowed=tuple(str(x) for x in data.get("global_allowed", ())),
            sub=sub,
        )


@lru_cache(maxsize=1)
def builtin_programs() -> dict[str, ProgramSpec]:
    import tomllib
    from importlib import resources

    text = resources.files("codingcode.shell.programs").joinpath("readonly.toml").read_text()
    data = tomllib.loads(text)
    return {name: ProgramSpec.from_data(spec) for name, spec in data["programs"].items()}


def programs_with(
    extra: Mapping[str, Any] | None, *, builtins: bool = True
) -> dict[str, ProgramSpec]:
    """The built-in list, extended by settings (``approvals.readOnlyCommands``);
    ``builtins=False``: the settings' entries alone."""
    merged = dict(builtin_programs()) if builtins else {}
    for name, spec in (extra or {}).items():
        if isinstance(name, str) and isinstance(spec, Mapping):
            merged[name] = ProgramSpec.from_data(spec)
    return merged


@dataclass(frozen=True)
class Verdict:
    read_only: bool
    #: Why not (for ``check`` and tests), or what it is.
    reason: str


def _no(reason: str) -> Verdict:
    return Verdict(False, reason)


def classify(
    command: str,
    cwd: str,
    project: Path,
    programs: Mapping[str, ProgramSpec] | None = None,
) -> Verdict:
    """Whether the whole command line only reads (inside the project or system locations)."""
    programs = programs if programs is not None else builtin_programs()
    analysis = shell.analyze(command, cwd)
    if analysis.parse_error or analysis.opaque:
        return _no("the command cannot be fully analysed")
    if analysis.risky_assignments or analysis.downloads_into_shell or analysis.program_globs:
        return _no("the command changes how programs run")
    if not analysis.commands:
        return _no("no command")
    if sum(len(c.argv) for c in analysis.commands) > MAX_WORDS:
        return _no(f"more than {MAX_WORDS} words to check")
    roots = _roots(project)
    for c in analysis.commands:
        why = _check_command(c, programs, roots, project)
        if why is not None:
            return _no(why)
    return Verdict(True, "only reads and prints (read-only commands)")


def command_read_only(
    c: shell.Command, project: Path, programs: Mapping[str, ProgramSpec] | None = None
) -> bool:
    """Whether one simple command of an analysis only reads (its redirects included)."""
    programs = programs if programs is not None else builtin_programs()
    return _check_command(c, programs, _roots(project), project) is None


def _roots(project: Path) -> tuple[str, ...]:
    real = os.path.realpath(project)
    return (real, *SYSTEM_READ_ROOTS)


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _masked(path: str) -> bool:
    if any(path == p or path.startswith(p + "/") or path.startswith(p) for p in MASKED_PREFIXES):
        return True
    parts = path.split("/")
    return any(part in MASKED_NAMES or part.startswith(".env") for part in parts)


def _path_ok(text: str, cwd: str, roots: tuple[str, ...]) -> bool:
    # (lexical,) or (lexical, resolved): within one decision each path is resolved once,
    # and the secrets check that follows reads the same resolution
    try:
        forms = spellings(text, cwd)
    except OSError:  # a link it may not follow (/proc/1/root): not known to only read
        return False
    return all(_inside(p, roots) and not _masked(p) for p in forms)


def _glob_ok(word: shell.Word, cwd: str, roots: tuple[str, ...]) -> bool:
    pattern = word.pattern or word.text
    absolute = pattern if pattern.startswith("/") else posixpath.join(cwd, pattern)
    head = absolute.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0]
    if not _path_ok(posixpath.dirname(head) or "/", cwd, roots):
        return False
    for n, match in enumerate(globlib.iglob(absolute)):
        if n >= MAX_GLOB_MATCHES or not _path_ok(match, cwd, roots):
            return False
    return True


def _denied_option(text: str, deny: tuple[str, ...]) -> str | None:
    for opt in deny:
        if text == opt or (opt.startswith("--") and text.startswith(opt + "=")):
            return opt
        if (
            len(opt) == 2
            and opt.startswith("-")
            and text.startswith("-")
            and not text.startswith("--")
            and opt[1] in text[1:]
        ):
            return opt
        if opt.startswith("-") and not opt.startswith("--") and len(opt) > 2 and text == opt:
            return opt
    return None


def _check_command(
    c: shell.Command,
    programs: Mapping[str, ProgramSpec],
    roots: tuple[str, ...],
    project: Path,
) -> str | None:
    prog = c.program
    if prog is None or c.cwd is None:
        return "a part of the command is only known when it runs"
    spec = programs.get(prog)
    if spec is None or c.argv[0].glob:
        return f"{prog} is not on the read-only list"
    if "/" in c.argv[0].text and not _inside(c.argv[0].text, SYSTEM_READ_ROOTS):
        return f"{c.argv[0].text} is not a system program"
    if c.assigns:
        return "the command sets variables"
    try:
        where = os.path.realpath(c.cwd)
    except OSError:  # a link it may not follow (/proc/1/root)
        return f"{prog} runs where the analysis cannot look"
    if not _inside(where, roots):
        return f"{prog} runs outside the project"
    for r in c.redirects:
        if r.op in _WRITE_OPS and r.target is not None:
            if r.target.dynamic or r.target.text not in HARMLESS_TARGETS:
                return "the command writes to a file"
        elif (
            r.target is not None
            and r.op == "<"
            and (r.target.dynamic or not _path_ok(r.target.text, c.cwd, roots))
        ):
            return "the command reads a file outside the project or a masked one"
    args = list(c.argv[1:])
    if spec.subcommands:
        return _check_subcommand(prog, spec, args, c.cwd, roots, project)
    return _check_args(prog, spec, args, c.cwd, roots)


def _check_args(
    prog: str, spec: ProgramSpec, args: list[shell.Word], cwd: str, roots: tuple[str, ...]
) -> str | None:
    pattern_pending = spec.pattern_first
    after_dashdash = False
    for w in args:
        t = w.text
        if w.subst and spec.paths:
            return f"{prog} gets an argument computed when it runs"
        if not after_dashdash and t == "--":
            after_dashdash = True
            continue
        if not after_dashdash and t.startswith("-") and len(t) > 1:
            if w.dynamic:
                return f"{prog} gets an option computed when it runs"
            opt = _denied_option(t, spec.deny)
            if opt is not None:
                return f"{prog} {opt} writes, runs code or pages"
            if t in ("-e", "-f", "--regexp", "--file") or t.startswith(("--regexp=", "--file=")):
                pattern_pending = False
            if "=" in t and spec.paths:
                value = t.split("=", 1)[1]
                if "/" in value and not w.dynamic and not _path_ok(value, cwd, roots):
                    return f"{prog} reads outside the project"
            continue
        if pattern_pending:
            pattern_pending = False
            continue
        if not spec.positional:
            return f"{prog} with an argument changes something"
        if not spec.paths:
            continue
        if w.dynamic:
            return f"{prog} gets a path only known when it runs"
        ok = _glob_ok(w, cwd, roots) if w.glob else _path_ok(t, cwd, roots)
        if not ok:
            return f"{prog} reads outside the project or a masked path"
    return None


def _check_subcommand(
    prog: str,
    spec: ProgramSpec,
    args: list[shell.Word],
    cwd: str,
    roots: tuple[str, ...],
    project: Path,
) -> str | None:
    i = 0
    repo_dir = cwd
    while i < len(args) and args[i].text.startswith("-"):
        t = args[i].text
        if args[i].dynamic or t not in spec.global_allowed:
            return f"{prog} {t} is not allowed in a read-only command"
        if t == "-C":
            if i + 1 >= len(args) or args[i + 1].dynamic:
                return f"{prog} -C needs a known directory"
            target = args[i + 1].text
            if not _path_ok(target, cwd, roots):
                return f"{prog} -C leaves the project"
            repo_dir = posixpath.normpath(posixpath.join(cwd, target))
            i += 2
            continue
        i += 1
    if i >= len(args) or args[i].dynamic:
        return f"{prog} without a known sub-command"
    name = args[i].text
    if name not in spec.subcommands:
        return f"{prog} {name} is not a read-only sub-command"
    sub = spec.sub.get(name, ProgramSpec())
    merged = ProgramSpec(
        paths=False,  # revisions and paths mix; git refuses paths outside the repository
        deny=spec.deny + sub.deny,
        positional=sub.positional,
    )
    why = _check_args(f"{prog} {name}", merged, args[i + 1 :], repo_dir, roots)
    if why is not None:
        return why
    if prog == "git":
        return _git_config_risk(repo_dir, project)
    return None


def _git_config_risk(start: str, project: Path) -> str | None:
    """A repository config that makes git run programs (fsmonitor, pager, textconv, ...)."""
    d = Path(start)
    stop = Path(os.path.realpath(project)).parent
    while True:
        dot = d / ".git"
        if dot.exists() or dot.is_symlink():
            return _git_dir_risk(dot)
        if d == stop or d.parent == d:
            return None
        d = d.parent


def _git_dir_risk(dot: Path) -> str | None:
    configs: list[Path] = []
    try:
        if dot.is_file():
            text = dot.read_text(errors="replace")[:4096]
            if not text.startswith("gitdir:"):
                return "the repository's .git file is not understood"
            gitdir = (dot.parent / text.split(":", 1)[1].strip()).resolve()
            configs.append(gitdir / "config")
            common = gitdir / "commondir"
            if common.is_file():
                configs.append((gitdir / common.read_text().strip()).resolve() / "config")
        else:
            configs.append(dot / "config")
        for cfg in configs:
            if not cfg.exists():
                continue
            if not cfg.is_file() or cfg.stat().st_size > 1_000_000:
                return "the repository's git config is not a plain file"
            body = cfg.read_text(errors="replace").lower()
            for key in _GIT_CONFIG_RISKS:
                if key in body:
                    return f"the repository's git config sets {key!r}, which can run programs"
    except OSError:
        return "the repository's git config cannot be read"
    return None
