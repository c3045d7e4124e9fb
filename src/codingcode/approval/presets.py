"""The nine preset rules (SPEC R1–R9): always loaded, never removed, never overridden.

Each means what its text says, against every tool (DESIGN "Rules must understand what they
match"): commands are analysed by :mod:`codingcode.shell`, paths normalised by
:mod:`codingcode.paths`. Where a careful user would expect a neighbour to be covered
too, it is (reboot/poweroff/halt next to shutdown, su/doas/pkexec next to sudo, setgid next
to setuid, /etc/gshadow next to /etc/shadow); docs/approval.md lists them.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple
from urllib.parse import urlsplit

from codingcode import shell
from codingcode.approval.roles import call_roles, role_by_name
from codingcode.paths import (
    classify,
    classify_glob,
    classify_path,
    has_glob,
    is_env_name,
    lexical,
)
from codingcode.paths import spellings as classify_spellings
from codingcode.shell.cache import BoundedLRU
from codingcode.shell.programs.system import (  # program knowledge lives with the programs
    METADATA_ONLY,
    SHUTDOWN_TARGETS,
    SYSTEMCTL_SHUTDOWN,
)
from codingcode.shell.programs.system import NAMES_ONLY as NAMES_ONLY  # (capabilities)
from codingcode.shell.programs.system import PRIVILEGE as PRIVILEGE
from codingcode.shell.programs.system import SHUTDOWN as SHUTDOWN
from codingcode.tools.definition import ArgRole


@dataclass(frozen=True)
class PresetRule:
    id: str
    text: str
    action: Literal["deny", "ask"]
    meaning: str
    neighbours: str = ""


PRESET_RULES: tuple[PresetRule, ...] = (
    PresetRule(
        "R1", "rm -rf /", "deny", "no recursive deletion of the root directory", "find / -delete"
    ),
    PresetRule(
        "R2",
        "sudo",
        "deny",
        "no privilege escalation",
        "su, doas, pkexec, run0, sudoedit, runuser, calife, systemd-run (without --user)",
    ),
    PresetRule(
        "R3",
        "curl | sh",
        "deny",
        "no piping a remote script into a shell",
        "wget, aria2c, httpie, nc/socat, /dev/tcp; into any shell or interpreter "
        "(python, perl, ruby, node, ...), by pipe, <(...), $(...), here-string, "
        "or a downloaded file run later in the same command",
    ),
    PresetRule(
        "R4",
        "chmod u+s",
        "deny",
        "no setting the SUID bit",
        "setgid (g+s, 2xxx); install -m / mkdir -m with those bits",
    ),
    PresetRule(
        "R5",
        "shutdown",
        "deny",
        "no shutting the system down",
        "reboot, poweroff, halt, systemctl poweroff/reboot/halt/kexec, init 0/6, "
        "telinit 0/6, /proc/sysrq-trigger",
    ),
    PresetRule(
        "R6",
        "/etc/shadow",
        "deny",
        "no reading the shadow password file",
        "/etc/gshadow and the backups /etc/shadow-, /etc/gshadow-",
    ),
    PresetRule(
        "R7",
        "/etc/passwd",
        "deny",
        "no reading the system password file",
        "its backup /etc/passwd-",
    ),
    PresetRule("R8", ".ssh", "ask", "access to an SSH directory needs confirmation"),
    PresetRule(
        "R9",
        ".env",
        "ask",
        "access to environment files needs confirmation",
        ".env.* (but not .env.example/.sample/.template/.dist)",
    ),
)
BY_ID = {r.id: r for r in PRESET_RULES}
#: Not one of the nine, but just as fixed: a command the analysis cannot see through.
OPAQUE_ID = "opaque"

_PROTECTED_TEXT = re.compile(r"/etc/+(g?shadow|passwd)-?\b")
_SSH_TEXT = re.compile(r"(^|[\s'\"/=(,])\.ssh(/|\b)")
_ENV_TEXT = re.compile(r"(^|[\s'\"/=(,])\.env(\.[\w.-]+)?(?![\w.-])")

Finding = tuple[str, str]  # (rule id, why)


@dataclass(frozen=True)
class PresetVerdict:
    action: Literal["deny", "ask", "continue"]
    rule: str | None
    reason: str


def check(
    tool: str,
    args: dict[str, Any],
    project: Path,
    cwd: Path,
    roles: Mapping[str, ArgRole] | None = None,
) -> PresetVerdict:
    """The preset rules' verdict on one call: deny beats ask beats continue.

    ``roles`` are the call's argument roles (declared by its tool, or inferred: see
    :mod:`codingcode.approval.roles`); the rules read them, never the tool's name.
    """
    if roles is None:
        roles = call_roles({}, args, tool)
    findings = list(_findings(args, project, cwd, roles))
    if not findings:
        return _NO_PRESET
    for want in ("deny", "ask"):
        for rule_id, why in findings:
            action = BY_ID[rule_id].action if rule_id in BY_ID else "ask"
            if action == want:
                label = (
                    f"{rule_id} ({BY_ID[rule_id].text})" if rule_id in BY_ID else "shell analysis"
                )
                return PresetVerdict(want, rule_id, f"preset rule {label}: {why}")
    return _NO_PRESET


_NO_PRESET = PresetVerdict("continue", None, "no preset rule applies")


PATH_KEYS = frozenset(
    {
        "path",
        "file_path",
        "filepath",
        "filename",
        "file",
        "dir",
        "directory",
        "cwd",
        "root",
        "source",
        "destination",
        "target",
        "src",
        "dst",
        "paths",
        "files",
    }
)
COMMAND_KEYS = frozenset({"command", "cmd", "script", "shell_command"})
#: The roles whose values the preset rules look into (the others are data).
_SCANNED_ROLES = frozenset({"command", "cwd", "path", "directory", "glob", "url"})


def _findings(
    args: dict[str, Any], project: Path, cwd: Path, roles: Mapping[str, ArgRole]
) -> Iterator[Finding]:
    proj = str(project)
    role_values = roles.values()
    has_command = "command" in role_values
    # a content-searching tool (it has a text argument) reads the files its glob matches;
    # a name-listing one only walks directories
    reads_matches = "text" in role_values
    unroled: dict[str, Any] = {}
    for name, value in args.items():
        role = roles.get(name)
        if role is None:
            unroled[name] = value
            continue
        if role not in _SCANNED_ROLES:
            continue  # content and text are data, not places or programs
        values = value if isinstance(value, list) else (value,)
        for v in values:
            if not isinstance(v, str):
                continue
            if role == "command":
                cmd_cwd = str(cwd)
                yield from command_findings(v, lexical(cmd_cwd, proj))
            elif role == "cwd":
                yield from _path_findings(v, proj, "the command runs in")
            elif role == "path":
                yield from _path_findings(v, proj, f"{name} names")
            elif role == "directory":
                yield from (
                    f for f in _path_findings(v, proj, f"{name} walks") if f[0] in ("R8", "R9")
                )
            elif role == "glob":
                yield from _glob_findings(
                    v, proj, f"{name} pattern", only=None if reads_matches else ("R8",)
                )
            elif role == "url" and v.lower().startswith("file:"):
                yield from _path_findings(urlsplit(v).path or "/", proj, f"{name} of")
            # content and text are data, not places or programs
    if has_command and "cwd" not in role_values:
        yield from _path_findings(str(cwd), proj, "the command runs in")
    if unroled and not roles:
        # A tool that declares nothing (an MCP or custom tool): the paths and commands
        # its arguments carry, by their names and by how they look.
        yield from _generic_findings(unroled, proj)
    elif unroled:
        # Declared tools: nested values are still scanned for what looks like a path.
        yield from _generic_findings(unroled, proj, only_looks=True)


def _generic_findings(
    args: Any, proj: str, key: str = "", *, only_looks: bool = False, depth: int = 0
) -> Iterator[Finding]:
    if depth > 32:
        return
    if isinstance(args, dict):
        for k, v in args.items():
            yield from _generic_findings(
                v, proj, str(k).lower(), only_looks=only_looks, depth=depth + 1
            )
    elif isinstance(args, list):
        for v in args:
            yield from _generic_findings(v, proj, key, only_looks=only_looks, depth=depth + 1)
    elif isinstance(args, str):
        role = None if only_looks else role_by_name(key)
        if role == "command" or (not only_looks and key in COMMAND_KEYS):
            yield from command_findings(args, proj)
        elif (
            role in ("path", "cwd")
            or (not only_looks and key in PATH_KEYS)
            or (args.startswith(("/", "~", "./", "../")) and "\n" not in args[:4096])
        ):
            yield from _path_findings(args, proj, f"argument {key or 'value'}")
        elif (role == "url" or key == "url") and args.lower().startswith("file:"):
            yield from _path_findings(urlsplit(args).path or "/", proj, "url")


def _path_findings(path: str, cwd: str, what: str) -> Iterator[Finding]:
    if not path:
        return
    for rule_id in sorted(classify_path(path, cwd)):
        yield rule_id, f"{what} {path}"


def _glob_findings(
    pattern: str, cwd: str, what: str, only: tuple[str, ...] | None = None
) -> Iterator[Finding]:
    parts = [p for p in pattern.split("/") if p]
    hits: set[str] = set()
    if parts:
        last = parts[-1]
        for name, rid in (("shadow", "R6"), ("gshadow", "R6"), ("passwd", "R7")):
            if any(c.isalnum() for c in last) and fnmatch.fnmatchcase(name, last):
                hits.add(rid)
        if any(p.startswith(".") and fnmatch.fnmatchcase(".ssh", p) for p in parts):
            hits.add("R8")
        if last.startswith(".") and fnmatch.fnmatchcase(".env", last):
            hits.add("R9")
    hits |= classify_glob(pattern, cwd) if pattern.startswith(("/", "~")) else set()
    for rule_id in sorted(hits):
        if only is None or rule_id in only:
            yield rule_id, f"{what} {pattern!r}"


# -- commands ---------------------------------------------------------------------------
class _Fresh(NamedTuple):
    """A check of the file system (what a path resolves to, what a glob expands to, whether
    a name is a directory): its findings are worked out afresh on every decision, never
    cached. ``drop``: rule ids left out of what it finds."""

    fn: Callable[..., Iterable[Finding]]
    args: tuple[Any, ...]
    drop: frozenset[str] = frozenset()
    #: For a plain word: the rules its lexical spelling touches, when telling reads no file
    #: (None: classified afresh). Only its symlink-resolved spelling is then looked up.
    lexical_hits: frozenset[str] | None = None


_Step = Finding | _Fresh
_NO_R6_R7 = frozenset({"R6", "R7"})
_NOTHING: frozenset[str] = frozenset()

#: The steps of a command line's findings (``_steps``), keyed by the text, its cwd and the
#: nesting depth: pure text work (as the analysis), so cached, bounded by entries and size.
_STEPS: BoundedLRU[tuple[str, str, int], tuple[_Step, ...]] = BoundedLRU(2048, 400_000)


def command_findings(command: str, cwd: str, _depth: int = 0) -> Iterator[Finding]:
    """What the preset rules find in ``command`` run in ``cwd``, in order.

    The findings that depend only on the text (programs, options, inline code, lexical
    paths) are worked out once per (text, cwd) and cached; every finding that depends on the
    file system (symlinks resolved, globs expanded, directories told apart) is a
    :class:`_Fresh` step, checked again on every call."""
    key = (command, cwd, _depth)
    steps = _STEPS.get(key)
    if steps is None:
        steps = tuple(_steps(command, cwd, _depth))
        _STEPS.put(key, steps, 1 + len(command) // 100 + 4 * len(steps))  # ~400 B a step
    for step in steps:
        if isinstance(step, _Fresh):
            drop = step.drop
            if step.fn is _path_findings:
                # (the most common step, a plain word: _path_findings, without its generator)
                text, where, what = step.args
                hits = _word_hits(text, where, step.lexical_hits) if text else None
                for rule_id in sorted(hits) if hits else ():
                    if rule_id not in drop:
                        yield rule_id, f"{what} {text}"
                continue
            for found in step.fn(*step.args):
                if found[0] not in drop:
                    yield found
        else:
            yield step


def _word_hits(text: str, cwd: str, lexical_hits: frozenset[str] | None) -> set[str]:
    """``classify_path(text, cwd)``, with what its lexical spelling touches known."""
    if lexical_hits is None:
        return classify_path(text, cwd)
    found = classify_spellings(text, cwd)  # (lexical,) or (lexical, resolved): fresh
    if len(found) == 1:
        return set(lexical_hits)
    return classify(found[1]) | lexical_hits


def _lexical_hits(text: str, cwd: str) -> frozenset[str] | None:
    """What the lexical spelling of ``text`` in ``cwd`` touches, if that reads no file
    (classify asks the disk only whether an .env-named path is a directory)."""
    lex = lexical(text, cwd)
    if is_env_name(lex.rpartition("/")[2]):
        return None
    hits = classify(lex)
    return frozenset(hits) if hits else _NOTHING


def _steps(command: str, cwd: str, _depth: int = 0) -> Iterator[_Step]:
    analysis = shell.analyze(command, cwd)
    for why in analysis.downloads_into_shell:
        yield "R3", why
    for c in analysis.commands:
        yield from _command_findings(c, analysis)
    for pattern in analysis.program_globs:
        base = posixpath.basename(pattern)
        for names, rid in ((PRIVILEGE, "R2"), (SHUTDOWN, "R5")):
            for name in names:
                if fnmatch.fnmatchcase(name, base):
                    yield rid, f"the program glob {pattern!r} can expand to {name}"
    for word in analysis.fallback_words:
        base = posixpath.basename(word)
        if base in PRIVILEGE:
            yield "R2", f"{base} appears in a command that could not be parsed"
        elif base in SHUTDOWN:
            yield "R5", f"{base} appears in a command that could not be parsed"
    for why in analysis.opaque:
        yield OPAQUE_ID, why
    if _depth < 2:
        for text, where, prog in analysis.speculative:
            # (what the text would do may depend on the file system: looked at afresh)
            yield _Fresh(_speculative_findings, (text, where or cwd, prog, _depth + 1))


def _speculative_findings(text: str, cwd: str, prog: str, depth: int) -> Iterator[Finding]:
    from codingcode.shell.nested import OPAQUE_STDIN

    for rule_id, why in command_findings(text, cwd, _depth=depth):
        # a preset rule, or a shell started on input the analysis cannot see
        if rule_id != OPAQUE_ID or why.endswith(OPAQUE_STDIN):
            yield OPAQUE_ID, f"{prog} may run {text[:60]!r} as commands ({why})"
            break


_UNIT_STARTS = frozenset(
    {"enable", "start", "restart", "reenable", "try-restart", "reload-or-restart"}
)


def _system_units(c: shell.Command, analysis: shell.Analysis) -> Iterator[Finding]:
    """``systemctl link FILE``, or starting a unit this line wrote: systemd runs the
    unit's commands (``ExecStart=``), as root, where the analysis does not follow."""
    args = c.argv[1:]
    sub = _first_positional(args)
    if sub == "link":
        yield OPAQUE_ID, "systemctl link makes a file a system unit, whose commands run as root"
        return
    if sub not in _UNIT_STARTS or c.cwd is None:
        return
    for w in args:
        if w.text.startswith("-") or w.text == sub:
            continue
        if w.dynamic or "/" in w.text or lexical(w.text, c.cwd) in analysis.written_files:
            yield OPAQUE_ID, f"systemctl {sub} {w.text}: systemd runs that unit's commands as root"
            return


def _command_findings(c: shell.Command, analysis: shell.Analysis) -> Iterator[_Step]:
    prog = c.program
    cwd = c.cwd
    args = c.argv[1:]
    # R2
    if prog in PRIVILEGE:
        yield "R2", f"{prog} runs a command with other privileges"
    elif prog == "systemd-run" and not any(w.text == "--user" for w in args):
        yield "R2", "systemd-run starts a system service, as root unless told otherwise"
    if prog == "systemctl" and not any(w.text == "--user" for w in args):
        yield from _system_units(c, analysis)
    # R5
    if prog in SHUTDOWN:
        yield "R5", f"{prog} stops or restarts the machine"
    elif prog in ("systemctl", "loginctl"):
        sub = _first_positional(args)
        if sub in SYSTEMCTL_SHUTDOWN or any(w.text in SHUTDOWN_TARGETS for w in args):
            yield "R5", f"{prog} {sub or ''} stops or restarts the machine".replace("  ", " ")
    elif prog == "kill" and any(w.text in ("1", "-1") for w in args[-1:]) and len(args) >= 1:
        yield "R5", "kill of process 1 (init) or of every process stops the machine"
    elif prog in ("init", "telinit") and _first_positional(args) in ("0", "6"):
        yield "R5", f"{prog} {_first_positional(args)} stops or restarts the machine"
    # R4
    if prog == "chmod":
        for w in args:
            bit = setid_bits(w.text)
            if bit:
                yield "R4", f"chmod {w.text} sets the {bit} bit{'s' if ' and ' in bit else ''}"
    elif prog in ("install", "mkdir"):
        for i, w in enumerate(args):
            mode = None
            if w.text in ("-m", "--mode") and i + 1 < len(args):
                mode = args[i + 1].text
            elif w.text.startswith("--mode="):
                mode = w.text.split("=", 1)[1]
            elif w.text.startswith("-m") and len(w.text) > 2:
                mode = w.text[2:]
            bit = setid_bits(mode) if mode else None
            if bit:
                yield "R4", f"{prog} -m {mode} sets the {bit} bit"
    # R1
    if prog in ("rm", "find", "rsync"):
        yield from _root_delete(c)
    if prog in FILE_LIST_READERS:
        yield from _stdin_paths(c)
    yield from _maybe_runs(c)
    yield from _paths_inside_arguments(c)
    # R3: a file downloaded earlier in this command line, run now
    if analysis.downloaded_files and c.argv:
        runs: list[shell.Word] = []
        if (
            prog in shell.SHELLS
            or (prog is not None and shell.is_interpreter(prog))
            or prog in shell.SOURCE_BUILTINS
        ):
            runs = [w for w in args if not w.text.startswith("-")][:1]
        runs.append(c.argv[0])
        for w in runs:
            if (
                not w.dynamic
                and cwd is not None
                and lexical(w.text, cwd) in analysis.downloaded_files
            ):
                yield "R3", f"{w.text} was downloaded and is run in the same command"
    # R5, R6–R9 through redirects
    for r in c.redirects:
        if r.target is None:
            continue
        t = r.target
        if t.text.startswith("/proc/sysrq-trigger") and ">" in r.op:
            yield "R5", "writing to /proc/sysrq-trigger can power the machine off"
        if t.text == "/dev/null":
            continue
        yield _Fresh(_word_paths, (t, cwd, f"the redirect {r.op}"))
    # an interpreter reading its script from a here-doc / here-string / echo
    if prog is not None and shell.is_interpreter(prog) and c.stdin is not None and c.stdin.text:
        yield from _code_text_findings(c.stdin.text)
    # R6–R8 through a recursive read of a directory that holds the protected files
    if prog is not None and _reads_recursively(prog, args) and cwd is not None:
        yield _Fresh(_ancestor_findings, (prog, args, cwd))
    # R6–R9 through arguments
    if prog is None and not c.argv:
        return
    checked = list(args)
    if c.argv and ("/" in c.argv[0].text or is_env_name(c.argv[0].text)):
        checked.insert(0, c.argv[0])
    interpreter = prog is not None and shell.is_interpreter(prog)
    code_flags = shell.code_flags(prog) if prog and (prog in shell.SHELLS or interpreter) else ()
    names_only = prog in NAMES_ONLY
    metadata_only = prog in METADATA_ONLY
    what = f"{prog or 'the command'} argument"
    for i, w in enumerate(checked):
        if names_only and w is not c.argv[0]:
            continue
        text = w.text
        if interpreter and i > 0 and checked[i - 1].text in code_flags:
            yield from _code_text_findings(text)
            continue
        if prog in AWK_LIKE and not text.startswith("-"):
            # awk's program is a plain argument, and system() / `| "cmd"` run commands
            yield from _code_text_findings(text)
        drop = _NO_R6_R7 if metadata_only else _NOTHING
        if cwd and text and not w.dynamic and not w.glob:
            # a plain word (most arguments): what _word_paths does, more directly
            yield _Fresh(_path_findings, (text, cwd, what), drop, _lexical_hits(text, cwd))
        else:
            yield _Fresh(_word_paths, (w, cwd, what), drop)
        if w.dynamic:
            continue  # (_embedded_paths has nothing to say of it either)
        # --file=/etc/passwd and dd's if=/etc/passwd style values
        if "=" in text:
            value = text.split("=", 1)[1]
            yield _Fresh(_word_paths, (shell.literal_word(value), cwd, f"{prog} option"))
        if ":" in text or "@" in text:  # a file: URL, an @file
            yield from _embedded_paths(w, cwd, prog)


_CODE_RUNS = re.compile(
    r"""["'\[(,]\s*(?:/usr)?(?:/s?bin/)?(sudo|su|doas|pkexec|shutdown|reboot|poweroff|halt)\b"""
)


_ALWAYS_RECURSIVE = frozenset(
    {"tar", "bsdtar", "zip", "7z", "7za", "rg", "ag", "ack", "duplicity", "restic", "borg"}
)
_RECURSIVE_WITH_FLAG = frozenset({"cp", "grep", "egrep", "fgrep", "rsync", "scp", "zip", "diff"})


def _reads_recursively(prog: str, args: Iterable[shell.Word]) -> bool:
    if prog in _ALWAYS_RECURSIVE:
        return True
    if prog not in _RECURSIVE_WITH_FLAG:
        return False
    for w in args:
        t = w.text
        if t in ("--recursive", "--archive", "--dereference-recursive") or t.startswith(
            "--directories=recurse"
        ):
            return True
        if t.startswith("-") and not t.startswith("--") and any(ch in t[1:] for ch in "rRa"):
            return True
    return False


def _ancestor_findings(prog: str, args: Iterable[shell.Word], cwd: str) -> Iterator[Finding]:
    home = os.path.expanduser("~")
    hidden_too = prog not in ("rg", "ag") or any(
        w.text in ("--hidden", "-uu", "-uuu", "-u", "--unrestricted") for w in args
    )
    for w in args:
        if w.dynamic or w.glob or w.text.startswith("-"):
            continue
        for path in classify_spellings(w.text, cwd):
            if path in ("/", "/etc"):
                yield "R6", f"{prog} reads {w.text} recursively, /etc/shadow included"
                yield "R7", f"{prog} reads {w.text} recursively, /etc/passwd included"
            elif hidden_too and (home == path or home.startswith(path.rstrip("/") + "/")):
                yield "R8", f"{prog} reads {w.text} recursively, ~/.ssh included"


#: Programs whose first plain argument is a program text that can run commands.
AWK_LIKE = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})


def _code_text_findings(code: str) -> Iterator[Finding]:
    m = _CODE_RUNS.search(code)
    if m:
        rid = "R5" if m.group(1) in SHUTDOWN else "R2"
        yield rid, f"the inline code runs {m.group(1)}"
    m = _PROTECTED_TEXT.search(code)
    if m:
        rid = "R7" if m.group(1) == "passwd" else "R6"
        yield rid, f"the inline code names {m.group(0)}"
    if _SSH_TEXT.search(code):
        yield "R8", "the inline code names an .ssh directory"
    m = _ENV_TEXT.search(code)
    if m and not (m.group(2) or "").endswith((".example", ".sample", ".template", ".dist")):
        yield "R9", "the inline code names an .env file"


def _word_paths(w: shell.Word, cwd: str | None, what: str) -> Iterator[Finding]:
    text = w.text
    if w.dynamic and w.fallback and shell.DYN not in w.fallback and cwd is not None:
        # ${F:-.env}: what it is when the variable is empty or unset
        for rid in sorted(classify_path(w.fallback, cwd)):
            yield rid, f"{what} {w.fallback} (the default of {w.shown})"
    if not text or text == shell.DYN:
        return
    if cwd is None and not text.startswith(("/", "~")):
        # cwd changed to something unknown: compare names only.
        base = posixpath.basename(text.replace(shell.DYN, ""))
        if base in ("passwd", "shadow", "gshadow"):
            yield "R7" if base == "passwd" else "R6", f"{what} {text} in an unknown directory"
        if ".ssh" in text.split("/"):
            yield "R8", f"{what} {w.shown}"
        if is_env_name(base):
            yield "R9", f"{what} {text} in an unknown directory"
        return
    base_cwd = cwd or "/"
    if w.glob or w.dynamic:
        # A run-time part could be anything: it matches names lexically, but only a real
        # glob is expanded on disk (bash does not glob a quoted "$X").
        for rid in sorted(classify_glob(w.pattern, base_cwd, expand=w.glob)):
            yield rid, f"{what} {w.shown}"
        return
    for rid in sorted(classify_path(text, base_cwd)):
        yield rid, f"{what} {text}"


_FILE_URL = re.compile(r"file:(?://[^/]*)?(/[^\s'\"]*)", re.IGNORECASE)
#: Programs that take the names of files to read on stdin (one per line or word).
FILE_LIST_READERS = frozenset({"cpio", "afio", "pax", "zip", "7z", "7za", "rsync", "tar"})


def _embedded_paths(w: shell.Word, cwd: str | None, prog: str | None) -> Iterator[_Step]:
    """Paths inside an argument: ``file:///etc/shadow`` URLs, ``@/path`` (curl -d @F),
    ``-I/path`` style values."""
    text = w.text
    if w.dynamic or not text:
        return
    for m in _FILE_URL.finditer(text):
        from urllib.parse import unquote

        yield _Fresh(_word_paths, (shell.literal_word(unquote(m.group(1))), cwd, f"{prog} URL"))
    at = text.rfind("@")
    if at >= 0 and text[at + 1 : at + 2] in ("/", "~", "."):
        yield _Fresh(_word_paths, (shell.literal_word(text[at + 1 :]), cwd, f"{prog} @file"))


def _stdin_paths(c: shell.Command) -> Iterator[_Step]:
    """``echo ~/.ssh/id_rsa | cpio -o``: file names a program reads from its stdin."""
    stdin = c.stdin
    prog = c.program
    if stdin is None or stdin.text is None or prog not in FILE_LIST_READERS:
        return
    if prog in ("tar", "rsync") and not any(
        w.text in ("-T", "--files-from", "-") or w.text.startswith("--files-from")
        for w in c.argv[1:]
    ):
        return
    if prog == "zip" and not any(w.text == "-@" for w in c.argv[1:]):
        return
    for name in stdin.text.split():
        expanded = name
        yield _Fresh(_word_paths, (shell.literal_word(expanded), c.cwd, f"{prog} reads from stdin"))


NOT_RUNNERS = shell.NON_RUNNERS


def _maybe_runs(c: shell.Command) -> Iterator[Finding]:
    """An unknown program given the name of a forbidden one may well run it: ``foo sudo
    id`` is asked about (a known non-runner like ``grep -rn sudo`` is not)."""
    prog = c.program
    if prog is None or prog in shell.NAME_ARGS or prog in PRIVILEGE or prog in SHUTDOWN:
        return
    if prog in shell.WRAPPERS or c.transparent:
        return
    for w in c.argv[1:]:
        if w.dynamic or w.text.startswith("-"):
            continue
        base = posixpath.basename(w.text)
        if base in PRIVILEGE or base in SHUTDOWN:
            yield OPAQUE_ID, f"{prog} may run {base} (a program the analysis does not know)"
            return


_TOKEN = re.compile(r"""(?:~|\.{0,2})/[^\s'"`;,)}\]@|]*|(?<![\w.-])\.env(?:\.[\w.-]+)?(?![\w.-])""")


def _paths_inside_arguments(c: shell.Command) -> Iterator[_Step]:
    """An unknown program's arguments may hold paths inside a larger text (``apache2 -C
    'Include /etc/shadow'``, ``--conf={"file": "~/.ssh/id_rsa"}``): every path-like token
    is checked. Programs known to take plain text (grep patterns, commit messages, echo)
    are left alone."""
    prog = c.program
    if prog is None or prog in NAMES_ONLY or c.cwd is None:
        return
    words = list(c.argv[1:])
    if prog in NOT_RUNNERS:
        # tar --transform=s@.*@/etc/passwd@ renames what it extracts to that path
        words = [
            w
            for i, w in enumerate(words)
            if w.text.startswith(("--xform", "--transform"))
            or (i > 0 and words[i - 1].text in ("--xform", "--transform"))
        ]
        if prog != "tar" or not words:
            return
    for w in words:
        text = w.text
        if w.dynamic or not any(ch in text for ch in " ={:,@'\"") or len(text) > 4096:
            continue  # a plain word was checked as a path already
        drop = _NO_R6_R7 if prog in METADATA_ONLY else _NOTHING
        for token in _TOKEN.findall(text):
            yield _Fresh(_word_paths, (shell.literal_word(token), c.cwd, f"{prog} argument"), drop)


def _first_positional(args: Iterable[shell.Word]) -> str | None:
    for w in args:
        if not w.text.startswith("-"):
            return w.text
    return None


_SYMBOLIC = re.compile(r"^([ugoa]*)([-+=][rwxXstugo]*)+$")


def setid_bits(mode: str | None) -> str | None:
    """'setuid', 'setgid' or 'setuid and setgid' when a chmod mode sets them."""
    if not mode:
        return None
    if mode.isdigit() and all(c in "01234567" for c in mode):
        if len(mode) < 4:
            return None
        special = int(mode[-4])
        bits = [n for n, b in (("setuid", 4), ("setgid", 2)) if special & b]
        return " and ".join(bits) or None
    found: set[str] = set()
    for clause in mode.split(","):
        m = _SYMBOLIC.match(clause)
        if not m:
            continue
        who = m.group(1) or "a"
        for op in re.findall(r"([-+=])([rwxXstugo]*)", clause[len(m.group(1)) :]):
            if op[0] in "+=" and "s" in op[1]:
                if "u" in who or "a" in who:
                    found.add("setuid")
                if "g" in who or "a" in who:
                    found.add("setgid")
    if not found:
        return None
    return " and ".join(sorted(found, key=lambda b: b != "setuid"))  # "setuid and setgid"


_ROOT_ENTRIES = ("bin", "boot", "etc", "home", "lib", "usr", "var")


def _root_delete(c: shell.Command) -> Iterator[Finding]:
    prog = c.program
    args = c.argv[1:]
    cwd = c.cwd
    if prog == "rm":
        options = [w.text for w in args if w.text.startswith("-") and w.text != "-"]
        recursive = any(
            o in ("--recursive",) or (not o.startswith("--") and ("r" in o or "R" in o))
            for o in options
        )
        if not recursive:
            return
        targets = [w for w in args if not (w.text.startswith("-") and w.text != "-")]
        # after `--` everything is a target
        if any(w.text == "--" for w in args):
            idx = [w.text for w in args].index("--")
            targets = [w for w in args[idx + 1 :]]
        for w in targets:
            verdict = _is_root_target(w, cwd)
            if verdict == "root":
                yield "R1", f"rm -r of {w.shown} deletes the root directory"
            elif verdict == "maybe":
                yield OPAQUE_ID, f"rm -r of {w.shown} deletes / if the variable is empty"
    elif prog == "find":
        starts = []
        for w in args:
            if w.text.startswith(("-", "(", "!")):
                break
            starts.append(w)
        if "-delete" in (w.text for w in args):
            for w in starts:
                if _is_root_target(w, cwd) == "root":
                    yield "R1", f"find {w.shown} -delete deletes the root directory"
    elif prog == "rsync" and any(w.text.startswith("--delete") for w in args):
        positional = [w for w in args if not w.text.startswith("-")]
        if positional and _is_root_target(positional[-1], cwd) == "root":
            yield "R1", "rsync --delete into / deletes the root directory"


def _is_root_target(w: shell.Word, cwd: str | None) -> str | None:
    """'root' when the word names /, 'maybe' when it does if a variable is empty."""
    base = cwd or "/"
    if not w.dynamic:
        if w.glob:
            return "root" if _root_glob(w.pattern, base) else None
        if cwd is None and not w.text.startswith(("/", "~")):
            return None
        return "root" if lexical(w.text, base) == "/" else None
    empty = w.empty_form
    if empty.startswith("/") and (
        lexical(empty, "/") == "/" or (has_glob(empty) and _root_glob(empty, "/"))
    ):
        return "maybe"
    return None


def _root_glob(pattern: str, base: str) -> bool:
    """A glob that expands to the root's own entries (``/*``, ``/usr/../*``)."""
    absolute = lexical(pattern, base)
    if absolute == "/":
        return True
    parent, _, leaf = absolute.rpartition("/")
    if lexical(parent or "/", "/") != "/":
        return False
    return sum(1 for e in _ROOT_ENTRIES if fnmatch.fnmatchcase(e, leaf)) >= 2
