"""What a simple command runs besides itself: the dispatch over the program families."""

from __future__ import annotations

from codingcode.shell.model import Command
from codingcode.shell.programs.builtins import builtin_parts
from codingcode.shell.programs.common import Part, lit_word
from codingcode.shell.programs.debuggers import gdb_parts, sqlite_parts
from codingcode.shell.programs.editors import (
    EMACS,
    PAGERS,
    VIM,
    emacs_parts,
    pager_parts,
    vim_parts,
)
from codingcode.shell.programs.remote import (
    cpio_parts,
    dosbox_parts,
    nc_parts,
    rsync_parts,
    socat_parts,
    ssh_option_parts,
    tar_parts,
)
from codingcode.shell.programs.runners import SIMPLE_RUNNERS, runner_parts
from codingcode.shell.programs.text import (
    AWK_LIKE,
    PROGRAM_OPTIONS,
    awk_command_parts,
    program_option_parts,
    sed_command_parts,
    split_parts,
)
from codingcode.shell.programs.vcs_build import git_parts, make_parts


def look_inside(cmd: Command) -> list[Part] | None:
    """What ``cmd`` runs besides itself (see the module doc), or None."""
    prog = cmd.program
    if prog is None or prog not in _HANDLED:
        return None
    found = runner_parts(cmd)
    if found is not None:
        return found
    if prog in ("ssh", "scp", "sftp"):
        return ssh_option_parts(cmd) or None
    if prog in ("tar", "bsdtar", "gtar"):
        return tar_parts(cmd) or None
    if prog == "rsync":
        return rsync_parts(cmd) or None
    if prog == "zip":
        rest = list(cmd.argv[1:])
        for i, w in enumerate(rest):
            if w.text in ("-TT", "--unzip-command") and i + 1 < len(rest):
                return [("script", rest[i + 1])]
            if w.text.startswith("--unzip-command="):
                return [("script", lit_word(w.text.split("=", 1)[1]))]
        return None
    if prog == "wget":
        for w in cmd.argv[1:]:
            if w.text.startswith("--use-askpass="):
                return [("file", lit_word(w.text.split("=", 1)[1]))]
        return None
    if prog == "git":
        return git_parts(cmd) or None
    if prog in VIM:
        return vim_parts(cmd) or None
    if prog in PAGERS:
        return pager_parts(cmd) or None
    if prog == "man":
        rest = list(cmd.argv[1:])
        for i, w in enumerate(rest):
            if w.text in ("-P", "--pager") and i + 1 < len(rest):
                return [("script", rest[i + 1])]
            if w.text.startswith("--pager="):
                return [("script", lit_word(w.text.split("=", 1)[1]))]
        return None
    if prog == "sed" or prog == "gsed":
        return sed_command_parts(cmd) or None
    if prog in AWK_LIKE:
        return awk_command_parts(cmd) or None
    if prog in ("make", "gmake", "bmake"):
        return make_parts(cmd)
    if prog in ("gdb", "lldb", "cgdb"):
        return gdb_parts(cmd) or None
    if prog == "socat":
        return socat_parts(cmd) or None
    if prog in EMACS:
        return emacs_parts(cmd) or None
    if prog == "split":
        return split_parts(cmd) or None
    if prog in ("sqlite3", "sqlite"):
        return sqlite_parts(cmd)
    if prog in ("nc", "ncat", "netcat"):
        return nc_parts(cmd) or None
    if prog == "cpio":
        return cpio_parts(cmd) or None
    if prog in PROGRAM_OPTIONS:
        return program_option_parts(cmd, PROGRAM_OPTIONS[prog]) or None
    if prog in ("dosbox", "dosbox-x"):
        return dosbox_parts(cmd) or None
    return builtin_parts(cmd)


#: Every program look_inside knows something about (anything else: None at once).
_HANDLED = frozenset(
    {
        "cpio",
        "rg",
        "sort",
        "gsort",
        "diff",
        "sdiff",
        "dosbox",
        "dosbox-x",
        "npx",
        "bunx",
        "pnpx",
        "npm",
        "pnpm",
        "yarn",
        "uvx",
        "uv",
        "poetry",
        "pdm",
        "hatch",
        "rye",
        "pipenv",
        "pipx",
        "conda",
        "docker",
        "podman",
        "nerdctl",
        "kubectl",
        "oc",
        "ip",
        "prlimit",
        "start-stop-daemon",
        "systemd-run",
        "ssh",
        "scp",
        "sftp",
        "tar",
        "bsdtar",
        "gtar",
        "rsync",
        "zip",
        "wget",
        "git",
        "man",
        "sed",
        "gsed",
        "make",
        "gmake",
        "bmake",
        "gdb",
        "lldb",
        "cgdb",
        "socat",
        "nc",
        "ncat",
        "netcat",
        "hash",
        "fc",
        "history",
        "set",
        "sqlite3",
        "sqlite",
        "enable",
        "mapfile",
        "readarray",
        "crontab",
        "complete",
        "compgen",
        "expect",
        "newgrp",
    }
    | SIMPLE_RUNNERS
    | EMACS
    | {"split"}
    | VIM
    | PAGERS
    | AWK_LIKE
)
