"""Which programs are shells, interpreters or downloaders, and how they get their code."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from functools import lru_cache

from codingcode.paths import lexical
from codingcode.shell.model import DYN, Command, Word, literal_word

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
DOWNLOADERS = frozenset(
    {
        "curl",
        "wget",
        "aria2c",
        "fetch",
        "http",
        "https",
        "xh",
        "lwp-download",
        "lwp-request",
        "axel",
        "nc",
        "ncat",
        "netcat",
        "socat",
    }
)
SOURCE_BUILTINS = frozenset({"source", "."})
#: Variables whose value decides which program runs or what it loads first.
RISKY_VARIABLES = frozenset(
    {
        "PATH",
        "BASH_ENV",
        "ENV",
        "IFS",
        "PROMPT_COMMAND",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "NODE_OPTIONS",
        "NODE_PATH",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_EXEC_PATH",
        "GIT_EDITOR",
        "GIT_PAGER",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "LESSOPEN",
        "CDPATH",
        "HOME",
        "XDG_CONFIG_HOME",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
    }
)


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


def download_targets(cmd: Command) -> set[str]:
    """Files a downloader command writes (``-o F``, ``-O F``, ``> F``, wget's default name)."""
    files: set[str] = set()
    cwd = cmd.cwd or "/"
    args = cmd.argv[1:]
    prog = cmd.program
    names: list[str] = []
    for i, w in enumerate(args):
        t = w.text
        nxt = args[i + 1].text if i + 1 < len(args) else None
        if (
            (prog == "curl" and t in ("-o", "--output") and nxt)
            or (prog == "wget" and t in ("-O", "--output-document") and nxt)
            or (prog not in ("curl", "wget") and t in ("-o", "-O", "--out", "--output") and nxt)
        ):
            names.append(nxt)
        elif t.startswith("--output-document=") or t.startswith("--output="):
            names.append(t.split("=", 1)[1])
        elif prog == "wget" and t.startswith("-O") and len(t) > 2:
            names.append(t[2:])
    urls = [w.text for w in args if "://" in w.text]
    if (prog == "wget" and not names) or (
        prog == "curl" and any(w.text in ("-O", "--remote-name") for w in args)
    ):
        for u in urls:
            base = posixpath.basename(u.split("?", 1)[0].rstrip("/"))
            if base:
                names.append(base)
    for r in cmd.redirects:
        if r.op in (">", ">>", ">|", "&>") and r.target is not None:
            names.append(r.target.text)
    for n in names:
        if n and n != "-" and DYN not in n:
            files.add(lexical(n, cwd))
    return files


#: Programs that never run their arguments as commands (``grep -rn sudo`` runs no sudo).
NON_RUNNERS = frozenset(
    {
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "ack",
        "git",
        "cat",
        "less",
        "more",
        "head",
        "tail",
        "man",
        "info",
        "help",
        "which",
        "whereis",
        "type",
        "apropos",
        "whatis",
        "tldr",
        "apt",
        "apt-get",
        "apt-cache",
        "dpkg",
        "rpm",
        "dnf",
        "yum",
        "pacman",
        "zypper",
        "apk",
        "brew",
        "snap",
        "flatpak",
        "nix",
        "pip",
        "pip3",
        "npm",
        "pnpm",
        "yarn",
        "cargo",
        "gem",
        "go",
        "echo",
        "printf",
        "ls",
        "find",
        "locate",
        "file",
        "stat",
        "wc",
        "sort",
        "uniq",
        "diff",
        "cmp",
        "sed",
        "awk",
        "tr",
        "cut",
        "touch",
        "mkdir",
        "rm",
        "cp",
        "mv",
        "ln",
        "chmod",
        "chown",
        "test",
        "[",
        "pgrep",
        "pkill",
        "killall",
        "ps",
        "journalctl",
        "systemctl",
        "id",
        "groups",
        "getent",
        "useradd",
        "usermod",
        "passwd",
        "visudo",
        "ssh-keygen",
        "tee",
        "xxd",
        "base64",
        "hexdump",
        "od",
        "strings",
        "readlink",
        "realpath",
        "basename",
        "dirname",
        "true",
        "false",
        ":",
        "alias",
        "unalias",
        "complete",
        "compgen",
        "declare",
        "local",
        "export",
        "set",
        "unset",
        "read",
        "wait",
        "jobs",
        "kill",
        "code",
        "vim",
        "vi",
        "nano",
        "emacs",
        "git-lfs",
        "gh",
        "jq",
        "yq",
        "curl",
        "wget",
        "tar",
        "zip",
        "unzip",
        "gzip",
        "gunzip",
        "docker",
        "podman",
        "kubectl",
        "history",
        "hash",
        "chsh",
        "cd",
        "pwd",
        "date",
        "sleep",
        "du",
        "df",
        "tree",
        "column",
        "fold",
        "nl",
        "paste",
        "join",
        "comm",
        "expand",
        "split",
        "csplit",
        "md5sum",
        "sha256sum",
        "sha1sum",
        "cksum",
        "python",
        "python3",
        "node",
        "ruby",
        "perl",
        "make",
        "cmake",
        "pytest",
        "tox",
        "ruff",
        "mypy",
        "black",
        "eslint",
        "prettier",
        "tsc",
    }
)

#: Package managers run hooks and maintainer scripts (``apt -o ...::Pre-Invoke=/bin/sh``):
#: their arguments are looked at for shells like any unknown program's.
NON_RUNNERS = NON_RUNNERS - {
    "apt",
    "apt-get",
    "dpkg",
    "rpm",
    "dnf",
    "yum",
    "pacman",
    "zypper",
    "apk",
    "snap",
    "flatpak",
    "nix",
    "brew",
    "man",
    "go",
    "cargo",
    "gem",
    "pip",
    "pip3",
    "cmake",
}

#: Programs whose arguments are names of things, not commands (``apt install sudo``
#: installs a package called sudo; it does not run sudo).
NAME_ARGS = NON_RUNNERS | frozenset(
    {
        "man",
        "go",
        "cargo",
        "gem",
        "pip",
        "pip3",
        "cmake",
        "apt",
        "apt-get",
        "dpkg",
        "dnf",
        "yum",
        "pacman",
        "zypper",
        "apk",
        "brew",
        "snap",
        "flatpak",
        "nix",
        "nix-env",
        "port",
        "choco",
        "winget",
        "scoop",
        "conda",
        "mamba",
    }
)
