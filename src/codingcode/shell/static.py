"""Static evaluators: what ``echo``, ``printf``, ``cat``, ``base64 -d``... print, when known."""

from __future__ import annotations

import base64
import binascii
import re

from codingcode.shell.context import Walk
from codingcode.shell.expand import decode_ansi_c
from codingcode.shell.model import DYN, Command, literal_word

# -- what a command prints, when it is known ------------------------------------------
MAX_STATIC_OUTPUT = 200_000


#: The programs ``static_output`` knows the output of.
_STATIC_PROGRAMS = frozenset(
    {"echo", "printf", "cat", "base64", "base32", "xxd", "rev", "tr"}
    | {"true", ":", "cd", "export", "shopt", "set", "chmod", "mkdir", "touch"}
)


def static_output(cmd: Command, walker: Walk) -> str | None:
    """The output of ``cmd`` when the analysis can compute it: ``echo``, ``printf``, and
    filters of a known input (``cat``, ``base64 -d``, ``xxd -r -p``, ``rev``, ``tr``)."""
    prog = cmd.program
    if prog not in _STATIC_PROGRAMS:
        return None
    args = [w.text for w in cmd.argv[1:]]
    if any(DYN in a for a in args):
        return None
    stdin = cmd.stdin
    known_in = stdin.text if stdin is not None and not stdin.opaque else None
    if stdin is None:
        known_in = ""
    out: str | None = None
    if prog == "echo":
        flags = ""
        while args and args[0][:1] == "-" and len(args[0]) > 1 and set(args[0][1:]) <= set("neE"):
            flags += args.pop(0)[1:]
        text = " ".join(args)
        if "e" in flags:
            text = decode_ansi_c(text)
        out = text if "n" in flags else text + "\n"
    elif prog == "printf":
        if args and args[0] == "--":
            args = args[1:]
        if args and args[0] == "-v":
            return ""
        out = printf_format(args[0], args[1:]) if args else None
    elif prog == "cat":
        files = [a for a in args if a != "-" and not a.startswith("-")]
        if not files:
            out = known_in
        elif cmd.cwd is not None:
            pieces = [walker.file_content(literal_word(f), cmd.cwd) for f in files]
            out = None if any(p is None for p in pieces) else "".join(p or "" for p in pieces)
    elif prog in ("base64", "base32") and any(a in ("-d", "--decode", "-D") for a in args):
        data = known_in
        files = [a for a in args if not a.startswith("-")]
        if files and cmd.cwd is not None:
            data = walker.file_content(literal_word(files[0]), cmd.cwd)
        if data is not None:
            try:
                raw = "".join(data.split())
                decoded = (
                    base64.b64decode(raw + "=" * (-len(raw) % 4))
                    if prog == "base64"
                    else base64.b32decode(raw + "=" * (-len(raw) % 8))
                )
                out = decoded.decode("utf-8", "surrogateescape")
            except (ValueError, binascii.Error):
                out = None
    elif prog == "xxd" and "-r" in args and ("-p" in args or "-ps" in args) and known_in:
        try:
            out = bytes.fromhex("".join(known_in.split())).decode("utf-8", "surrogateescape")
        except ValueError:
            out = None
    elif prog == "rev" and not args and known_in is not None:
        out = "\n".join(line[::-1] for line in known_in.split("\n"))
    elif (
        prog == "tr"
        and known_in is not None
        and len(args) == 2
        and not any(a.startswith("-") or "[" in a or "\\" in a or "-" in a[1:-1] for a in args)
    ):
        src, dst = args
        if len(dst) < len(src) and dst:
            dst = dst + dst[-1] * (len(src) - len(dst))
        out = known_in.translate(str.maketrans(src, dst[: len(src)])) if dst else None
    elif prog in ("true", ":", "cd", "export", "shopt", "set", "chmod", "mkdir", "touch"):
        out = ""
    if out is not None and len(out) > MAX_STATIC_OUTPUT:
        return None
    return out


def printf_format(fmt: str, args: list[str]) -> str:
    """bash's printf for %s, %b, %c, %d and escapes (the format is reused for extra args)."""
    out: list[str] = []
    i = 0
    rounds = 0
    while True:
        used = 0
        j = 0
        while j < len(fmt):
            c = fmt[j]
            if c == "\\" and j + 1 < len(fmt):
                k = j + 2
                while k < len(fmt) and k - j < 4 and fmt[k] in "01234567xX0123456789abcdefABCDEF":
                    k += 1
                # let decode_ansi_c read the longest escape it understands
                piece = fmt[j : min(len(fmt), j + 10)]
                decoded, consumed = _one_escape(piece)
                out.append(decoded)
                j += consumed
                continue
            if c == "%" and j + 1 < len(fmt):
                m = re.match(r"%[-+ #0]*\d*(?:\.\d+)?([sbcdiouxXq%])", fmt[j:])
                if not m:
                    out.append(c)
                    j += 1
                    continue
                conv = m.group(1)
                j += m.end()
                if conv == "%":
                    out.append("%")
                    continue
                arg = args[i] if i < len(args) else ""
                i += 1
                used += 1
                if conv == "b":
                    out.append(decode_ansi_c(arg))
                elif conv == "c":
                    out.append(arg[:1])
                elif conv in "diouxX":
                    out.append(arg or "0")
                else:
                    out.append(arg)
                continue
            out.append(c)
            j += 1
        rounds += 1
        if used == 0 or i >= len(args) or rounds > 1000:
            break
    return "".join(out)


def _one_escape(piece: str) -> tuple[str, int]:
    for n in range(len(piece), 1, -1):
        decoded = decode_ansi_c(piece[:n])
        if len(decoded) == 1 and decoded != piece[:n]:
            return decoded, n
    return decode_ansi_c(piece[:2]), 2
