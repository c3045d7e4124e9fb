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

import base64
import binascii
import gc
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, cast

from codingcode.paths import has_glob, home_dir, lexical
from codingcode.shell.cache import BoundedLRU
from codingcode.shell.expand import (
    decode_ansi_c,
    expand_braces,
    expand_tilde,
    fallback_words,
    unescape_double,
    unescape_unquoted,
)
from codingcode.shell.model import (
    DYN,
    MAX_COMMAND_CHARS,
    MAX_COMMANDS,
    MAX_DEPTH,
    MAX_NESTED_CHARS,
    Analysis,
    Command,
    Redirect,
    Stdin,
    Word,
    escape_glob,
    join_words,
    literal_word,
)
from codingcode.shell.programs import (
    DOWNLOADERS,
    NON_RUNNERS,
    RISKY_VARIABLES,
    SHELLS,
    SOURCE_BUILTINS,
    download_targets,
    invocation,
    is_interpreter,
)
from codingcode.shell.runners import code_parts, look_inside, makefile_scripts
from codingcode.shell.wrappers import env_pairs, unwrap


# -- the parser -----------------------------------------------------------------------
@lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


#: Programs whose arguments name files they write (``record_writes``).
_WRITERS = frozenset({"tee", "cp", "mv", "install", "ln", "dd"})

#: ``=`` count times ``|`` count beyond which a text is not parsed (see ``script``).
MAX_ASSIGN_PIPE_PRODUCT = 4_000_000


@dataclass
class _Ctx:
    cwd: str | None
    vars: dict[str, str]
    depth: int
    via: tuple[str, ...] = ()
    stdin: Stdin | None = None
    #: False while ``vars`` is shared with the context it was copied from: copied on the
    #: first write (a 20,000-stage pipeline after 20,000 assignments stays linear).
    owns_vars: bool = True

    def copy(self) -> _Ctx:
        self.owns_vars = False
        return _Ctx(self.cwd, self.vars, self.depth, self.via, self.stdin, owns_vars=False)

    def set_vars(self) -> dict[str, str]:
        """``vars``, to change (this context's own copy)."""
        if not self.owns_vars:
            self.vars = dict(self.vars)
            self.owns_vars = True
        return self.vars


def analyze(command: str, cwd: str) -> Analysis:
    """Every simple command of ``command`` run in ``cwd``, and what could not be seen.

    A pure function of the text and ``cwd`` (it reads no file; ``$HOME`` is taken as fixed
    for the process, as :func:`codingcode.paths.lexical` takes it), so it is
    cached in a cache bounded by entries and by size (ANALYSES). The result is shared:
    callers read it, never change it."""
    key = (command, cwd)
    found = ANALYSES.get(key)
    if found is None:
        found = _analyze_fresh(command, cwd)
        ANALYSES.put(key, found, analysis_weight(command, found))
    return found


#: At most this many analyses, of at most this weight in all (about 40 MB).
MAX_CACHED_ANALYSES = 2048
MAX_CACHED_WEIGHT = 400_000


def analysis_weight(command: str, analysis: Analysis) -> int:
    """About the memory an analysis holds, in units of ~100 bytes: its text, its simple
    commands (~300 bytes each) and their words (~400 bytes each, measured)."""
    return 1 + len(command) // 100 + sum(3 + 4 * len(c.argv) for c in analysis.commands)


ANALYSES: BoundedLRU[tuple[str, str], Analysis] = BoundedLRU(MAX_CACHED_ANALYSES, MAX_CACHED_WEIGHT)

_LOCK = threading.Lock()


def _analyze_fresh(command: str, cwd: str) -> Analysis:
    out = Analysis()
    if len(command) > MAX_COMMAND_CHARS:
        out.opaque.append(f"the command is longer than {MAX_COMMAND_CHARS} characters")
        return out
    try:
        with _LOCK, _gc_paused():  # one parser, shared: tree-sitter parsers are not thread-safe
            walker = _Walker(out)
            walker.script(command, _Ctx(cwd, {}, 0))
            walker.finish()
    except (RecursionError, ValueError, UnicodeError) as exc:
        # Fail closed: what cannot be analysed is asked about, never allowed.
        out.opaque.append(f"the command could not be analysed ({type(exc).__name__})")
    return out


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while one line is analysed.

    An analysis makes several small objects per simple command and keeps them all until it
    ends (a 20,000-stage pipeline: ~100,000), so the collector's passes over them cost a
    quarter of the decision. Nothing the walk makes forms a cycle that must be freed early:
    reference counting frees the rest, and the collector runs again as soon as the analysis,
    bounded by MAX_COMMAND_CHARS and MAX_COMMANDS, ends.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


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
        #: What the statement just visited prints, when known (for ``$(...)``, pipes).
        self.last_output: str | None = None
        #: Nested script text parsed so far (bounded by MAX_NESTED_CHARS).
        self.nested_chars = 0
        self.over_budget = False
        #: Files this line wrote that start a shell or run commands, with the number of
        #: commands seen when they were written.
        self.active_files: list[tuple[str, int]] = []
        #: Redirects the grammar hung on a list or pipeline that bash gives to its last
        #: simple command (``a && sh 2>/dev/null -c CMD``), by (source depth, node key).
        self._attached: dict[tuple[int, tuple[int, int]], list[Any]] = {}
        #: Shell functions defined in this line (their bodies are looked at where defined).
        self.functions: set[str] = set()

    def finish(self) -> None:
        """After the walk: a file written with commands in it, then an unknown program."""
        for path, index in self.active_files:
            for c in self.out.commands[index:]:
                prog = c.program
                if (
                    prog is not None
                    and prog not in _ONLY_READS
                    and prog not in SHELLS
                    and prog not in SOURCE_BUILTINS
                    and prog != "eval"  # its text is looked at itself
                    and prog not in self.functions
                    and not is_interpreter(prog)
                    and not c.transparent
                    and not ("/" in c.argv[0].text and self.written(c.argv[0], c.cwd))
                ):
                    self.opaque(f"{path} is written with commands in it, and {prog} may run them")
                    return

    def opaque(self, reason: str) -> None:
        self.out.opaque.append(reason)

    def add(self, cmd: Command) -> None:
        if len(self.out.commands) >= MAX_COMMANDS:
            if not self.over_budget:
                self.over_budget = True
                self.opaque(
                    f"the command holds more than {MAX_COMMANDS} simple commands "
                    "(the analysis stops there)"
                )
            return
        self.out.commands.append(cmd)

    def mark_opaque(self, cmd: Command, reason: str) -> Command:
        """Record ``reason`` for the line and flag ``cmd`` (already added) with it."""
        self.opaque(reason)
        flagged = replace(cmd, opaque=reason)
        cmds = self.out.commands
        for i in range(len(cmds) - 1, max(-1, len(cmds) - 64), -1):
            if cmds[i] is cmd:
                cmds[i] = flagged
                break
        return flagged

    def t(self, node: Any) -> str:
        """The original text of a node of the tree being walked."""
        return self._sources[-1].text(node)

    # -- entry points ---------------------------------------------------------------
    def script(self, text: str, ctx: _Ctx) -> None:
        if ctx.depth > MAX_DEPTH:
            self.opaque("commands are nested too deeply to follow")
            return
        if ctx.depth > 0:
            self.nested_chars += len(text)
            if self.nested_chars > MAX_NESTED_CHARS:
                self.opaque(
                    f"more than {MAX_NESTED_CHARS} characters of nested scripts "
                    "(the analysis stops there)"
                )
                return
        if text.count("=") * text.count("|") > MAX_ASSIGN_PIPE_PRODUCT:
            # tree-sitter-bash parses assignments followed by a long pipeline in time that
            # grows with their product (4,000 of each: ~0.7 s): such a line is asked about
            self.opaque(
                "the command has too many assignments and pipeline stages together to be "
                "analysed in bounded time"
            )
            return
        if "coproc" in text:
            # `coproc [NAME] { ...; }`: the grammar does not know it; the body is an
            # ordinary compound command for the analysis.
            text = _COPROC.sub(lambda m: " " * len(m.group(0)), text)
        source = _source(text)
        tree = _parser().parse(source.parsed)
        root = tree.root_node
        if root.has_error:
            self.out.parse_error = True
            self.opaque("the command could not be parsed completely")
            self.out.fallback_words.extend(fallback_words(text))
        self._sources.append(source)
        self._seen.append(set())
        try:
            self.visit(root, ctx)
            # Safety net: a simple command the structured walk did not reach is still checked.
            seen = self._seen[-1]
            missed = [n for n in _command_nodes(root) if _key(n) not in seen]
            # in the order of the text, an enclosing command before the ones inside it (the
            # query's own order varies from run to run)
            missed.sort(key=lambda n: (n.start_byte, -n.end_byte))
            for node in missed:
                if _key(node) not in seen:  # (walking one may reach the next)
                    self.command(node, ctx.copy(), ())
        finally:
            self._sources.pop()
            self._seen.pop()

    # -- statements -----------------------------------------------------------------
    def visit(self, node: Any, ctx: _Ctx) -> None:
        t = node.type
        self.last_output = None
        if t == "command":
            attached = (
                self._attached.pop((len(self._sources), _key(node)), ()) if self._attached else ()
            )
            self.command(node, ctx, attached)
        elif t == "redirected_statement":
            self.redirected(node, ctx)
        elif t == "pipeline":
            self.pipeline(node, ctx)
        elif t in ("subshell", "command_substitution", "process_substitution"):
            inner = ctx.copy()
            inner.stdin = None
            named = node.named_children
            bare = [c for c in named if c.type.endswith("_redirect")]
            if t == "command_substitution" and bare and len(bare) == len(named):
                # $(<FILE): the content of FILE, read by the shell itself
                parsed = tuple(r for r in (self.redirect(c, inner) for c in bare) if r)
                self.add(Command((), ctx.cwd, parsed, via=ctx.via, transparent=True))
                self.last_output = None
                for r in parsed:
                    if r.op == "<" and r.target is not None and ctx.cwd is not None:
                        self.last_output = self.file_content(r.target, ctx.cwd)
                return
            for child in named:
                self.visit(child, inner)
            if len(named) != 1:
                self.last_output = None
        elif t == "variable_assignment":
            self.assignment(node, ctx)
        elif t == "declaration_command":
            flags = "".join(self.t(c) for c in node.named_children if self.t(c).startswith("-"))
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self.assignment(child, ctx, case=_declared_case(flags))
                else:
                    self.word(child, ctx)
        elif t == "unset_command":
            for child in node.named_children:
                ctx.set_vars().pop(self.t(child), None)
        elif t in _WORD_TYPES:
            self.word(node, ctx)
        elif t == "list":
            # `a && b || c ...` nests to the left: walk the spine without recursing
            rights = []
            while node.type == "list" and node.named_children:
                kids = node.named_children
                rights.extend(reversed(kids[1:]))
                node = kids[0]
            self.visit(node, ctx)
            for child in reversed(rights):
                self.visit(child, ctx)
            self.last_output = None
        elif t == "compound_statement" and len(node.named_children) == 1:
            self.visit(node.named_children[0], ctx)
        elif t == "function_definition":
            # A function's body runs whenever it is called: look at it as if it ran here.
            name = node.child_by_field_name("name")
            if name is not None:
                self.functions.add(self.t(name))
            for child in node.named_children:
                self.visit(child, ctx.copy())
            self.last_output = None
        else:
            for child in node.named_children:
                self.visit(child, ctx)
            self.last_output = None

    def note_assignment(self, name: str, *, prefix: bool = False) -> None:
        if name in RISKY_VARIABLES or name.startswith(("LD_", "DYLD_", "GIT_CONFIG")):
            self.out.risky_assignments.append(name)

    def env_effect(self, name: str, value: Word, cmd: Command | None, ctx: _Ctx) -> None:
        """Variables that make bash or another program run code: look at that code."""
        where = cmd or Command((), ctx.cwd, via=ctx.via)
        if name.startswith(("BASH_FUNC_", "BASH_ALIASES", "BASH_CMDS")):
            self.opaque(f"{name} defines code the shell runs later")
        elif name == "SHELL" and cmd is not None and cmd.argv:
            if value.dynamic or value.text.rsplit("/", 1)[-1] not in SHELLS:
                self.opaque("SHELL names a program that tools (script, make, vim...) run")
        elif name in CODE_VARIABLES:
            text = value.text
            if name == "LESSOPEN" and not text.startswith(("|", "-")):
                # its output names the file less shows instead: any path in it is read
                for token in text.split():
                    if token.startswith(("/", "~", ".")):
                        target = (Redirect("<", literal_word(token)),)
                        self.add(Command((), ctx.cwd, target, via=ctx.via, transparent=True))
            if name == "LESSOPEN" or name == "LESSCLOSE":
                text = text.lstrip("|-")
            self.nested_script(replace(value, text=text), where, ctx, name)
        elif name in PROMPT_VARIABLES:
            # prompts are expanded: the command substitutions in them run
            self.nested_script(replace(value, text=": " + value.text), where, ctx, name)
        elif name in SOURCED_VARIABLES:
            self.run_file(value, where, ctx, name)
        elif name in ("LD_PRELOAD", "LD_AUDIT"):
            self.opaque(f"{name} loads a library into every program that runs")
        elif name == "IFS" and value.dynamic:
            self.opaque("IFS is set to something only known at run time")

    def assignment(self, node: Any, ctx: _Ctx, case: str = "") -> None:
        name_node = node.child_by_field_name("name")
        name = self.t(name_node) if name_node is not None else ""
        if name_node is not None and name_node.type == "subscript":
            array = name.split("[", 1)[0]
            ctx.set_vars().pop(array, None)
            if array in ("BASH_ALIASES", "BASH_CMDS"):
                self.opaque(f"{array}[...] defines a command the shell runs later")
            return
        prefix = node.parent is not None and node.parent.type == "command"
        self.note_assignment(name, prefix=prefix)
        value = node.child_by_field_name("value")
        if value is not None and value.type == "array":
            for child in value.named_children:
                self.word(child, ctx)
            ctx.set_vars().pop(name, None)
            return
        w = self.word(value, ctx) if value is not None else literal_word("")
        appended = any(c.type == "+=" for c in node.children)
        if appended and name in ctx.vars:
            w = replace(w, text=ctx.vars[name] + w.text)
        elif appended:
            w = replace(w, text=DYN + w.text)
        attribute = f"{DYN}case:{name}"  # declare -l/-u stays with the variable
        if case:
            ctx.set_vars()[attribute] = case
        case = ctx.vars.get(attribute, "")
        if case == "lower":
            w = replace(w, text=w.text.lower())
        elif case == "upper":
            w = replace(w, text=w.text.upper())
        if not prefix:
            self.env_effect(name, w, None, ctx)
        if name:
            if w.dynamic:
                ctx.set_vars().pop(name, None)
            else:
                ctx.set_vars()[name] = w.text

    def pipeline(self, node: Any, ctx: _Ctx) -> None:
        feed: Stdin | None = ctx.stdin
        download = bool(feed and feed.download)
        for child in node.named_children:
            if child.type in ("|", "|&"):
                continue
            stage = ctx.copy()  # every stage of a pipeline runs in a subshell
            stage.stdin = feed
            start = len(self.out.commands)
            self.visit(child, stage)
            produced = self.out.commands[start:]
            download = download or _downloads(produced)
            if download:
                feed = Stdin("pipe", download=True)
            elif self.last_output is not None:
                feed = Stdin("pipe", text=self.last_output)
            else:
                feed = _pipe_feed(produced)
        self.last_output = feed.text if feed is not None else None

    def redirected(self, node: Any, ctx: _Ctx) -> None:
        body = node.child_by_field_name("body")
        redirects = [c for c in node.named_children if c.type.endswith("_redirect")]
        if body is not None and body.type == "command":
            self.command(body, ctx, redirects)
            return
        last = _last_simple_command(body) if body is not None else None
        if last is not None and redirects:
            # `a && b 2>x c`, `a | b 2>x c`: the redirects are the last command's
            self._attached[(len(self._sources), _key(last))] = redirects
            self.visit(body, ctx)
            self._attached.pop((len(self._sources), _key(last)), None)
            return
        parsed = tuple(r for r in (self.redirect(c, ctx) for c in redirects) if r is not None)
        inner = ctx.copy()
        stdin = _stdin_from(parsed, self, ctx)
        if stdin is not None:
            inner.stdin = stdin
        if body is not None:
            self.visit(body, inner)
        output = self.last_output
        if parsed:
            # Redirects of a compound statement still name files: record them on a
            # pseudo-command with no program so path rules see them.
            pseudo = Command((), ctx.cwd, parsed, via=ctx.via, transparent=True)
            self.add(pseudo)
            self.record_writes(pseudo, output)
            self.last_output = None if any(">" in r.op for r in parsed) else output

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
            text = self.t(body) if body is not None else ""
            if body is not None and any(
                c.type in ("simple_expansion", "expansion", "command_substitution")
                for c in body.named_children
            ):
                text = DYN + text  # an unquoted here-doc expands: its text is only partly known
            return Redirect("<<", None, heredoc=text)
        for child in node.named_children:
            self.visit(child, ctx)
        return None

    # -- simple commands ------------------------------------------------------------
    def command(self, node: Any, ctx: _Ctx, extra_redirects: Any) -> None:
        # The hot path of every analysis (a 20,000-stage pipeline is 20,000 of these): each
        # read of a node property builds Python objects, so each is read once.
        self._seen[-1].add(_key(node))
        assigns: list[tuple[str, Word]] = []
        argv: list[Word] = []
        redirect_nodes = list(extra_redirects)
        previous_end: int | None = None
        source = self._sources[-1]
        children = node.children  # one list (each .children call builds a new one)
        last = len(children) - 1
        for i, child in enumerate(children):
            joined = previous_end is not None and self._continued(previous_end, child.start_byte)
            previous_end = None
            ctype = child.type
            if ctype == "variable_assignment":
                name = child.child_by_field_name("name")
                value = child.child_by_field_name("value")
                w = self.word(value, ctx) if value is not None else literal_word("")
                assigns.append((self.t(name) if name is not None else "", w))
            elif ctype.endswith("_redirect"):  # the grammar's `redirect` field
                redirect_nodes.append(child)
            elif (
                ctype == "command_name"  # the grammar's `name` field, and only it
                or (child.is_named and ctype in _WORD_TYPES)
                or node.field_name_for_child(i) == "argument"
            ):
                nxt = children[i + 1] if i < last else None
                if nxt is None and extra_redirects:
                    # `sh 0<&2`: the grammar puts the `0` in the command and the redirect
                    # in the statement around it
                    nxt = extra_redirects[0]
                if (
                    ctype != "command_name"
                    and nxt is not None
                    and nxt.type.endswith("_redirect")
                    and nxt.start_byte == child.end_byte
                    and self.t(child).isdigit()
                ):
                    continue  # `0<<<...`: a file descriptor number, not an argument
                end = child.end_byte
                made: list[Word] | None = None
                if (ctype == "word" or ctype == "command_name") and not source.astral:
                    # the common case, a plain word with nothing to expand (as ``words``)
                    raw = source.parsed[child.start_byte : end].decode("utf-8", "surrogateescape")
                    if _PLAIN_WORD.fullmatch(raw):
                        made = [Word(raw, False, raw, fallback=raw)]
                if made is None:
                    made = self.words(child, ctx)
                if joined and argv and made:
                    # `s\<newline>udo`: bash joins the pieces into one word; the grammar
                    # splits them, so join them back.
                    argv[-1] = join_words(argv[-1], made[0])
                    made = made[1:]
                argv.extend(made)
                previous_end = end
        for j, rnode in enumerate(redirect_nodes):
            # `cat 2>/dev/null /etc/shadow`: the grammar puts words after a redirect in the
            # redirect; bash gives them to the command
            extra = _words_after_redirect(rnode)
            nxt = redirect_nodes[j + 1] if j + 1 < len(redirect_nodes) else None
            for k, e in enumerate(extra):
                if (
                    k == len(extra) - 1
                    and nxt is not None
                    and e.end_byte == nxt.start_byte
                    and self.t(e).isdigit()
                ):
                    continue  # `2>&1 0<&3`: the fd number of the next redirect
                argv.extend(self.words(e, ctx))
        if redirect_nodes:
            redirects = tuple(
                r for r in (self.redirect(c, ctx) for c in redirect_nodes) if r is not None
            )
            stdin = _stdin_from(redirects, self, ctx) or ctx.stdin
        else:
            redirects, stdin = (), ctx.stdin
        cmd = Command(tuple(argv), ctx.cwd, redirects, stdin, ctx.via, assigns=tuple(assigns))
        self.emit(cmd, ctx)
        output = static_output(cmd, self)
        prog = cmd.program
        if redirects:
            self.record_writes(cmd, output)
            if any(">" in r.op for r in redirects):
                output = None
        elif prog in _WRITERS:
            self.record_writes(cmd, output)
        self.last_output = output
        # `cd DIR` changes where later commands of this list run.
        if (prog == "cd" or prog == "pushd") and not cmd.via:
            target = next((w for w in cmd.argv[1:] if not w.text.startswith("-")), None)
            if target is None:
                ctx.cwd = ctx.vars.get("HOME", home_dir())
            elif target.dynamic or ctx.cwd is None or target.text == "-":
                ctx.cwd = None
            else:
                ctx.cwd = lexical(target.text, ctx.cwd)

    def _continued(self, end: int, start: int) -> bool:
        gap = self._sources[-1].parsed[end:start]
        return bool(gap) and gap.replace(b"\\\n", b"") == b""

    # -- files written and run in the same line ------------------------------------
    def record_writes(self, cmd: Command, output: str | None) -> None:
        files = self.out.written_files
        before = len(files)
        cwd = cmd.cwd
        for r in cmd.redirects:
            if r.target is None or ">" not in r.op or r.target.text == "/dev/null":
                continue
            if r.target.dynamic or cwd is None:
                continue
            path = lexical(r.target.text, cwd)
            if r.op.endswith(">>") and path in files:
                old = files[path]
                files[path] = None if old is None or output is None else old + output
            else:
                files[path] = output
        prog = cmd.program
        if cwd is None or prog is None:
            self._check_written(before)
            return
        args = [w for w in cmd.argv[1:] if not w.text.startswith("-")]
        targets: list[tuple[Word, str | None]] = []
        if prog == "tee":
            text = cmd.stdin.text if cmd.stdin is not None else None
            targets = [(w, text) for w in args]
        elif prog in ("cp", "mv", "install", "ln") and len(args) >= 2:
            src = args[0]
            known = None if src.dynamic else files.get(lexical(src.text, cwd))
            targets = [(args[-1], known)]
        elif prog == "dd":
            targets = [(literal_word(w.text[3:]), None) for w in args if w.text.startswith("of=")]
        for w, content in targets:
            if not w.dynamic:
                files[lexical(w.text, cwd)] = content
        self._check_written(before)

    def _check_written(self, before: int) -> None:
        for path in list(self.out.written_files)[before:]:
            content = self.out.written_files[path]
            if content is not None and _RUNS_SOMETHING.search(content):
                # a config file or script that starts a shell or runs commands: a later
                # program of this line may run it (Gemfile, ansible playbook, .conf ...)
                self.active_files.append((path, len(self.out.commands)))
            if "/.git/hooks/" in path or path.endswith(("/.git/config", "/.gitconfig")):
                self.opaque(f"{path} is a file git runs or reads commands from later")

    def file_content(self, w: Word, cwd: str) -> str | None:
        """The content of the file ``w`` names, when this line wrote it (else None)."""
        if w.content is not None:
            return w.content
        if w.dynamic:
            return None
        return self.out.written_files.get(lexical(w.text, cwd))

    def written(self, w: Word, cwd: str | None) -> bool:
        if w.content is not None:
            return True
        if w.dynamic or cwd is None:
            return False
        return lexical(w.text, cwd) in self.out.written_files

    def run_file(self, w: Word, cmd: Command, ctx: _Ctx, via: str) -> None:
        """``cmd`` runs the script file ``w`` (source, bash FILE, ./FILE, BASH_ENV=FILE)."""
        cwd = cmd.cwd
        if w.download:
            self.out.downloads_into_shell.append(f"{via} runs a downloaded script")
            return
        if self.written(w, cwd):
            content = self.file_content(w, cwd or "/")
            if content is None:
                self.opaque(f"{via} runs a file this command writes, whose content is unknown")
                return
            self.nested_script(literal_word(content), cmd, ctx, via)
        elif w.dynamic or w.subst:
            self.opaque(f"{via} runs a script whose name or content is only known at run time")
        elif via in SOURCED_VARIABLES:
            self.opaque(f"{via} makes every shell started here run {w.text}")

    # -- looking through ------------------------------------------------------------
    def emit(self, cmd: Command, ctx: _Ctx) -> None:
        """Record ``cmd`` and look through it: wrappers, nested shells, eval, find -exec."""
        out = self.out
        for name, value in cmd.assigns:
            # before a program the assignment is that program's alone
            self.note_assignment(name, prefix=bool(cmd.argv))
            self.env_effect(name, value, cmd, ctx)
        if cmd.program == "env":
            for name, value in env_pairs(cmd):
                self.note_assignment(name, prefix=True)
                self.env_effect(name, value, cmd, ctx)
        if ctx.depth > MAX_DEPTH:
            self.add(cmd)
            self.mark_opaque(cmd, "commands are nested too deeply to follow")
            return
        if not cmd.argv:
            self.add(cmd)
            return
        first = cmd.argv[0]
        prog = cmd.program
        if first.dynamic:
            self.add(cmd)
            self.mark_opaque(cmd, f"the program name {first.shown!r} is computed at run time")
            return
        if first.glob and _can_match_many(first.text):
            out.program_globs.append(first.pattern)
            self.add(cmd)
            self.mark_opaque(cmd, f"the program name {first.text!r} is a glob")
            return
        if "/" in first.text and self.written(first, cmd.cwd):
            self.add(cmd)
            self.run_file(first, cmd, ctx, first.text)
            return
        inner = unwrap(cmd) if prog is not None else None
        if inner is not None:
            kind, payload = inner
            self.add(replace(cmd, transparent=kind != "find"))
            if kind == "argv":
                words = cast("list[Word]", payload)
                stdin = cmd.stdin
                if prog == "xargs" and _xargs_opens_tty(cmd):
                    stdin = Stdin("file", opaque=True)  # `xargs -o`: the command reads the tty
                if words:
                    self.emit(
                        replace(cmd, argv=tuple(words), via=(*cmd.via, prog or ""), stdin=stdin),
                        _deeper(ctx),
                    )
            elif kind == "find":
                for argv in cast("list[list[Word]]", payload):
                    self.emit(replace(cmd, argv=tuple(argv), via=(*cmd.via, "find")), _deeper(ctx))
            elif kind == "script":
                assert isinstance(payload, Word)
                self.nested_script(payload, cmd, ctx, prog or "")
            return
        if prog == "eval":
            self.add(cmd)
            joined = [w for w in cmd.argv[1:]]
            if any(w.download for w in joined):
                out.downloads_into_shell.append("eval of a downloaded script")
            if any(w.dynamic for w in joined):
                self.mark_opaque(cmd, "eval runs text only known at run time")
            elif joined:
                self.nested_script(literal_word(" ".join(w.text for w in joined)), cmd, ctx, "eval")
            return
        if prog in SHELLS or (prog is not None and is_interpreter(prog)):
            self.add(cmd)
            self.shell_like(cmd, ctx, prog)
            return
        if prog in ("at", "batch"):
            # at/batch run the script they read on stdin (or from -f FILE) later.
            self.add(cmd)
            stdin = cmd.stdin
            if stdin is not None and stdin.download:
                out.downloads_into_shell.append(f"a download is fed into {prog}")
            elif stdin is not None and stdin.text is not None:
                self.nested_script(literal_word(stdin.text), cmd, ctx, prog)
            elif stdin is not None and stdin.opaque:
                self.mark_opaque(cmd, f"{prog} runs a script only known at run time")
            for i, w in enumerate(cmd.argv[1:-1], 1):
                if w.text == "-f":
                    self.run_file(cmd.argv[i + 1], cmd, ctx, prog)
            return
        if prog in SOURCE_BUILTINS:
            self.add(cmd)
            if cmd.stdin and cmd.stdin.download:
                out.downloads_into_shell.append(f"{prog} of a downloaded script")
            target = cmd.argv[1] if len(cmd.argv) > 1 else None
            if target is not None:
                if target.text in ("/dev/stdin", "/proc/self/fd/0", "/dev/fd/0"):
                    self.shell_stdin(cmd, ctx, prog)
                else:
                    self.run_file(target, cmd, ctx, prog)
            return
        if prog == "alias":
            # With expand_aliases an alias runs its value: look at it as a command line.
            self.add(cmd)
            for w in cmd.argv[1:]:
                if "=" in w.text:
                    value = replace(w, text=w.text.split("=", 1)[1], fallback="")
                    self.nested_script(value, cmd, ctx, "alias")
            return
        if prog == "trap" and len(cmd.argv) > 2:
            self.add(cmd)
            self.nested_script(cmd.argv[1], cmd, ctx, "trap")
            return
        if prog in ("npm", "pnpm", "yarn", "bun") and cmd.cwd is not None:
            manifest = lexical("package.json", cmd.cwd)
            if manifest in out.written_files:
                self.add(cmd)
                self.package_scripts(out.written_files[manifest], cmd, ctx)
                return
        parts = look_inside(cmd)
        if parts is not None:
            self.add(cmd)
            self.follow(parts, cmd, ctx)
            return
        self.add(cmd)
        if prog in DOWNLOADERS:
            out.downloaded_files |= download_targets(cmd)
        self.hidden_shell(cmd, ctx)
        if prog not in NON_RUNNERS and not ctx.via:
            self.speculate(cmd)

    def speculate(self, cmd: Command) -> None:
        """An unknown program may run what it reads on stdin or holds in its arguments."""
        prog = cmd.program or ""
        if prog in STARTS_A_SHELL:
            self.shell_stdin(cmd, _Ctx(cmd.cwd, {}, 1, cmd.via), prog)
            return
        stdin = cmd.stdin
        if stdin is not None and stdin.text:
            text = stdin.text[:20_000]
            self.out.speculative.append((text, cmd.cwd, prog))
            stripped = _strip_runner_marks(text)
            if any(ch in text for ch in "!%({") and stripped.split() != text.split():
                self.out.speculative.append((stripped, cmd.cwd, prog))
        for w in cmd.argv[1:]:
            text = w.text
            if not w.dynamic and any(ch in text for ch in " !;|(") and len(text) < 20_000:
                self.out.speculative.append((_strip_runner_marks(text), cmd.cwd, prog))

    def follow(self, parts: list[tuple[str, Any]], cmd: Command, ctx: _Ctx) -> None:
        prog = cmd.program or ""
        for kind, payload in parts:
            if kind == "argv":
                # A runner's command (`uv run pytest`): the runner's own rule covers it
                # (transparent for allow rules); deny and ask rules and the presets see it.
                words = cast("list[Word]", payload)
                if words:
                    inner = replace(cmd, argv=tuple(words), via=(*cmd.via, prog), transparent=True)
                    self.emit(inner, _deeper(ctx))
            elif kind == "script":
                self.nested_script(cast(Word, payload), cmd, ctx, prog)
            elif kind == "file":
                self.run_file(cast(Word, payload), cmd, ctx, prog)
            elif kind == "makefile":
                self.makefile(cast(Word, payload), cmd, ctx)
            elif kind in ("write", "read"):
                w = cast(Word, payload)
                op = ">" if kind == "write" else "<"
                self.add(Command((), cmd.cwd, (Redirect(op, w),), via=cmd.via, transparent=True))
            elif kind == "opaque":
                self.mark_opaque(cmd, str(payload))

    def makefile(self, w: Word, cmd: Command, ctx: _Ctx) -> None:
        cwd = cmd.cwd
        if not w.text and w.content is None:
            # the default makefile: seen only if this line wrote it
            if cwd is None:
                return
            for name in ("GNUmakefile", "makefile", "Makefile"):
                path = lexical(name, cwd)
                if path in self.out.written_files:
                    w = literal_word(path)
                    break
            else:
                return
        if not self.written(w, cwd):
            if w.dynamic or w.subst:
                self.mark_opaque(cmd, "make runs a makefile only known at run time")
            return
        content = self.file_content(w, cwd or "/")
        if content is None:
            self.mark_opaque(cmd, "make runs a makefile this command writes, of unknown content")
            return
        scripts, why = makefile_scripts(content)
        if why:
            self.mark_opaque(cmd, why)
        for body in scripts:
            self.nested_script(literal_word(body), cmd, ctx, "make")

    def package_scripts(self, content: str | None, cmd: Command, ctx: _Ctx) -> None:
        """npm/yarn run scripts of a package.json this line wrote: look at every one."""
        import json

        try:
            scripts = json.loads(content or "").get("scripts", {}) if content else None
        except (ValueError, AttributeError):
            scripts = None
        if not isinstance(scripts, dict):
            self.mark_opaque(
                cmd, "package.json is written by this command; its scripts are unknown"
            )
            return
        for body in scripts.values():
            if isinstance(body, str):
                self.nested_script(literal_word(body), cmd, ctx, "package.json")

    def hidden_shell(self, cmd: Command, ctx: _Ctx) -> None:
        """An unknown program handed a shell in its arguments probably starts it:
        ``X sh -c CODE`` runs CODE, ``X --opt='/bin/sh -c CODE'`` too, and ``X /bin/sh``
        (or ``X -o Hook=/bin/sh``) starts a shell that reads X's stdin."""
        prog = cmd.program or ""
        if prog in NON_RUNNERS:
            return
        words = cmd.argv[1:]
        for i, w in enumerate(words):
            if w.dynamic:
                continue
            if (
                i + 2 < len(words)
                and words[i + 1].text == "-c"
                and w.text.rsplit("/", 1)[-1] in SHELLS
            ):
                self.nested_script(words[i + 2], cmd, ctx, prog)
                continue
            m = _SHELL_IN_WORD.search(w.text)
            if m is None and w.text not in ("shell", "sh", "bash", "repl", "console"):
                continue
            rest = w.text[m.start("shell") :] if m is not None else ""
            if " " in rest or ";" in rest:
                self.nested_script(literal_word(rest), cmd, ctx, prog)
            # and the shell it starts reads this command's stdin
            self.shell_stdin(cmd, ctx, f"{prog} (a shell it may start)")
            return

    def shell_stdin(self, cmd: Command, ctx: _Ctx, prog: str) -> None:
        stdin = cmd.stdin
        if stdin is None:
            return
        if stdin.download:
            self.out.downloads_into_shell.append(f"a download is fed into {prog}")
        elif stdin.text is not None:
            self.nested_script(literal_word(stdin.text), cmd, ctx, prog, stdin_used=True)
        elif stdin.opaque:
            self.mark_opaque(cmd, f"{prog} {OPAQUE_STDIN}")

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
            elif inv.code.dynamic:
                self.mark_opaque(cmd, f"{prog} runs code only known at run time")
            else:
                self.follow(code_parts(inv.code.text, _lang(prog)), cmd, ctx)
            return
        if inv.script is not None:
            if is_shell:
                self.run_file(inv.script, cmd, ctx, prog)
            elif inv.script.download:
                out.downloads_into_shell.append(f"{prog} runs a downloaded script")
            elif self.written(inv.script, cmd.cwd) or inv.script.subst:
                content = self.file_content(inv.script, cmd.cwd or "/")
                if content is None:
                    self.mark_opaque(cmd, f"{prog} runs a script this command makes")
                else:
                    self.follow(code_parts(content, _lang(prog)), cmd, ctx)
            return
        stdin = cmd.stdin
        if stdin is None:
            return
        if is_shell:
            self.shell_stdin(cmd, ctx, prog)
        elif stdin.download:
            out.downloads_into_shell.append(f"a download is fed into {prog}")
        elif stdin.text is not None:
            self.follow(code_parts(stdin.text, _lang(prog)), cmd, ctx)
        elif stdin.opaque:
            self.mark_opaque(cmd, f"{prog} {OPAQUE_STDIN}")

    def nested_script(
        self, code: Word, cmd: Command, ctx: _Ctx, via: str, *, stdin_used: bool = False
    ) -> None:
        if code.dynamic:
            if code.download:
                self.out.downloads_into_shell.append(f"{via} runs a downloaded script")
            self.opaque(f"{via} runs code only known at run time")
            return
        inner = _deeper(ctx)
        inner.cwd = cmd.cwd
        inner.via = (*cmd.via, via)
        # The code's commands read what the command reads (`echo X | bash -c 'sh'`), unless
        # the script itself came from that stdin (`echo X | bash`).
        inner.stdin = None if stdin_used else cmd.stdin
        saved = self.last_output
        self.script(code.text, inner)
        self.last_output = saved

    # -- words ----------------------------------------------------------------------
    def words(self, node: Any, ctx: _Ctx) -> list[Word]:
        """A word node as the words bash makes of it (brace expansion, word splitting)."""
        if node.type in ("word", "command_name"):
            raw = self.t(node)
            if _PLAIN_WORD.fullmatch(raw):  # the common case, with nothing to expand
                return [Word(raw, False, raw, fallback=raw)]
        parts: list[tuple[str, bool]] = []
        meta = _Meta()
        self._word_parts(node, ctx, parts, meta, quoted=False, top=True)
        ifs = ctx.vars.get("IFS", " \t\n")
        if meta.splits and any(
            not q and i not in meta.splits and "{" in p for i, (p, q) in enumerate(parts)
        ):
            # brace expansion and then word splitting of the same word: left unknown
            # (a program name so spelled is asked about) rather than guessed
            return [Word(DYN, pattern="*", subst=meta.subst, download=meta.download)]
        if meta.splits and any(
            i in meta.splits and (not p or any(c in ifs for c in p))
            for i, (p, _) in enumerate(parts)
        ):
            fields = _split_fields(parts, meta.splits, ifs)
            return [_make_word(f, meta, {}) for f in fields]
        w = _make_word(parts, meta, meta.defaults)
        if (
            node.type in ("word", "concatenation", "command_name")
            and "{" in w.text
            and not w.dynamic
        ):
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

    def word(self, node: Any, ctx: _Ctx) -> Word:
        parts: list[tuple[str, bool]] = []  # (text, quoted)
        meta = _Meta()
        self._word_parts(node, ctx, parts, meta, quoted=False, top=True)
        return _make_word(parts, meta, meta.defaults)

    def _word_parts(
        self,
        node: Any,
        ctx: _Ctx,
        parts: list[tuple[str, bool]],
        meta: _Meta,
        *,
        quoted: bool,
        top: bool = False,
    ) -> None:
        t = node.type
        if t in ("word", "number", "command_name", "special_variable_name"):
            if t == "command_name":
                for c in node.named_children:
                    self._word_parts(c, ctx, parts, meta, quoted=quoted, top=top)
                return
            raw = self.t(node)
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
            parts.append((self.t(node)[1:-1], True))
        elif t == "ansi_c_string":
            parts.append((decode_ansi_c(self.t(node)[2:-1]), True))
        elif t in ("string", "translated_string"):
            had = len(parts)
            for child in node.children:
                ct = child.type
                if ct == "string_content":
                    parts.append((unescape_double(self.t(child)), True))
                elif child.is_named:
                    self._word_parts(child, ctx, parts, meta, quoted=True)
            if len(parts) == had:
                parts.append(("", True))  # "" is an empty word, not no word
        elif t == "concatenation":
            for i, child in enumerate(node.named_children):
                self._word_parts(child, ctx, parts, meta, quoted=quoted, top=top and i == 0)
        elif t == "simple_expansion":
            name = "".join(self.t(c) for c in node.named_children)
            self._expanded(self._var(name, ctx), quoted, parts, meta)
        elif t == "expansion":
            value = self._expansion(node, ctx, meta)
            self._expanded(value, quoted, parts, meta)
            default = _expansion_default(node, self)
            if default is not None and DYN in value:
                meta.defaults[len(parts) - 1] = default
        elif t in ("command_substitution", "process_substitution"):
            meta.subst = True
            before = len(self.out.commands)
            self.visit(node, ctx)
            output = self.last_output
            self.last_output = None
            if _downloads(self.out.commands[before:]):
                meta.download = True
            if t == "command_substitution" and output is not None:
                self._expanded(output.rstrip("\n"), quoted, parts, meta)
            else:
                if t == "process_substitution" and output is not None:
                    meta.content = output
                parts.append((DYN, True))
        elif t == "arithmetic_expansion":
            self._scan(node, ctx, meta)
            parts.append((DYN, True))
        else:
            self._scan(node, ctx, meta)
            parts.append((self.t(node) if not node.named_children else DYN, quoted))

    @staticmethod
    def _expanded(value: str, quoted: bool, parts: list[tuple[str, bool]], meta: _Meta) -> None:
        parts.append((value, True))
        if not quoted:
            meta.splits.add(len(parts) - 1)

    def _expansion(self, node: Any, ctx: _Ctx, meta: _Meta) -> str:
        """The value of ``${...}`` when it can be known: ``${x}``, ``${!ref}``, ``${x,,}``,
        ``${x^^}``, ``${x@L}``, ``${#x}``, ``${x:1:2}``, ``${x/a/b}``, ``${x#p}``, ``${x%p}``."""
        children = node.children
        texts = [self.t(c) for c in children]
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
                self._scan(child, ctx, meta)
        names = [c for c in named if c.type == "variable_name"]
        if len(names) != 1:
            for child in named:
                self._scan(child, ctx, meta)
            return DYN
        name = self.t(names[0])
        inner = texts[1:-1] if texts[:1] == ["${"] and texts[-1:] == ["}"] else texts
        idx = inner.index(name) if name in inner else 0
        before, after = inner[:idx], inner[idx + 1 :]
        if before == ["!"] and not after:
            ref = self._var(name, ctx)
            return DYN if DYN in ref else self._var(ref, ctx)
        if before == ["#"] and not after:
            v = self._var(name, ctx)
            return DYN if DYN in v else str(len(v))
        if before:
            return DYN
        value = self._var(name, ctx)
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

    def _scan(self, node: Any, ctx: _Ctx, meta: _Meta) -> None:
        """Visit every substitution inside ``node`` (arithmetic, subscripts, defaults...)."""
        for child in node.named_children:
            if child.type in ("command_substitution", "process_substitution"):
                meta.subst = True
                before = len(self.out.commands)
                self.visit(child, ctx)
                self.last_output = None
                if _downloads(self.out.commands[before:]):
                    meta.download = True
            else:
                self._scan(child, ctx, meta)

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


def _command_nodes(root: Any) -> list[Any]:
    """Every ``command`` node under ``root``, found by the parser's own query engine (a
    Python walk of a 20,000-stage pipeline costs more than its parse)."""
    import tree_sitter

    query = _command_query()
    found = tree_sitter.QueryCursor(query).captures(root)
    return list(found.get("c", ()))


@lru_cache(maxsize=1)
def _command_query() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Query(tree_sitter.Language(tree_sitter_bash.language()), "(command) @c")


#: A shell named inside a word: ``/bin/sh``, ``--cmd=bash``, ``{"/bin/sh;false"}``.
_SHELL_IN_WORD = re.compile(
    r"(?:^|[=\s\"'{;:,(])(?P<shell>(?:/usr)?(?:/s?bin/|/usr/local/bin/)?"
    r"(?:ba|da|z|k|mk|c|tc|a|ya|fi)?sh)(?=$|[\s;\"'})&|,])"
)
_RUNS_SOMETHING = re.compile(
    r"/etc/+g?shadow|/etc/+passwd|\.ssh/|(?<![\w.-])\.env(?![\w-])|"
    r"(?:^|[=\s\"'{;:,(!|`])(?:/usr)?(?:/s?bin/)?(?:ba|da|z|k|c|a)?sh(?:$|[\s;\"'})&|,])|"
    r"\b(?:system|exec|popen|spawn|shell_exec|passthru)\s*\(|\bos\.execute\b|`[^`]+`|"
    r"(?:^|[;\n])\s*spawn\s"  # expect
)
#: Programs that read a file written earlier in the line without running what it says.
_ONLY_READS = NON_RUNNERS - {"kubectl", "docker", "podman", "wget", "curl", "systemctl", "zip"}

#: The end of the reason given for a shell that reads commands the analysis cannot see
#: (another descriptor, the terminal, a pipe of unknown output).
OPAQUE_STDIN = "runs a script from stdin that is only known at run time"

#: Programs that start an interactive shell (which reads their stdin).
STARTS_A_SHELL = frozenset(
    {"screen", "tmux", "capsh", "sg", "newgrp", "script", "byobu", "dtach", "abduco"}
)


def _can_match_many(text: str) -> bool:
    """A glob bash can expand: ``*``, ``?``, or a ``[`` closed by a ``]`` (``^[`` alone is
    a literal name)."""
    if "*" in text or "?" in text:
        return True
    start = text.find("[")
    return start != -1 and "]" in text[start + 2 :]


def _last_simple_command(node: Any) -> Any | None:
    """The simple command a trailing redirect belongs to when the grammar hung it on a
    list, a pipeline or a negation (bash binds it to the last simple command)."""
    found = False
    while node.type in ("list", "pipeline", "negated_command"):
        named = [c for c in node.named_children if c.type != "comment"]
        if not named:
            return None
        node = named[-1]
        found = True
    return node if found and node.type == "command" else None


def _words_after_redirect(node: Any) -> list[Any]:
    if node.type == "file_redirect":
        return list(node.children_by_field_name("destination"))[1:]
    if node.type == "heredoc_redirect":
        return list(node.children_by_field_name("argument"))
    return []


def _xargs_opens_tty(cmd: Command) -> bool:
    for w in cmd.argv[1:]:
        t = w.text
        if t == "--":
            return False
        if t == "--open-tty" or (t[:1] == "-" and t[1:2] != "-" and "o" in t[1:]):
            return True
    return False


def _strip_runner_marks(text: str) -> str:
    """``!cmd``, ``%(cmd)``, ``esyscmd(cmd)``, ``exec { 'cmd': }``: the command inside."""
    text = re.sub(r"^[^!]*!", "", text) if "!" in text else text
    return re.sub(r"[%(){}\[\]'\"`]", " ", text)


_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:=@%+,-]+")
_HIDE_BRACES = str.maketrans({"{": "\x01", "}": "\x02", ",": "\x03", ".": "\x04"})
_SHOW_BRACES = str.maketrans({"\x01": "{", "\x02": "}", "\x03": ",", "\x04": "."})
_COPROC = re.compile(r"\bcoproc\s+(?:[A-Za-z_]\w*\s+)?(?=[{(])")


# -- stdin: what feeds a shell ----------------------------------------------------------
def _downloads(cmds: list[Command]) -> bool:
    for c in cmds:
        if c.program in DOWNLOADERS:
            return True
    for c in cmds:
        for r in c.redirects:
            if r.target is not None and r.target.text.startswith(("/dev/tcp/", "/dev/udp/")):
                return True
    return False


def _pipe_feed(produced: list[Command]) -> Stdin:
    """What the next stage of a pipeline reads when its output is not known."""
    real = [c for c in produced if c.argv and not c.transparent]
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
            return Stdin("herestring", text=r.target.text + "\n")
        if r.op == "<<":
            text = r.heredoc or ""
            if DYN in text:
                return Stdin("heredoc", opaque=True)
            return Stdin("heredoc", text=text)
        if r.op == "<&" and r.target is None:
            return Stdin("file", opaque=True)  # `0<&2`: stdin is another descriptor
        if r.op == "<" and r.target is not None:
            t = r.target
            if t.text in ("/dev/tty", "/dev/console") or t.text.startswith("/dev/pts/"):
                return Stdin("file", opaque=True)  # whatever is typed there
            if t.download or t.text.startswith(("/dev/tcp/", "/dev/udp/")):
                return Stdin("file", download=True)
            if ctx.cwd is not None and walker.written(t, ctx.cwd):
                content = walker.file_content(t, ctx.cwd)
                return Stdin("file", text=content, opaque=content is None)
            return Stdin("file", opaque=t.subst)
    return None


# -- what a command prints, when it is known ------------------------------------------
MAX_STATIC_OUTPUT = 200_000
#: The programs ``static_output`` knows the output of.
_STATIC_PROGRAMS = frozenset(
    {"echo", "printf", "cat", "base64", "base32", "xxd", "rev", "tr"}
    | {"true", ":", "cd", "export", "shopt", "set", "chmod", "mkdir", "touch"}
)


def static_output(cmd: Command, walker: _Walker) -> str | None:
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


# -- word assembly --------------------------------------------------------------------
@dataclass
class _Meta:
    download: bool = False
    subst: bool = False
    content: str | None = None
    #: indices of parts that are unquoted expansions (split into fields, globbed)
    splits: set[int] = field(default_factory=set)
    defaults: dict[int, str] = field(default_factory=dict)


def _make_word(parts: list[tuple[str, bool]], meta: _Meta, defaults: dict[int, str]) -> Word:
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


def _split_fields(
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


def _declared_case(flags: str) -> str:
    if "l" in flags:
        return "lower"
    if "u" in flags:
        return "upper"
    return ""


def _literal_default(text: str) -> str | None:
    if any(ch in text for ch in "$`\\") or DYN in text:
        return None
    return text.strip("'\"")


def _lang(prog: str) -> str:
    if prog.startswith("python"):
        return "python"
    return {"nodejs": "node", "luajit": "lua"}.get(prog, prog)


#: Variables whose value is a command some program runs (through ``sh -c``).
CODE_VARIABLES = frozenset(
    {
        "PROMPT_COMMAND",
        "GIT_SSH_COMMAND",
        "GIT_EDITOR",
        "GIT_PAGER",
        "GIT_SEQUENCE_EDITOR",
        "GIT_EXTERNAL_DIFF",
        "GIT_ASKPASS",
        "GIT_SSH",
        "GIT_PROXY_COMMAND",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "MANPAGER",
        "SYSTEMD_PAGER",
        "LESSOPEN",
        "LESSCLOSE",
        "BROWSER",
        "FCEDIT",
        "SHELL",
        "SYSTEMD_EDITOR",
        "SUDO_EDITOR",
        "KUBE_EDITOR",
        "RESTIC_PASSWORD_COMMAND",
        "TAR_OPTIONS",
        "RSYNC_RSH",
        "CVS_RSH",
    }
)
#: Prompt strings: bash expands them (command substitutions included) when it shows them.
PROMPT_VARIABLES = frozenset({"PS0", "PS1", "PS2", "PS3", "PS4"})
#: Variables naming a file every shell (or bash, or sh) started from here sources first.
SOURCED_VARIABLES = frozenset({"BASH_ENV", "ENV"})


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
