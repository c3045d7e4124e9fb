"""The walk over the bash grammar's tree: statements, lists, pipelines, simple commands.

The walker's state (the analysis being built, the texts being walked, the files written so
far) is here; the work on words (:mod:`.words`), variables (:mod:`.variables`), redirects and
files (:mod:`.redirects`) and what a command runs (:mod:`.nested`) is done by functions of
those modules that take the walker, reached from anywhere through its methods.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from codingcode.paths import home_dir, lexical
from codingcode.shell import flow, nested, redirects, variables, words
from codingcode.shell.context import Ctx
from codingcode.shell.expand import fallback_words
from codingcode.shell.model import (
    DYN,
    MAX_COMMANDS,
    MAX_DEPTH,
    MAX_NESTED_CHARS,
    Analysis,
    Command,
    Redirect,
    Stdin,
    Word,
    join_words,
    literal_word,
)
from codingcode.shell.programs import NON_RUNNERS, SHELLS, SOURCE_BUILTINS, is_interpreter
from codingcode.shell.redirects import WRITERS, pipe_feed, stdin_from
from codingcode.shell.source import (
    COPROC,
    PLAIN_WORD,
    WORD_TYPES,
    Source,
    command_nodes,
    make_source,
    node_key,
    parser,
    words_after_redirect,
)
from codingcode.shell.static import static_output
from codingcode.shell.variables import declared_case
from codingcode.shell.words import downloads

#: ``=`` count times ``|`` count beyond which a text is not parsed (see ``script``).
MAX_ASSIGN_PIPE_PRODUCT = 4_000_000


#: Programs that read a file written earlier in the line without running what it says.
ONLY_READS = NON_RUNNERS - {"kubectl", "docker", "podman", "wget", "curl", "systemctl", "zip"}


#: Loops: their body runs any number of times.
_LOOPS = frozenset(
    {"for_statement", "c_style_for_statement", "while_statement", "select_statement"}
)


class Walker:
    def __init__(self, out: Analysis) -> None:
        self.out = out
        self.sources: list[Source] = []
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
        self.attached: dict[tuple[int, tuple[int, int]], list[Any]] = {}
        #: Shell functions defined in this line (their bodies are looked at where defined).
        self.functions: set[str] = set()
        #: What calling each of them may change: variables, and whether the directory.
        self.function_effects: dict[str, tuple[frozenset[str], bool]] = {}
        #: Whether this line defines an alias (function bodies keep them).
        self.aliases = False
        #: Every literal value the line assigns each variable (None: one is not literal).
        self.literal_values: dict[str, set[str] | None] = {}

    def finish(self) -> None:
        """After the walk: a file written with commands in it, then an unknown program."""
        for path, index in self.active_files:
            for c in self.out.commands[index:]:
                prog = c.program
                if (
                    prog is not None
                    and prog not in ONLY_READS
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

    def mentions(self, pattern: bytes) -> bool:
        """Whether the text being walked (the innermost script) matches ``pattern``
        (cached per text: asked once per function definition)."""
        source = self.sources[-1]
        found = source.facts.get(pattern)
        if found is None:
            found = source.facts[pattern] = re.search(pattern, source.parsed) is not None
        return found

    def t(self, node: Any) -> str:
        """The original text of a node of the tree being walked."""
        return self.sources[-1].text(node)

    # -- entry points ---------------------------------------------------------------
    def script(self, text: str, ctx: Ctx) -> None:
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
            text = COPROC.sub(lambda m: " " * len(m.group(0)), text)
        source = make_source(text)
        tree = parser().parse(source.parsed)
        root = tree.root_node
        if root.has_error:
            self.out.parse_error = True
            self.opaque("the command could not be parsed completely")
            self.out.fallback_words.extend(fallback_words(text))
        self.sources.append(source)
        self._seen.append(set())
        try:
            self.visit(root, ctx)
            # Safety net: a simple command the structured walk did not reach is still checked.
            seen = self._seen[-1]
            missed = [n for n in command_nodes(root) if node_key(n) not in seen]
            # in the order of the text, an enclosing command before the ones inside it (the
            # query's own order varies from run to run)
            missed.sort(key=lambda n: (n.start_byte, -n.end_byte))
            for node in missed:
                if node_key(node) not in seen:  # (walking one may reach the next)
                    self.command(node, ctx.copy(), ())
        finally:
            self.sources.pop()
            self._seen.pop()

    # -- statements -----------------------------------------------------------------
    def visit(self, node: Any, ctx: Ctx) -> None:
        t = node.type
        self.last_output = None
        if t == "command":
            attached = (
                self.attached.pop((len(self.sources), node_key(node)), ()) if self.attached else ()
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
            if "n" in flags and "-" in flags:
                # `declare -n ref=name`: assigning ref assigns another variable
                flow.forget(self, ctx, {flow.EVERYTHING}, False)
                ctx.set_vars()[flow.NAMEREFS] = "1"
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self.assignment(child, ctx, case=declared_case(flags))
                else:
                    self.word(child, ctx)
        elif t == "unset_command":
            for child in node.named_children:
                ctx.set_vars().pop(self.t(child), None)
        elif t in WORD_TYPES:
            self.word(node, ctx)
        elif t == "list":
            flow.visit_list(self, node, ctx)
            self.last_output = None
        elif t == "if_statement":
            flow.visit_if(self, node, ctx)
        elif t == "case_statement":
            flow.visit_case(self, node, ctx)
        elif t in _LOOPS:
            flow.visit_loop(self, node, ctx)
            self.last_output = None
        elif (
            t == "compound_statement"
            and len(node.named_children) == 1
            and not any(c.type == "&" for c in node.children)
        ):
            self.visit(node.named_children[0], ctx)
        elif t == "function_definition":
            flow.visit_function(self, node, ctx)
        else:
            flow.visit_block(self, node, ctx)

    def pipeline(self, node: Any, ctx: Ctx) -> None:
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
            download = download or downloads(produced)
            if download:
                feed = Stdin("pipe", download=True)
            elif self.last_output is not None:
                feed = Stdin("pipe", text=self.last_output)
            else:
                feed = pipe_feed(produced)
        self.last_output = feed.text if feed is not None else None

    # -- simple commands ------------------------------------------------------------
    def command(self, node: Any, ctx: Ctx, extra_redirects: Any) -> None:
        # The hot path of every analysis (a 20,000-stage pipeline is 20,000 of these): each
        # read of a node property builds Python objects, so each is read once.
        self._seen[-1].add(node_key(node))
        assigns: list[tuple[str, Word]] = []
        argv: list[Word] = []
        redirect_nodes = list(extra_redirects)
        previous_end: int | None = None
        source = self.sources[-1]
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
                or (child.is_named and ctype in WORD_TYPES)
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
                    if PLAIN_WORD.fullmatch(raw):
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
            extra = words_after_redirect(rnode)
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
            stdin = stdin_from(redirects, self, ctx) or ctx.stdin
        else:
            redirects, stdin = (), ctx.stdin
        aliased = None
        if argv and ctx.vars and not argv[0].dynamic:
            aliased = flow.alias_of(ctx, argv[0].text)
            if aliased is not None:
                argv, known = flow.expand_alias(aliased, argv)
                aliased = None if known else aliased
        cmd = Command(tuple(argv), ctx.cwd, redirects, stdin, ctx.via, assigns=tuple(assigns))
        self.emit(cmd, ctx)
        if aliased is not None:
            flow.run_alias(self, aliased, cmd, ctx)
        output = static_output(cmd, self)
        prog = cmd.program
        if redirects:
            self.record_writes(cmd, output)
            if any(">" in r.op for r in redirects):
                output = None
        elif prog in WRITERS:
            self.record_writes(cmd, output)
        self.last_output = output
        # `cd DIR` changes where later commands of this list run.
        if (prog == "cd" or prog == "pushd") and not cmd.via:
            target = next((w for w in cmd.argv[1:] if not w.text.startswith("-")), None)
            if target is None:
                home = ctx.vars.get("HOME", home_dir())
                ctx.cwd = None if DYN in home else home
            elif target.dynamic or ctx.cwd is None or target.text == "-":
                ctx.cwd = None
            else:
                ctx.cwd = lexical(target.text, ctx.cwd)
        elif prog is not None and not cmd.via and prog not in flow.RUNS_HERE:
            flow.call(self, prog, [w.text for w in cmd.argv[1:]], ctx, None)

    def _continued(self, end: int, start: int) -> bool:
        gap = self.sources[-1].parsed[end:start]
        return bool(gap) and gap.replace(b"\\\n", b"") == b""

    # -- the other modules' work, reached from anywhere through the walker ---------
    def note_assignment(self, name: str, *, prefix: bool = False) -> None:
        variables.note_assignment(self, name, prefix=prefix)

    def env_effect(self, name: str, value: Word, cmd: Command | None, ctx: Ctx) -> None:
        variables.env_effect(self, name, value, cmd, ctx)

    def assignment(self, node: Any, ctx: Ctx, case: str = "") -> None:
        variables.assignment(self, node, ctx, case)

    def redirected(self, node: Any, ctx: Ctx) -> None:
        redirects.redirected(self, node, ctx)

    def redirect(self, node: Any, ctx: Ctx) -> Redirect | None:
        return redirects.redirect(self, node, ctx)

    def record_writes(self, cmd: Command, output: str | None) -> None:
        redirects.record_writes(self, cmd, output)

    def file_content(self, w: Word, cwd: str) -> str | None:
        return redirects.file_content(self, w, cwd)

    def written(self, w: Word, cwd: str | None) -> bool:
        return redirects.written(self, w, cwd)

    def emit(self, cmd: Command, ctx: Ctx) -> None:
        nested.emit(self, cmd, ctx)

    def run_file(self, w: Word, cmd: Command, ctx: Ctx, via: str) -> Ctx | None:
        return nested.run_file(self, w, cmd, ctx, via)

    def speculate(self, cmd: Command) -> None:
        nested.speculate(self, cmd)

    def follow(self, parts: list[tuple[str, Any]], cmd: Command, ctx: Ctx) -> None:
        nested.follow(self, parts, cmd, ctx)

    def makefile(self, w: Word, cmd: Command, ctx: Ctx) -> None:
        nested.makefile(self, w, cmd, ctx)

    def package_scripts(self, content: str | None, cmd: Command, ctx: Ctx) -> None:
        nested.package_scripts(self, content, cmd, ctx)

    def hidden_shell(self, cmd: Command, ctx: Ctx) -> None:
        nested.hidden_shell(self, cmd, ctx)

    def shell_stdin(self, cmd: Command, ctx: Ctx, prog: str) -> None:
        nested.shell_stdin(self, cmd, ctx, prog)

    def shell_like(self, cmd: Command, ctx: Ctx, prog: str) -> None:
        nested.shell_like(self, cmd, ctx, prog)

    def nested_script(
        self, code: Word, cmd: Command, ctx: Ctx, via: str, *, stdin_used: bool = False
    ) -> Ctx | None:
        return nested.nested_script(self, code, cmd, ctx, via, stdin_used=stdin_used)

    def words(self, node: Any, ctx: Ctx) -> list[Word]:
        return words.words(self, node, ctx)

    def word(self, node: Any, ctx: Ctx) -> Word:
        return words.word(self, node, ctx)
