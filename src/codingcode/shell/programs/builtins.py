"""Shell builtins that make later commands unknown (hash -p, fc, enable -f, crontab...)."""

from __future__ import annotations

import itertools

from codingcode.shell.model import Command
from codingcode.shell.programs.common import Part
from codingcode.shell.programs.debuggers import expect_parts


# -- scheduled and stored commands -------------------------------------------------------
def builtin_parts(cmd: Command) -> list[Part] | None:
    prog = cmd.program
    texts = [w.text for w in cmd.argv[1:]]
    if prog == "hash" and any(t.startswith("-") and "p" in t for t in texts):
        return [("opaque", "hash -p makes a name run another program")]
    if prog == "fc" and not any(t.startswith("-") and "l" in t for t in texts):
        return [("opaque", "fc runs commands from the history")]
    if prog == "history":
        # entries run again only through fc (opaque) or `!` expansion, which is off in
        # `bash -c` unless turned on (set -H, opaque); the file it reads or writes is seen
        parts: list[Part] = []
        for i, t in enumerate(texts[:-1]):
            if t in ("-r", "-n"):
                parts.append(("read", cmd.argv[i + 2]))
            elif t in ("-a", "-w"):
                parts.append(("write", cmd.argv[i + 2]))
        return parts
    if prog == "set" and (
        any(t.startswith("-") and "H" in t for t in texts)
        or any(a == "-o" and b in ("histexpand", "history") for a, b in itertools.pairwise(texts))
    ):
        return [("opaque", "set -H turns on history expansion: `!` words run earlier commands")]
    if prog == "enable" and any(t.startswith("-f") for t in texts):
        return [("opaque", "enable -f loads a builtin from a shared object")]
    if (prog == "mapfile" or prog == "readarray") and any(t.startswith("-C") for t in texts):
        return [("opaque", f"{prog} -C runs a callback")]
    if prog == "crontab" and not any(t in ("-l", "-r") for t in texts):
        return [("opaque", "crontab schedules commands the analysis does not see")]
    if prog in ("complete", "compgen") and any(t in ("-C", "-F") for t in texts):
        return [("opaque", f"{prog} -C/-F runs a command on completion")]
    if prog == "expect":
        return expect_parts(cmd)
    if prog in ("newgrp",):
        return [("opaque", f"{prog} starts a shell")]
    return None
