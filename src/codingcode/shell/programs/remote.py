"""Remote and archive programs: ssh options, rsync, tar, socat, nc, cpio, dosbox."""

from __future__ import annotations

import re

from codingcode.shell.model import DYN, Command, Word, literal_word
from codingcode.shell.programs.common import Part, kv, lit_word
from codingcode.shell.programs.interpreters import SHELLS

# -- commands held in options -----------------------------------------------------------
_SSH_CMD_OPTS = ("proxycommand", "localcommand", "remotecommand", "knownhostscommand")


def ssh_option_parts(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        value: str | None = None
        if w.text == "-o" and i + 1 < len(rest):
            value = rest[i + 1].text
        elif w.text.startswith("-o") and len(w.text) > 2:
            value = w.text[2:]
        if value is None:
            continue
        key, sep, val = kv(value)
        if key.lower() in _SSH_CMD_OPTS and sep:
            parts.append(("script", literal_word(val) if DYN not in val else Word(DYN)))
    if cmd.program in ("scp", "sftp"):
        for i, w in enumerate(rest):
            if w.text == "-S" and i + 1 < len(rest):
                parts.append(("argv", [rest[i + 1]]))
    return parts


_TAR_CMD = (
    "--to-command",
    "--use-compress-program",
    "--rsh-command",
    "--info-script",
    "--new-volume-script",
)


def tar_parts(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        t = w.text
        name, eq, val = t.partition("=")
        if name == "--checkpoint-action" and eq:
            if val.startswith("exec="):
                parts.append(("script", lit_word(val[5:])))
            elif val.startswith("exec"):
                parts.append(("opaque", "tar --checkpoint-action runs a command"))
        elif name in _TAR_CMD:
            v = val if eq else (rest[i + 1].text if i + 1 < len(rest) else "")
            parts.append(("script", lit_word(v)))
            if (
                name == "--to-command"
                and v.split()[:1]
                and v.split()[0].rsplit("/", 1)[-1] in SHELLS
            ):
                # each file of the archive is fed to it: a shell runs the archive's content
                parts.append(("opaque", "tar --to-command hands the archive's files to a shell"))
        elif t in ("-I", "-F") and i + 1 < len(rest):
            parts.append(("script", rest[i + 1]))
        elif t.startswith("-I") and len(t) > 2 and not t.startswith("--"):
            parts.append(("script", lit_word(t[2:])))
    return parts


def rsync_parts(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        name, eq, val = w.text.partition("=")
        if name in ("-e", "--rsh", "--rsync-path"):
            v = val if eq else (rest[i + 1].text if i + 1 < len(rest) else "")
            parts.append(("script", lit_word(v)))
        elif name.startswith("-e") and len(name) > 2 and not name.startswith("--"):
            parts.append(("script", lit_word(w.text[2:])))
    return parts


# -- network tools that exec --------------------------------------------------------------
def socat_parts(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    for w in cmd.argv[1:]:
        m = re.match(r"^(EXEC|SYSTEM):(.*?)(,[a-z-]+(=[^,]*)?)*$", w.text, re.IGNORECASE)
        if m:
            parts.append(("script", lit_word(m.group(2))))
    return parts


def nc_parts(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        if w.text in ("-e", "--exec") and i + 1 < len(rest):
            parts.append(("argv", [rest[i + 1]]))
        elif w.text in ("-c", "--sh-exec", "--lua-exec") and i + 1 < len(rest):
            parts.append(("script", rest[i + 1]))
    return parts


#: cpio options that take a value.
_CPIO_ARG = frozenset("CEFHIMORW")


def cpio_parts(cmd: Command) -> list[Part]:
    """``cpio -p DIR``: copies the files named on stdin into DIR (``DIR/name``)."""
    rest = [w.text for w in cmd.argv[1:]]
    passing = False
    operands: list[str] = []
    skip = False
    for t in rest:
        if skip:
            skip = False
        elif t == "--pass-through":
            passing = True
        elif t.startswith("--"):
            pass
        elif t.startswith("-") and len(t) > 1:
            passing = passing or "p" in t
            skip = t[-1] in _CPIO_ARG
        else:
            operands.append(t)
    if not passing or not operands:
        return []
    dest = operands[-1]
    stdin = cmd.stdin
    if DYN in dest or stdin is None or stdin.text is None:
        return [("opaque", "cpio -p copies files only known at run time")]
    names = [x for x in stdin.text.split("\n") if x.strip()][:1000]
    return [("write", literal_word(dest.rstrip("/") + "/" + n.lstrip("/"))) for n in names]


_DOS_PATH = re.compile(r"(?:(>)\s*)?\b([A-Za-z]):([\\/][^\s\"'>|]*)?")


def dosbox_parts(cmd: Command) -> list[Part]:
    """``dosbox -c 'mount c DIR' -c 'type c:\\x'``: a drive stands for a host directory."""
    commands = [cmd.argv[i + 1].text for i, w in enumerate(cmd.argv[:-1]) if w.text == "-c"]
    drives: dict[str, str] = {}
    parts: list[Part] = []
    for text in commands:
        words = text.split()
        if len(words) >= 3 and words[0].lower() == "mount":
            drives[words[1].lower()[:1]] = words[2]
            continue
        for m in _DOS_PATH.finditer(text):
            base = drives.get(m.group(2).lower())
            if base is None:
                continue
            if DYN in base:
                return [("opaque", "dosbox mounts a directory only known at run time")]
            rel = (m.group(3) or "").replace("\\", "/").lstrip("/")
            path = base.rstrip("/") + "/" + rel
            parts.append(("write" if m.group(1) else "read", literal_word(path)))
    return parts
