"""Commands hidden in arguments (quoted strings, option values, call arguments) and scripts
a line may have downloaded before it runs them."""

from __future__ import annotations

import posixpath
import re

from codingcode.shell.context import Walk
from codingcode.shell.model import Command

#: Where a command line hides inside an argument: a quoted string, a {group}, the value of
#: an option (``--cmd=X``, ``-oKey=X``, ``a=1,b=X``), after a one-letter option (``-HX``).
_QUOTED = re.compile(r"\"([^\"]{2,})\"|'([^']{2,})'")


_BRACED = re.compile(r"\{([^{}]{2,})\}")


_OPTION_VALUE = re.compile(r"(?:^|[,:'\"\s])[\w.:-]*=([^,]{2,})")


_AFTER_SHORT = re.compile(r"^-[A-Za-z]([A-Za-z/].+\s.*)$")


_CALL_ARGS = re.compile(r"\(\s*[\"'][^\"']+[\"'](?:\s*,\s*[\"'][^\"']*[\"'])+")


MAX_EMBEDDED = 8


#: Programs that fetch from or talk to other hosts.
NETWORK_CLIENTS = frozenset(
    {"ftp", "tftp", "sftp", "scp", "smbclient", "socat", "nc", "ncat", "netcat", "telnet"}
    | {"lwp-download", "lwp-request", "aria2c", "ssh", "rsync", "curl", "wget", "axel"}
)


#: Text naming another host or a network call.
REMOTE = re.compile(
    r"\b(?:https?|ftps?|tftp|sftp|scp|smb|rsync)://|\b[\w.-]+@[\w.-]+:|\btcp[46]?(?:-connect)?:\w|"
    r"^\\\\[\w.-]+\\|\bIO::Socket|\bsocket\s*\(|\burl(?:open|retrieve)\b"
)


def maybe_downloaded(walker: Walk, path: str, runner: Command) -> bool:
    """An earlier command of this line names ``path`` (or its directory) and reaches
    another host: the script ``runner`` runs may be what it fetched."""
    parent = posixpath.dirname(path)
    names_it = remote = False
    for c in walker.out.commands:
        if c.argv is runner.argv:
            continue
        texts = [w.text for w in c.argv[1:]]
        if c.stdin is not None and c.stdin.text:
            texts.append(c.stdin.text)
        joined = "\n".join(texts)
        if path in joined or (parent not in ("", "/", ".") and parent in texts):
            names_it = True
        if c.program in NETWORK_CLIENTS or REMOTE.search(joined):
            remote = True
    return names_it and remote


def embedded_commands(text: str) -> list[str]:
    """Pieces of ``text`` that may be handed to a shell by the program that gets it (at
    most MAX_EMBEDDED; only those with a space or naming a program by path)."""
    found: list[str] = []
    for m in _QUOTED.finditer(text):
        found.append(next(g for g in m.groups() if g is not None))
    found.extend(m.group(1) for m in _BRACED.finditer(text))
    if "," in text:
        found.append(text.replace(",", " "))
    for m in _CALL_ARGS.finditer(text):  # Start("sudo", "id"), exec('sudo','id')
        found.append(" ".join(q for q in re.findall(r"[\"']([^\"']*)[\"']", m.group(0))))
    for m in _OPTION_VALUE.finditer(text):
        found.append(m.group(1).strip("'\""))
    m2 = _AFTER_SHORT.match(text)
    if m2 is not None:
        found.append(m2.group(1))
    head, _, rest = text.strip().partition(" ")
    if rest and not head.startswith("-"):
        found.append(rest)
    out: list[str] = []
    for piece in found:
        piece = piece.strip()
        if piece and piece != text and piece not in out and (" " in piece or "/" in piece):
            out.append(piece)
    return out[:MAX_EMBEDDED]
