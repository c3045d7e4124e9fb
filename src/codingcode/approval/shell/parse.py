"""
A rule about ``sudo`` must see it in ``s\\udo id``, ``bash -c 'sudo id'``, ``x=$(sudo id)``,
``env FOO=1 nohup sudo id``, ``find . -exec sudo rm {} \\;`` and ``echo 'sudo id' | sh``, and
must *not* see it in ``git commit -m "drop sudo"``. So commands are parsed with the real
bash grammar (tree-sitter-bash), every simple command is found wherever it hides (lists,
pipes, subshells, groups, if/for/while/case, functions, ``$(...)``, backticks, process
substitution, arithmetic), words are resolved the way bash resolves them (quotes, escapes,
``$'...'``, braces, ``~``, known variables), wrappers and nested shells are looked through,
and whatever cannot be seen through (a program name computed at run time, ``eval`` of
something dynamic, a parse error) is reported as *opaque*: the rules then ask, never allow.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, cast

from codingcode.approval.paths import has_glob, home_dir, lexical
from codingcode.approval.shell.expand import (
    decode_ansi_c,
    expand_braces,
    expand_tilde,
    fallback_words,
    unescape_double,
    unescape_unquoted,
)
from codingcode.approval.shell.model import (
    DYN,
    MAX_COMMAND_CHARS,
    MAX_DEPTH,
    Analysis,
    Command,
    Redirect,
    Stdin,
    Word,
    escape_glob,
    join_words,
    literal_word,
)
from codingcode.approval.shell.programs import (
    DOWNLOADERS,
    RISKY_VARIABLES,
    SHELLS,
    SOURCE_BUILTINS,
    download_targets,
    invocation,
    is_interpreter,
)
from codingcode.approval.shell.wrappers import env_assignments, unwrap


# -- the parser -----------------------------------------------------------------------
@lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


@dataclass
class _Ctx:
    cwd: str | None
    vars: dict[str, str]
    depth: int
    via: tuple[str, ...] = ()
    stdin: Stdin | None = None

    def copy(self) -> _Ctx:
        return _Ctx(self.cwd, dict(self.vars), self.depth, self.via, self.stdin)


def analyze(command: str, cwd: str) -> Analysis:
    """Every simple command of ``command`` run in ``cwd``, and what could not be seen."""
    return _analyze_cached(command, cwd)


_LOCK = threading.Lock()


@lru_cache(maxsize=2048)
def _analyze_cached(command: str, cwd: str) -> Analysis:
    out = Analysis()
    if len(command) > MAX_COMMAND_CHARS:
        out.opaque.append(f"the command is longer than {MAX_COMMAND_CHARS} characters")
        return out
    try:
        with _LOCK:  # one parser, shared: tree-sitter parsers are not thread-safe
            _Walker(out).script(command, _Ctx(cwd, {}, 0))
    except (RecursionError, ValueError, UnicodeError) as exc:
        # Fail closed: what cannot be analysed is asked about, never allowed.
        out.opaque.append(f"the command could not be analysed ({type(exc).__name__})")
    return out


@dataclass
class _Source:
    """One parsed text: maps the parser's bytes back to the original characters."""

    parsed: bytes
    #: (byte offset in ``parsed``, original character) for every placeholder put in.
    astral: list[tuple[int, str]]

    def text(self, node: Any) -> str:
        start, end = node.start_byte, node.end_byte
        out = self.parsed[start:end].decode("utf-8", "surrogateescape")
        if not self.astral:
            return out
        import bisect

        i = bisect.bisect_left(self.astral, (start, ""))
        if i >= len(self.astral) or self.astral[i][0] >= end:
            return out
        pieces: list[str] = []
        pos = start
        while i < len(self.astral) and self.astral[i][0] < end:
            offset, char = self.astral[i]
            pieces.append(self.parsed[pos:offset].decode("utf-8", "surrogateescape"))
            pieces.append(char)
            pos = offset + len(ASTRAL_PLACEHOLDER.encode())
            i += 1
        pieces.append(self.parsed[pos:end].decode("utf-8", "surrogateescape"))
        return "".join(pieces)


def _source(text: str) -> _Source:
    if not _ASTRAL.search(text):
        return _Source(text.encode("utf-8", "surrogateescape"), [])
    parsed = bytearray()
    astral: list[tuple[int, str]] = []
    for ch in text:
        if ord(ch) >= 0x10000:
            astral.append((len(parsed), ch))
            parsed += ASTRAL_PLACEHOLDER.encode()
        else:
            parsed += ch.encode("utf-8", "surrogateescape")
    return _Source(bytes(parsed), astral)


class _Walker:
    def __init__(self, out: Analysis) -> None:
        self.out = out
        self._sources: list[_Source] = []
        self._seen: list[set[tuple[int, int]]] = []

    def t(self, node: Any) -> str:
        """The original text of a node of the tree being walked."""
        return self._sources[-1].text(node)

    # -- entry points ---------------------------------------------------------------
    def script(self, text: str, ctx: _Ctx) -> None:
        if ctx.depth > MAX_DEPTH:
            self.out.opaque.append("commands are nested too deeply to follow")
            return
        source = _source(text)
        tree = _parser().parse(source.parsed)
        root = tree.root_node
        if root.has_error:
            self.out.parse_error = True
            self.out.opaque.append("the command could not be parsed completely")
            self.out.fallback_words.extend(fallback_words(text))
        self._sources.append(source)
        self._seen.append(set())
        try:
            self.visit(root, ctx)
            # Safety net: a simple command the structured walk did not reach is still checked.
            for node in _iter_nodes(root):
                if node.type == "command" and _key(node) not in self._seen[-1]:
                    self.command(node, ctx.copy(), ())
        finally:
            self._sources.pop()
            self._seen.pop()

    # -- statements -----------------------------------------------------------------
    def visit(self, node: Any, ctx: _Ctx) -> None:
        t = node.type
        if t == "command":
            self.command(node, ctx, ())
        elif t == "redirected_statement":
            self.redirected(node, ctx)
        elif t == "pipeline":
            self.pipeline(node, ctx)
        elif t in ("subshell", "command_substitution", "process_substitution"):
            inner = ctx.copy()
            inner.stdin = None
            for child in node.named_children:
                self.visit(child, inner)
        elif t == "variable_assignment":
            self.assignment(node, ctx)
        elif t == "declaration_command":
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self.assignment(child, ctx)
                else:
                    self.word(child, ctx)
        elif t == "unset_command":
            for child in node.named_children:
                ctx.vars.pop(self.t(child), None)
        elif t in _WORD_TYPES:
            self.word(node, ctx)
        else:
            for child in node.named_children:
                self.visit(child, ctx)

    def note_assignment(self, name: str, *, prefix: bool = False) -> None:
        if name == "IFS" and not prefix:  # `IFS= read -r line` changes only that command
            # Word splitting of every later unquoted expansion now depends on it: what
            # `$x` becomes as a command line is no longer what the analysis sees.
            self.out.opaque.append("IFS is changed, so how words split is only known at run time")
        if name in RISKY_VARIABLES or name.startswith(("LD_", "DYLD_", "GIT_CONFIG")):
            self.out.risky_assignments.append(name)

    def assignment(self, node: Any, ctx: _Ctx) -> None:
        name = node.child_by_field_name("name")
        if name is not None:
            prefix = node.parent is not None and node.parent.type == "command"
            self.note_assignment(self.t(name), prefix=prefix)
        value = node.child_by_field_name("value")
        w = self.word(value, ctx) if value is not None else literal_word("")
        if name is not None:
            if w.dynamic:
                ctx.vars.pop(self.t(name), None)
            else:
                ctx.vars[self.t(name)] = w.text

    def pipeline(self, node: Any, ctx: _Ctx) -> None:
        before = len(self.out.commands)
        stage_start = before
        feed: Stdin | None = ctx.stdin
        for child in node.named_children:
            stage = ctx.copy()  # every stage of a pipeline runs in a subshell
            stage.stdin = feed
            self.visit(child, stage)
            produced = self.out.commands[stage_start:]
            stage_start = len(self.out.commands)
            upstream = self.out.commands[before:stage_start]
            feed = _pipe_feed(produced, upstream, feed)

    def redirected(self, node: Any, ctx: _Ctx) -> None:
        body = node.child_by_field_name("body")
        redirects = [c for c in node.named_children if c is not body]
        if body is not None and body.type == "command":
            self.command(body, ctx, redirects)
            return
        parsed = tuple(r for r in (self.redirect(c, ctx) for c in redirects) if r is not None)
        inner = ctx.copy()
        stdin = _stdin_from(parsed, self, ctx)
        if stdin is not None:
            inner.stdin = stdin
        if body is not None:
            self.visit(body, inner)
        if parsed:
            # Redirects of a compound statement still name files: record them on a
            # pseudo-command with no program so path rules see them.
            self.out.commands.append(Command((), ctx.cwd, parsed, via=ctx.via, transparent=True))

    def redirect(self, node: Any, ctx: _Ctx) -> Redirect | None:
        t = node.type
        if t == "file_redirect":
            op = "".join(self.t(c) for c in node.children if not c.is_named) or ">"
            dest = node.child_by_field_name("destination")
            if dest is None or (dest.type == "number" and "&" in op):
                return Redirect(op, None)
            return Redirect(op, self.word(dest, ctx))
        if t == "herestring_redirect":
            target = next((c for c in node.named_children), None)
            return Redirect("<<<", self.word(target, ctx) if target is not None else None)
        if t == "heredoc_redirect":
            body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
            if body is not None:
                for child in body.named_children:
                    self.visit(child, ctx)
            return Redirect("<<", None, heredoc=self.t(body) if body is not None else "")
        for child in node.named_children:
            self.visit(child, ctx)
        return None

    # -- simple commands ------------------------------------------------------------
    def command(self, node: Any, ctx: _Ctx, extra_redirects: Any) -> None:
        self._seen[-1].add(_key(node))
        assigns: list[tuple[str, Word]] = []
        argv: list[Word] = []
        redirect_nodes = list(extra_redirects)
        previous_end: int | None = None
        for i, child in enumerate(node.children):
            fieldname = node.field_name_for_child(i)
            joined = previous_end is not None and self._continued(previous_end, child.start_byte)
            previous_end = None
            if child.type == "variable_assignment":
                name = child.child_by_field_name("name")
                value = child.child_by_field_name("value")
                w = self.word(value, ctx) if value is not None else literal_word("")
                assigns.append((self.t(name) if name is not None else "", w))
            elif fieldname == "redirect" or child.type.endswith("_redirect"):
                redirect_nodes.append(child)
            elif (
                fieldname == "name"
                or fieldname == "argument"
                or (child.is_named and child.type in _WORD_TYPES)
            ):
                made = self.words(child, ctx)
                if joined and argv and made:
                    # `s\<newline>udo`: bash joins the pieces into one word; the grammar
                    # splits them, so join them back.
                    argv[-1] = join_words(argv[-1], made[0])
                    made = made[1:]
                argv.extend(made)
                previous_end = child.end_byte
        redirects = tuple(
            r for r in (self.redirect(c, ctx) for c in redirect_nodes) if r is not None
        )
        stdin = _stdin_from(redirects, self, ctx) or ctx.stdin
        cmd = Command(tuple(argv), ctx.cwd, redirects, stdin, ctx.via, assigns=tuple(assigns))
        self.emit(cmd, ctx)
        # `cd DIR` changes where later commands of this list run.
        if cmd.program in ("cd", "pushd") and not cmd.via:
            target = next((w for w in cmd.argv[1:] if not w.text.startswith("-")), None)
            if target is None:
                ctx.cwd = home_dir()
            elif target.dynamic or ctx.cwd is None or target.text == "-":
                ctx.cwd = None
            else:
                ctx.cwd = lexical(target.text, ctx.cwd)

    def _continued(self, end: int, start: int) -> bool:
        gap = self._sources[-1].parsed[end:start]
        return bool(gap) and gap.replace(b"\\\n", b"") == b""

    def emit(self, cmd: Command, ctx: _Ctx) -> None:
        """Record ``cmd`` and look through it: wrappers, nested shells, eval, find -exec."""
        out = self.out
        for name, _ in cmd.assigns:
            # before a program the assignment is that program's alone
            self.note_assignment(name, prefix=bool(cmd.argv))
        if cmd.program == "env":
            for name in env_assignments(cmd):
                self.note_assignment(name, prefix=True)
        if ctx.depth > MAX_DEPTH:
            out.opaque.append("commands are nested too deeply to follow")
            out.commands.append(cmd)
            return
        if not cmd.argv:
            out.commands.append(cmd)
            return
        first = cmd.argv[0]
        if first.dynamic:
            out.opaque.append(f"the program name {first.shown!r} is computed at run time")
        elif first.glob:
            out.program_globs.append(first.pattern)
            out.opaque.append(f"the program name {first.text!r} is a glob")
        prog = cmd.program
        inner = unwrap(cmd) if prog is not None else None
        if inner is not None:
            kind, payload = inner
            out.commands.append(replace(cmd, transparent=kind != "find"))
            if kind == "argv":
                words = cast("list[Word]", payload)
                if words:
                    self.emit(
                        replace(cmd, argv=tuple(words), via=(*cmd.via, prog or "")), _deeper(ctx)
                    )
            elif kind == "find":
                for argv in cast("list[list[Word]]", payload):
                    self.emit(replace(cmd, argv=tuple(argv), via=(*cmd.via, "find")), _deeper(ctx))
            elif kind == "script":
                assert isinstance(payload, Word)
                self.nested_script(payload, cmd, ctx, prog or "")
            return
        if prog == "eval":
            out.commands.append(cmd)
            joined = [w for w in cmd.argv[1:]]
            if any(w.download for w in joined):
                out.downloads_into_shell.append("eval of a downloaded script")
            if any(w.dynamic for w in joined):
                out.opaque.append("eval runs text only known at run time")
            elif joined:
                self.nested_script(literal_word(" ".join(w.text for w in joined)), cmd, ctx, "eval")
            return
        if prog in SHELLS or (prog is not None and is_interpreter(prog)):
            out.commands.append(cmd)
            self.shell_like(cmd, ctx, prog)
            return
        if prog in ("at", "batch"):
            # at/batch run the script they read on stdin (or from -f FILE) later.
            out.commands.append(cmd)
            stdin = cmd.stdin
            if stdin is not None and stdin.download:
                out.downloads_into_shell.append(f"a download is fed into {prog}")
            elif stdin is not None and stdin.text is not None:
                self.nested_script(literal_word(stdin.text), cmd, ctx, prog)
            elif stdin is not None and stdin.opaque:
                out.opaque.append(f"{prog} runs a script only known at run time")
            return
        if prog in SOURCE_BUILTINS:
            out.commands.append(cmd)
            if any(w.download for w in cmd.argv[1:]) or (cmd.stdin and cmd.stdin.download):
                out.downloads_into_shell.append(f"{prog} of a downloaded script")
            return
        if prog == "alias":
            # With expand_aliases an alias runs its value: look at it as a command line.
            out.commands.append(cmd)
            for w in cmd.argv[1:]:
                if "=" in w.text:
                    value = replace(w, text=w.text.split("=", 1)[1], fallback="")
                    self.nested_script(value, cmd, ctx, "alias")
            return
        if prog == "trap" and len(cmd.argv) > 2:
            out.commands.append(cmd)
            self.nested_script(cmd.argv[1], cmd, ctx, "trap")
            return
        out.commands.append(cmd)
        if prog in DOWNLOADERS:
            out.downloaded_files |= download_targets(cmd)

    def shell_like(self, cmd: Command, ctx: _Ctx, prog: str) -> None:
        """A shell or interpreter: what code it runs (-c/-e, a file, or stdin)."""
        out = self.out
        inv = invocation(cmd, prog)
        is_shell = prog in SHELLS
        if "xargs" in cmd.via and cmd.stdin is not None and cmd.stdin.download:
            out.downloads_into_shell.append(f"xargs hands a download to {prog}")
        if inv.code is not None:
            if inv.code.download:
                out.downloads_into_shell.append(f"{prog} runs a downloaded script")
            if is_shell:
                self.nested_script(inv.code, cmd, ctx, prog)
            return
        if inv.script is not None:
            if inv.script.download:
                out.downloads_into_shell.append(f"{prog} runs a downloaded script")
            return
        stdin = cmd.stdin
        if stdin is None:
            return
        if stdin.download:
            out.downloads_into_shell.append(f"a download is fed into {prog}")
        elif stdin.text is not None and is_shell:
            self.nested_script(literal_word(stdin.text), cmd, ctx, prog)
        elif stdin.opaque:
            out.opaque.append(f"{prog} runs a script from stdin that is only known at run time")

    def nested_script(self, code: Word, cmd: Command, ctx: _Ctx, via: str) -> None:
        if code.dynamic:
            if code.download:
                self.out.downloads_into_shell.append(f"{via} runs a downloaded script")
            self.out.opaque.append(f"{via} runs code only known at run time")
            return
        inner = _deeper(ctx)
        inner.cwd = cmd.cwd
        inner.via = (*cmd.via, via)
        inner.stdin = None
        self.script(code.text, inner)

    # -- words ----------------------------------------------------------------------
    def words(self, node: Any, ctx: _Ctx) -> list[Word]:
        """A word node as the words bash makes of it (brace expansion can make several)."""
        w = self.word(node, ctx)
        if node.type in ("word", "concatenation") and "{" in w.text and not w.dynamic:
            texts = expand_braces(w.text)
            if len(texts) > 1:
                return [
                    replace(w, text=t, pattern=t if w.glob else escape_glob(t), fallback="")
                    for t in texts
                ]
        return [w]

    def word(self, node: Any, ctx: _Ctx) -> Word:
        parts: list[tuple[str, bool]] = []  # (text, quoted)
        flags = {"download": False, "subst": False}
        defaults: dict[int, str] = {}  # part index -> the literal ${X:-default} falls back to
        self._word_parts(node, ctx, parts, flags, quoted=False, top=True, defaults=defaults)
        text = "".join(p for p, _ in parts)
        fallback = "".join(defaults.get(i, p.replace(DYN, "")) for i, (p, _) in enumerate(parts))
        glob = any(not q and has_glob(p.replace(DYN, "")) for p, q in parts)
        pattern = "".join(
            (p.replace(DYN, "*") if not q else escape_glob(p).replace(DYN, "*")) for p, q in parts
        )
        return Word(text, glob, pattern, flags["download"], flags["subst"], fallback)

    def _word_parts(
        self,
        node: Any,
        ctx: _Ctx,
        parts: list[tuple[str, bool]],
        flags: dict[str, bool],
        *,
        quoted: bool,
        top: bool = False,
        defaults: dict[int, str] | None = None,
    ) -> None:
        t = node.type
        if t in ("word", "number", "command_name", "special_variable_name"):
            if t == "command_name":
                for c in node.named_children:
                    self._word_parts(
                        c, ctx, parts, flags, quoted=quoted, top=top, defaults=defaults
                    )
                return
            raw = self.t(node)
            if quoted:
                parts.append((raw, True))
                return
            if top and raw.startswith("~"):
                head, sep, rest = raw.partition("/")
                expanded = home_dir() if head == "~" else expand_tilde(head)
                parts.append((expanded, True))
                raw = sep + rest
            unescape_unquoted(raw, parts)
        elif t == "raw_string":
            parts.append((self.t(node)[1:-1], True))
        elif t == "ansi_c_string":
            parts.append((decode_ansi_c(self.t(node)[2:-1]), True))
        elif t in ("string", "translated_string"):
            for child in node.children:
                ct = child.type
                if ct == "string_content":
                    parts.append((unescape_double(self.t(child)), True))
                elif child.is_named:
                    self._word_parts(child, ctx, parts, flags, quoted=True, defaults=defaults)
        elif t == "concatenation":
            for i, child in enumerate(node.named_children):
                self._word_parts(
                    child, ctx, parts, flags, quoted=quoted, top=top and i == 0, defaults=defaults
                )
            # tree-sitter splits `{a,b}` into separate words; keep unnamed pieces too
        elif t == "simple_expansion":
            name = "".join(self.t(c) for c in node.named_children)
            parts.append((self._var(name, ctx), True))
        elif t == "expansion":
            named = node.named_children
            if len(named) == 1 and named[0].type == "variable_name":
                parts.append((self._var(self.t(named[0]), ctx), True))
                default = _expansion_default(node, self)
                if default is not None and defaults is not None and DYN in parts[-1][0]:
                    defaults[len(parts) - 1] = default
            else:
                for child in named:
                    self._scan(child, ctx, flags)
                parts.append((DYN, True))
                default = _expansion_default(node, self)
                if default is not None and defaults is not None:
                    defaults[len(parts) - 1] = default
        elif t in ("command_substitution", "process_substitution"):
            flags["subst"] = True
            before = len(self.out.commands)
            self.visit(node, ctx)
            if any(c.program in DOWNLOADERS for c in self.out.commands[before:]):
                flags["download"] = True
            parts.append((DYN, True))
        elif t == "arithmetic_expansion":
            self._scan(node, ctx, flags)
            parts.append((DYN, True))
        else:
            self._scan(node, ctx, flags)
            parts.append((self.t(node) if not node.named_children else DYN, quoted))

    def _scan(self, node: Any, ctx: _Ctx, flags: dict[str, bool]) -> None:
        """Visit every substitution inside ``node`` (arithmetic, subscripts, defaults...)."""
        for child in node.named_children:
            if child.type in ("command_substitution", "process_substitution"):
                flags["subst"] = True
                before = len(self.out.commands)
                self.visit(child, ctx)
                if any(c.program in DOWNLOADERS for c in self.out.commands[before:]):
                    flags["download"] = True
            else:
                self._scan(child, ctx, flags)

    @staticmethod
    def _var(name: str, ctx: _Ctx) -> str:
        if name in ctx.vars:
            return ctx.vars[name]
        if name == "HOME":
            return home_dir()
        if name == "PWD" and ctx.cwd is not None:
            return ctx.cwd
        return DYN


_WORD_TYPES = frozenset(
    {
        "word",
        "string",
        "raw_string",
        "ansi_c_string",
        "concatenation",
        "simple_expansion",
        "expansion",
        "number",
        "translated_string",
        "arithmetic_expansion",
        "command_name",
    }
)


#: Stands in for a character outside the Basic Multilingual Plane while parsing:
#: tree-sitter-bash 0.25.1 can crash the process (SIGSEGV) on a ``{`` followed by a 4-byte
#: UTF-8 sequence (tree-sitter/tree-sitter-bash#337). No such character is a shell
#: metacharacter, so a plain word character in its place leaves the structure unchanged,
#: and every node's text is mapped back to the original characters (``_Source.text``).
ASTRAL_PLACEHOLDER = "\ue000"
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _deeper(ctx: _Ctx) -> _Ctx:
    inner = ctx.copy()
    inner.depth += 1
    return inner


def _key(node: Any) -> tuple[int, int]:
    return (node.start_byte, node.end_byte)


def _iter_nodes(root: Any) -> Iterator[Any]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


# -- stdin: what feeds a shell ----------------------------------------------------------
def _pipe_feed(produced: list[Command], upstream: list[Command], before: Stdin | None) -> Stdin:
    """What the next stage of a pipeline reads, given the commands upstream of it."""
    download = any(c.program in DOWNLOADERS for c in upstream) or bool(before and before.download)
    download = download or any(
        r.target is not None and r.target.text.startswith(("/dev/tcp/", "/dev/udp/"))
        for c in upstream
        for r in c.redirects
    )
    if download:
        return Stdin("pipe", download=True)
    real = [c for c in produced if c.argv and not c.transparent]
    if (
        len(real) == 1
        and real[0].program in ("echo", "printf")
        and all(not w.dynamic for w in real[0].argv[1:])
    ):
        words = [w.text for w in real[0].argv[1:]]
        if real[0].program == "echo":
            escapes = "-e" in words
            words = [w for w in words if w not in ("-n", "-e", "-E")]
            text = " ".join(words)
            return Stdin("pipe", text=decode_ansi_c(text) if escapes else text)
        return Stdin("pipe", text=decode_ansi_c(words[0]) if words else "")
    if len(real) == 1 and real[0].program == "cat" and real[0].stdin is None:
        return Stdin("pipe")  # a file's content: like running the file
    return Stdin("pipe", opaque=True)


def _stdin_from(redirects: tuple[Redirect, ...], walker: _Walker, ctx: _Ctx) -> Stdin | None:
    for r in redirects:
        if r.op == "<<<" and r.target is not None:
            if r.target.download:
                return Stdin("herestring", download=True)
            if r.target.dynamic:
                return Stdin("herestring", opaque=True)
            return Stdin("herestring", text=r.target.text)
        if r.op == "<<":
            return Stdin("heredoc", text=r.heredoc or "")
        if r.op == "<" and r.target is not None:
            t = r.target
            if t.download or t.text.startswith(("/dev/tcp/", "/dev/udp/")):
                return Stdin("file", download=True)
            return Stdin("file", opaque=t.subst)
    return None


def _expansion_default(node: Any, walker: _Walker) -> str | None:
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
