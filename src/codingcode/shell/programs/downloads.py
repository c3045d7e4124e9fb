"""Programs that download, and the files they write."""

from __future__ import annotations

import posixpath

from codingcode.paths import lexical
from codingcode.shell.model import DYN, Command

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
