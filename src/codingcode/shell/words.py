"""Word expansion on the grammar's tree: quotes, parameters (``${x...}``), substitutions,
word splitting and brace expansion, as bash makes words of a word node."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from codingcode.paths import has_glob, home_dir
from codingcode.shell.context import Ctx, Walk
from codingcode.shell.expand import (
    decode_ansi_c,
    expand_braces,
    expand_tilde,
    unescape_double,
    unescape_unquoted,
)
from codingcode.shell.model import DYN, Command, Word, escape_glob
from codingcode.shell.programs import DOWNLOADERS
from codingcode.shell.source import PLAIN_WORD

# -- stdin: what feeds a shell ----------------------------------------------------------
#: Programs whose output comes from another host (a shell fed it runs a download).
REMOTE_OUTPUT = frozenset({"ssh", "nc", "ncat", "netcat", "socat", "telnet"})


def downloads(cmds: list[Command]) -> bool:
    for c in cmds:
        if c.program in DOWNLOADERS or c.program in REMOTE_OUTPUT:
            return True
    for c in cmds:
        for r in c.redirects:
            if r.target is not None and r.target.text.startswith(("/dev/tcp/", "/dev/udp/")):
                return True
    return False


_HIDE_BRACES = str.maketrans({"{": "\x01", "}": "\x02", ",": "\x03", ".": "\x04"})


_SHOW_BRACES = str.maketrans({"\x01": "{", "\x02": "}", "\x03": ",", "\x04": "."})


# -- word assembly --------------------------------------------------------------------
@dataclass
class Meta:
    download: bool = False
    subst: bool = False
    content: str | None = None
    #: indices of parts that are unquoted expansions (split into fields, globbed)
    splits: set[int] = field(default_factory=set)
    defaults: dict[int, str] = field(default_factory=dict)


def make_word(parts: list[tuple[str, bool]], meta: Meta, defaults: dict[int, str]) -> Word:
    if len(parts) == 1 and not meta.splits and DYN not in parts[0][0]:
        p, q = parts[0]  # the common case: one plain piece
        glob = not q and has_glob(p)
        return Word(
            p,
            glob,
            p if not q else escape_glob(p),
            meta.download,
            meta.subst,
            content=meta.content,
            fallback=p,
        )
    text = "".join(p for p, _ in parts)
    fallback = "".join(defaults.get(i, p.replace(DYN, "")) for i, (p, _) in enumerate(parts))
    glob = any(
        (not q or i in meta.splits) and has_glob(p.replace(DYN, ""))
        for i, (p, q) in enumerate(parts)
    )
    pattern = "".join(
        (p.replace(DYN, "*") if (not q or i in meta.splits) else escape_glob(p).replace(DYN, "*"))
        for i, (p, q) in enumerate(parts)
    )
    return Word(
        text, glob, pattern, meta.download, meta.subst, content=meta.content, fallback=fallback
    )


def split_fields(
    parts: list[tuple[str, bool]], splits: set[int], ifs: str
) -> list[list[tuple[str, bool]]]:
    """Bash word splitting of the unquoted expansions among ``parts`` (POSIX field
    splitting: IFS white space collapses and trims, each other IFS character ends a field,
    even an empty one; a final delimiter makes no empty field)."""
    fields: list[list[tuple[str, bool]]] = [[]]
    keep = [False]
    white = "".join(c for c in ifs if c in " \t\n")
    other = "".join(c for c in ifs if c not in " \t\n")
    alts = []
    if other:
        w = f"[{re.escape(white)}]*" if white else ""
        alts.append(f"{w}[{re.escape(other)}]{w}")
    if white:
        alts.append(f"[{re.escape(white)}]+")
    sep = re.compile("|".join(alts)) if alts else None

    def end_field(hard: bool) -> None:
        if hard:
            keep[-1] = True
        fields.append([])
        keep.append(False)

    for i, (text, quoted) in enumerate(parts):
        if i not in splits or sep is None:
            fields[-1].append((text, quoted))
            keep[-1] = keep[-1] or bool(text) or (quoted and i not in splits)
            continue
        pos = 0
        for m in sep.finditer(text):
            if m.start() > pos:
                fields[-1].append((text[pos : m.start()], quoted))
                keep[-1] = True
            hard = any(c in other for c in m.group(0))
            if hard or keep[-1] or fields[-1]:
                end_field(hard)
            pos = m.end()
        if pos < len(text):
            fields[-1].append((text[pos:], quoted))
            keep[-1] = True
    return [f for f, k in zip(fields, keep, strict=True) if k]


def _literal_default(text: str) -> str | None:
    if any(ch in text for ch in "$`\\") or DYN in text:
        return None
    return text.strip("'\"")


def expansion_default(node: Any, walker: Walk) -> str | None:
    """The literal default of ``${X:-word}`` / ``${X-word}`` / ``${X:=word}``, if any."""
    op = node.child_by_field_name("operator")
    if op is not None and walker.t(op) == ":?":
        return "\x01"  # ${X:?} stops the command when X is empty: it is never nothing
    if op is None or walker.t(op) not in (":-", "-", ":=", "="):
        return None
    after = [c for c in node.named_children if c.start_byte >= op.end_byte]
    if not after:
        return ""
    text = "".join(walker.t(c) for c in after)
    return None if any(ch in text for ch in "$`") else text.strip("'\"")


# -- words ----------------------------------------------------------------------
def words(walker: Walk, node: Any, ctx: Ctx) -> list[Word]:
    """A word node as the words bash makes of it (brace expansion, word splitting)."""
    if node.type in ("word", "command_name"):
        raw = walker.t(node)
        if PLAIN_WORD.fullmatch(raw):  # the common case, with nothing to expand
            return [Word(raw, False, raw, fallback=raw)]
    parts: list[tuple[str, bool]] = []
    meta = Meta()
    word_parts(walker, node, ctx, parts, meta, quoted=False, top=True)
    ifs = ctx.vars.get("IFS", " \t\n")
    if meta.splits and any(
        not q and i not in meta.splits and "{" in p for i, (p, q) in enumerate(parts)
    ):
        # brace expansion and then word splitting of the same word: left unknown
        # (a program name so spelled is asked about) rather than guessed
        return [Word(DYN, pattern="*", subst=meta.subst, download=meta.download)]
    if meta.splits and any(
        i in meta.splits and (not p or any(c in ifs for c in p)) for i, (p, _) in enumerate(parts)
    ):
        fields = split_fields(parts, meta.splits, ifs)
        return [make_word(f, meta, {}) for f in fields]
    w = make_word(parts, meta, meta.defaults)
    if node.type in ("word", "concatenation", "command_name") and "{" in w.text and not w.dynamic:
        # Only unquoted braces written in the command expand (before any expansion).
        marked = "".join(
            p if not q and i not in meta.splits else p.translate(_HIDE_BRACES)
            for i, (p, q) in enumerate(parts)
        )
        texts = [t.translate(_SHOW_BRACES) for t in expand_braces(marked)]
        if len(texts) > 1:
            return [
                replace(w, text=t, pattern=t if w.glob else escape_glob(t), fallback="")
                for t in texts
            ]
    return [w]


def word(walker: Walk, node: Any, ctx: Ctx) -> Word:
    parts: list[tuple[str, bool]] = []  # (text, quoted)
    meta = Meta()
    word_parts(walker, node, ctx, parts, meta, quoted=False, top=True)
    return make_word(parts, meta, meta.defaults)


def word_parts(
    walker: Walk,
    node: Any,
    ctx: Ctx,
    parts: list[tuple[str, bool]],
    meta: Meta,
    *,
    quoted: bool,
    top: bool = False,
) -> None:
    t = node.type
    if t in ("word", "number", "command_name", "special_variable_name"):
        if t == "command_name":
            for c in node.named_children:
                word_parts(walker, c, ctx, parts, meta, quoted=quoted, top=top)
            return
        raw = walker.t(node)
        if quoted:
            parts.append((raw, True))
            return
        if top and raw.startswith("~"):
            head, sep, rest = raw.partition("/")
            home = ctx.vars.get("HOME", home_dir()) if "HOME" in ctx.vars else home_dir()
            expanded = home if head == "~" else expand_tilde(head)
            parts.append((expanded, True))
            raw = sep + rest
        unescape_unquoted(raw, parts)
    elif t == "raw_string":
        parts.append((walker.t(node)[1:-1], True))
    elif t == "ansi_c_string":
        parts.append((decode_ansi_c(walker.t(node)[2:-1]), True))
    elif t in ("string", "translated_string"):
        had = len(parts)
        for child in node.children:
            ct = child.type
            if ct == "string_content":
                parts.append((unescape_double(walker.t(child)), True))
            elif child.is_named:
                word_parts(walker, child, ctx, parts, meta, quoted=True)
        if len(parts) == had:
            parts.append(("", True))  # "" is an empty word, not no word
    elif t == "concatenation":
        for i, child in enumerate(node.named_children):
            word_parts(walker, child, ctx, parts, meta, quoted=quoted, top=top and i == 0)
    elif t == "simple_expansion":
        name = "".join(walker.t(c) for c in node.named_children)
        add_expanded(var(name, ctx), quoted, parts, meta)
    elif t == "expansion":
        value = expansion(walker, node, ctx, meta)
        add_expanded(value, quoted, parts, meta)
        default = expansion_default(node, walker)
        if default is not None and DYN in value:
            meta.defaults[len(parts) - 1] = default
    elif t in ("command_substitution", "process_substitution"):
        meta.subst = True
        before = len(walker.out.commands)
        walker.visit(node, ctx)
        output = walker.last_output
        walker.last_output = None
        if downloads(walker.out.commands[before:]):
            meta.download = True
        if t == "command_substitution" and output is not None:
            add_expanded(output.rstrip("\n"), quoted, parts, meta)
        else:
            if t == "process_substitution" and output is not None:
                meta.content = output
            parts.append((DYN, True))
    elif t == "arithmetic_expansion":
        scan(walker, node, ctx, meta)
        parts.append((DYN, True))
    else:
        scan(walker, node, ctx, meta)
        parts.append((walker.t(node) if not node.named_children else DYN, quoted))


def add_expanded(value: str, quoted: bool, parts: list[tuple[str, bool]], meta: Meta) -> None:
    parts.append((value, True))
    if not quoted:
        meta.splits.add(len(parts) - 1)


def expansion(walker: Walk, node: Any, ctx: Ctx, meta: Meta) -> str:
    """The value of ``${...}`` when it can be known: ``${x}``, ``${!ref}``, ``${x,,}``,
    ``${x^^}``, ``${x@L}``, ``${#x}``, ``${x:1:2}``, ``${x/a/b}``, ``${x#p}``, ``${x%p}``."""
    children = node.children
    texts = [walker.t(c) for c in children]
    named = node.named_children
    for child in named:
        if child.type not in (
            "variable_name",
            "word",
            "number",
            "regex",
            "string",
            "raw_string",
        ):
            scan(walker, child, ctx, meta)
    names = [c for c in named if c.type == "variable_name"]
    if len(names) != 1:
        for child in named:
            scan(walker, child, ctx, meta)
        return DYN
    name = walker.t(names[0])
    inner = texts[1:-1] if texts[:1] == ["${"] and texts[-1:] == ["}"] else texts
    idx = inner.index(name) if name in inner else 0
    before, after = inner[:idx], inner[idx + 1 :]
    if before == ["!"] and not after:
        ref = var(name, ctx)
        return DYN if DYN in ref else var(ref, ctx)
    if before == ["#"] and not after:
        v = var(name, ctx)
        return DYN if DYN in v else str(len(v))
    if before:
        return DYN
    value = var(name, ctx)
    if not after:
        return value
    op = after[0]
    rest = "".join(after[1:])
    if op in (":-", "-", ":=", "=", ":?", "?", ":+", "+"):
        if DYN in value:
            return DYN
        alternative = _literal_default(rest)
        if op in (":+", "+"):
            return (alternative or DYN) if value else ""
        if op in (":-", ":=") and not value:
            return alternative if alternative is not None else DYN
        return value
    if DYN in value:
        return DYN
    if op == ",," or (op == "@" and rest == "L"):
        return value.lower()
    if op == "^^" or (op == "@" and rest == "U"):
        return value.upper()
    if op == ",":
        return value[:1].lower() + value[1:]
    if op == "^" or (op == "@" and rest == "u"):
        return value[:1].upper() + value[1:]
    if op == "@" and rest == "Q":
        return value
    if op == "@" and rest == "E":
        return decode_ansi_c(value)
    if op == ":" and all(p.lstrip("-").isdigit() or p == ":" for p in after[1:]):
        nums = [int(p) for p in after[1:] if p != ":"]
        start = nums[0] if nums else 0
        if start < 0:
            start = max(0, len(value) + start)
        if len(nums) > 1:
            end = start + nums[1] if nums[1] >= 0 else len(value) + nums[1]
            return value[start:end]
        return value[start:]
    literal = all(not any(ch in p for ch in "*?[$`\\") for p in after[1:])
    if op in ("/", "//") and literal:
        pieces = "".join(after[1:]).split("/", 1) if len(after) > 1 else [""]
        pat = pieces[0]
        rep = pieces[1] if len(pieces) > 1 else ""
        if not pat:
            return value
        return value.replace(pat, rep) if op == "//" else value.replace(pat, rep, 1)
    if op in ("#", "##") and literal:
        return value.removeprefix(rest)
    if op in ("%", "%%") and literal:
        return value.removesuffix(rest)
    return DYN


def scan(walker: Walk, node: Any, ctx: Ctx, meta: Meta) -> None:
    """Visit every substitution inside ``node`` (arithmetic, subscripts, defaults...)."""
    for child in node.named_children:
        if child.type in ("command_substitution", "process_substitution"):
            meta.subst = True
            before = len(walker.out.commands)
            walker.visit(child, ctx)
            walker.last_output = None
            if downloads(walker.out.commands[before:]):
                meta.download = True
        else:
            scan(walker, child, ctx, meta)


def var(name: str, ctx: Ctx) -> str:
    if name in ctx.vars:
        return ctx.vars[name]
    if name == "HOME":
        return home_dir()
    if name == "PWD" and ctx.cwd is not None:
        return ctx.cwd
    return DYN
