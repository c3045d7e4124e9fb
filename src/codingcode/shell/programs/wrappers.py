"""Wrappers and runners: the command that ``env``, ``timeout``, ``xargs``, ``ssh``, ``find -exec`` ... run."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace

from codingcode.shell.model import DYN, Command, Word, literal_word


# -- wrappers ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _Wrapper:
    with_arg: frozenset[str] = frozenset()  # options that take the next word
    positional_before: int = 0  # plain words before the command (timeout's DURATION)
    shell_flag: str | None = None  # an option whose value is a shell command string


def _w(with_arg: str = "", positional: int = 0, shell_flag: str | None = None) -> _Wrapper:
    return _Wrapper(frozenset(with_arg.split()), positional, shell_flag)


WRAPPERS: dict[str, _Wrapper] = {
    "env": _w("-u --unset -C --chdir -S --split-string"),
    "nohup": _w(),
    "timeout": _w("-s --signal -k --kill-after", positional=1),
    "nice": _w("-n --adjustment"),
    "time": _w("-f --format -o --output"),
    "command": _w(),
    "builtin": _w(),
    "exec": _w("-a"),
    "stdbuf": _w("-i -o -e --input --output --error"),
    "setsid": _w(),
    "ionice": _w("-c --class -n --classdata -p --pid"),
    "chrt": _w(positional=1),
    "taskset": _w(positional=1),
    "flock": _w("-w --wait --timeout -E --conflict-exit-code", positional=1, shell_flag="-c"),
    "chroot": _w("--userspec --groups", positional=1),
    "strace": _w("-o -e -p -s -u -E -a -P -b -X"),
    "ltrace": _w("-o -e -p -s -u -n -a"),
    "unbuffer": _w(),
    "busybox": _w(),
    "toybox": _w(),
    "noglob": _w(),
    "caffeinate": _w(),
    "catchsegv": _w(),
    "script": _w(
        "-E --echo -I --log-in -O --log-out -B --log-io -T --log-timing -t", shell_flag="-c"
    ),
    "doas": _w("-u -C"),
    "sudo": _w(
        "-u --user -g --group -h --host -p --prompt -C --close-from -D --chdir -r --role -t --type -T --command-timeout -U --other-user"
    ),
    "xargs": _w(
        "-a --arg-file -d --delimiter -E --eof -I --replace -L --max-lines -n --max-args -P --max-procs -s --max-chars --process-slot-var"
    ),
    "watch": _w("-n --interval -d --differences -q --equexit -g --chgexit"),
    "nsenter": _w("-t --target -S --setuid -G --setgid --wd -w"),
    "unshare": _w("--map-user --map-group -S --setuid -G --setgid -w --wd"),
    "firejail": _w(),
    "sg": _w(positional=1),
    "coproc": _w(),
    "parallel": _w("-j --jobs -S --sshlogin -a --arg-file --delay --timeout -N -n --max-args"),
}


def unwrap(cmd: Command) -> tuple[str, list[Word] | list[list[Word]] | Word] | None:
    """What a wrapper runs: ("argv", words) | ("script", code) | ("find", [argv...])."""
    prog = cmd.program or ""
    rest = list(cmd.argv[1:])
    if prog == "find":
        return _find_exec(rest)
    if prog == "ssh":
        return _ssh_command(rest)
    spec = WRAPPERS.get(prog)
    if spec is None:
        return None
    if prog == "command" and any(w.text in ("-v", "-V") for w in rest[:2]):
        return None  # `command -v X` only looks X up
    i = 0
    positional = spec.positional_before
    replace_str: str | None = None
    watch_exec = False
    while i < len(rest):
        w = rest[i]
        t = w.text
        if t == "--":
            i += 1
            break
        if prog == "env" and "=" in t and not t.startswith("-"):
            i += 1
            continue
        if t.startswith("-") and len(t) > 1 and not w.dynamic:
            opt, eq, val = t.partition("=")
            combined = (
                not opt.startswith("--") and spec.shell_flag and spec.shell_flag[1] in opt[1:]
            )
            if spec.shell_flag and (opt == spec.shell_flag or combined):
                return ("script", rest[i + 1]) if i + 1 < len(rest) else None
            if prog == "env" and opt in ("-S", "--split-string"):
                split = val if eq else (rest[i + 1].text if i + 1 < len(rest) else "")
                try:
                    words = [literal_word(s) for s in shlex.split(split)]
                except ValueError:
                    words = [literal_word(DYN)]
                tail = rest[i + (1 if eq else 2) :]
                return ("argv", [*words, *tail])
            if prog == "xargs":
                if opt == "-I" and not eq:
                    replace_str = rest[i + 1].text if i + 1 < len(rest) else "{}"
                elif opt.startswith("-I"):
                    replace_str = opt[2:]
                elif opt == "--replace":
                    replace_str = val if eq else "{}"
                elif opt.startswith("-i"):
                    replace_str = opt[2:] or "{}"
            if prog == "watch" and opt in ("-x", "--exec"):
                watch_exec = True
            if opt in spec.with_arg and not eq:
                i += 2
            elif len(opt) > 2 and not opt.startswith("--") and opt[:2] in spec.with_arg:
                i += 1  # -n10: the value is attached
            else:
                i += 1
            continue
        if positional:
            positional -= 1
            i += 1
            continue
        break
    inner = rest[i:]
    if prog in ("sg", "newgrp") and not inner:
        return None  # no command: it starts a shell (which reads stdin)
    if prog == "sg" and inner and any(w.text == "-c" for w in rest[: len(rest) - len(inner)]):
        return ("script", inner[0])  # `sg GROUP -c CMD`: CMD is a command line
    if prog == "coproc":
        # `coproc { CMD; }` and `coproc NAME { CMD; }`: the grammar sees `{` as a word
        if len(inner) > 1 and inner[1].text == "{" and inner[0].text != "{":
            inner = inner[2:]
        elif inner and inner[0].text == "{":
            inner = inner[1:]
    if prog == "xargs":
        if not inner:
            inner = [literal_word("echo")]
        stdin = cmd.stdin
        arg_file = _xargs_arg_file(rest)
        if arg_file is not None:
            # `xargs -a FILE`: the items come from FILE; stdin is left to the command
            if arg_file != "/dev/null" and not replace_str:
                inner = [*inner, Word(DYN)]
        elif stdin is not None and stdin.text is not None and not replace_str:
            # the items xargs reads become arguments of the command
            zero = any(w.text in ("-0", "--null") for w in rest)
            try:
                items = (
                    [x for x in stdin.text.split("\0") if x] if zero else shlex.split(stdin.text)
                )
            except ValueError:
                items = [DYN]
            inner = [*inner, *(literal_word(x) for x in items[:1000])]
        elif not replace_str and stdin is not None:
            inner = [*inner, Word(DYN)]
        if replace_str:
            inner = [
                replace(w, text=w.text.replace(replace_str, DYN), fallback="")
                if replace_str in w.text
                else w
                for w in inner
            ]
        return ("argv", inner)
    if prog == "watch" and not watch_exec:
        if any(w.dynamic for w in inner):
            return ("script", literal_word(DYN))
        return ("script", literal_word(" ".join(w.text for w in inner))) if inner else None
    if prog == "chroot" and not inner:
        return ("argv", [literal_word("sh")])
    return ("argv", inner)


def _xargs_arg_file(rest: list[Word]) -> str | None:
    """The file ``xargs -a FILE`` reads its items from (its own options only)."""
    with_arg = WRAPPERS["xargs"].with_arg
    i = 0
    while i < len(rest):
        t = rest[i].text
        if t == "--" or not t.startswith("-") or len(t) < 2:
            return None
        if t in ("-a", "--arg-file"):
            return rest[i + 1].text if i + 1 < len(rest) else ""
        if t.startswith("--arg-file="):
            return t.partition("=")[2]
        if t.startswith("-a") and len(t) > 2:
            return t[2:]
        i += 2 if t in with_arg else 1
    return None


_SSH_WITH_ARG = frozenset(
    [
        "-B",
        "-b",
        "-c",
        "-D",
        "-E",
        "-e",
        "-F",
        "-I",
        "-i",
        "-J",
        "-L",
        "-l",
        "-m",
        "-O",
        "-o",
        "-p",
        "-Q",
        "-R",
        "-S",
        "-W",
        "-w",
    ]
)


def _ssh_command(rest: list[Word]) -> tuple[str, Word] | None:
    """The command ``ssh [options] HOST COMMAND...`` runs (by the remote shell)."""
    i = 0
    while i < len(rest):
        t = rest[i].text
        if t == "--":
            i += 1
            break
        if t.startswith("-") and len(t) > 1:
            i += 2 if t in _SSH_WITH_ARG else 1
            continue
        break
    words = rest[i + 1 :]
    if not words:
        return None
    if any(w.dynamic for w in words):
        return ("script", literal_word(DYN))
    return ("script", literal_word(" ".join(w.text for w in words)))


def env_pairs(cmd: Command) -> list[tuple[str, Word]]:
    """Each NAME=VALUE an ``env`` command sets (before its program)."""
    pairs = []
    for w in cmd.argv[1:]:
        t = w.text
        if t.startswith("-"):
            continue
        if "=" not in t:
            break
        name, _, value = t.partition("=")
        pairs.append((name, replace(w, text=value, fallback="")))
    return pairs


_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def _find_exec(rest: list[Word]) -> tuple[str, list[list[Word]]] | None:
    found: list[list[Word]] = []
    i = 0
    while i < len(rest):
        if rest[i].text in _FIND_EXEC:
            j = i + 1
            argv: list[Word] = []
            while j < len(rest) and rest[j].text not in (";", "+"):
                w = rest[j]
                argv.append(
                    replace(w, text=w.text.replace("{}", DYN), fallback="") if "{}" in w.text else w
                )
                j += 1
            if argv:
                found.append(argv)
            i = j
        i += 1
    return ("find", found) if found else None
