"""Redirects, files this line writes (and later reads or runs), and stdin feeds."""

from __future__ import annotations

import re
from typing import Any

from codingcode.paths import lexical
from codingcode.shell.context import Ctx, Walk
from codingcode.shell.model import DYN, Command, Redirect, Stdin, Word, literal_word
from codingcode.shell.source import last_simple_command, node_key

#: Programs whose arguments name files they write (``record_writes``).
WRITERS = frozenset({"tee", "cp", "mv", "install", "ln", "dd", "sed", "gsed", "perl", "find"})


#: Files that make a later program run commands (less, shells started later, direnv).
CONFIGURES_LATER_RUNS = (
    "/.lessfilter",
    "/.lesspipe",
    "/.bashrc",
    "/.bash_profile",
    "/.bash_login",
    "/.profile",
    "/.zshrc",
    "/.zshenv",
    "/.envrc",
    "/.bash_logout",
)
#: Files that configure this agent, another agent or an editor to run commands later.
AGENT_CONTROL_FILES = (
    "/.codingcode",
    "/.mcp.json",
    "/.claude/settings.json",
    "/.claude/settings.local.json",
    "/.vscode/tasks.json",
    "/.vscode/settings.json",
    "/.vscode/launch.json",
    "/.cursor/mcp.json",
    "/.gemini/settings.json",
)
#: Programs that write the files they are given with -i (in place).
IN_PLACE = frozenset({"sed", "gsed", "perl"})
RUNS_SOMETHING = re.compile(
    r"/etc/+g?shadow|/etc/+passwd|\.ssh/|(?<![\w.-])\.env(?![\w-])|"
    r"(?:^|[=\s\"'{;:,(!|`])(?:/usr)?(?:/s?bin/)?(?:ba|da|z|k|c|a)?sh(?:$|[\s;\"'})&|,])|"
    r"\b(?:system|exec|popen|spawn|shell_exec|passthru)\s*\(|\bos\.execute\b|`[^`]+`|"
    r"(?:^|[;\n])\s*spawn\s|"  # expect
    r"(?:^|[\s;|&`'\"(!{:=,])(?:sudo|doas|pkexec|run0)(?:$|[\s;\"'})&|,])"  # raises privileges
)


def pipe_feed(produced: list[Command]) -> Stdin:
    """What the next stage of a pipeline reads when its output is not known."""
    real = [c for c in produced if c.argv and not c.transparent]
    if len(real) == 1 and real[0].program == "cat" and real[0].stdin is None:
        return Stdin("pipe")  # a file's content: like running the file
    return Stdin("pipe", opaque=True)


def stdin_from(redirects: tuple[Redirect, ...], walker: Walk, ctx: Ctx) -> Stdin | None:
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


def redirected(walker: Walk, node: Any, ctx: Ctx) -> None:
    body = node.child_by_field_name("body")
    redirects = [c for c in node.named_children if c.type.endswith("_redirect")]
    if body is not None and body.type == "command":
        walker.command(body, ctx, redirects)
        return
    last = last_simple_command(body) if body is not None else None
    if last is not None and redirects:
        # `a && b 2>x c`, `a | b 2>x c`: the redirects are the last command's
        walker.attached[(len(walker.sources), node_key(last))] = redirects
        walker.visit(body, ctx)
        walker.attached.pop((len(walker.sources), node_key(last)), None)
        return
    parsed = tuple(r for r in (walker.redirect(c, ctx) for c in redirects) if r is not None)
    inner = ctx.copy()
    stdin = stdin_from(parsed, walker, ctx)
    if stdin is not None:
        inner.stdin = stdin
    if body is not None:
        walker.visit(body, inner)
    output = walker.last_output
    if parsed:
        # Redirects of a compound statement still name files: record them on a
        # pseudo-command with no program so path rules see them.
        pseudo = Command((), ctx.cwd, parsed, via=ctx.via, transparent=True)
        walker.add(pseudo)
        walker.record_writes(pseudo, output)
        walker.last_output = None if any(">" in r.op for r in parsed) else output


def redirect(walker: Walk, node: Any, ctx: Ctx) -> Redirect | None:
    t = node.type
    if t == "file_redirect":
        op = "".join(walker.t(c) for c in node.children if not c.is_named) or ">"
        dest = node.child_by_field_name("destination")
        if dest is None or (dest.type == "number" and "&" in op):
            return Redirect(op, None)
        return Redirect(op, walker.word(dest, ctx))
    if t == "herestring_redirect":
        target = next((c for c in node.named_children), None)
        return Redirect("<<<", walker.word(target, ctx) if target is not None else None)
    if t == "heredoc_redirect":
        body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
        if body is not None:
            for child in body.named_children:
                walker.visit(child, ctx)
        text = walker.t(body) if body is not None else ""
        if body is not None and any(
            c.type in ("simple_expansion", "expansion", "command_substitution")
            for c in body.named_children
        ):
            text = DYN + text  # an unquoted here-doc expands: its text is only partly known
        return Redirect("<<", None, heredoc=text)
    for child in node.named_children:
        walker.visit(child, ctx)
    return None


# -- files written and run in the same line ------------------------------------
def record_writes(walker: Walk, cmd: Command, output: str | None) -> None:
    files = walker.out.written_files
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
        check_written(walker, before)
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
    elif prog == "find":
        rest = cmd.argv[1:]
        targets = [
            (rest[i + 1], None)
            for i, w in enumerate(rest[:-1])
            if w.text in ("-fprint", "-fprint0", "-fprintf", "-fls")
        ]
    elif prog in IN_PLACE and any(
        w.text.startswith("--in-place")
        or (w.text[:1] == "-" and w.text[1:2] != "-" and "i" in w.text[1:])
        for w in cmd.argv[1:]
    ):
        # `sed -i SCRIPT FILE...`, `perl -pi -e CODE FILE...`: the files (and, harmless,
        # the script word) are written, with a content the analysis does not know
        targets = [(w, None) for w in args]
    for w, content in targets:
        if not w.dynamic:
            files[lexical(w.text, cwd)] = content
    check_written(walker, before)


def check_written(walker: Walk, before: int) -> None:
    for path in list(walker.out.written_files)[before:]:
        content = walker.out.written_files[path]
        if content is not None and RUNS_SOMETHING.search(content):
            # a config file or script that starts a shell or runs commands: a later
            # program of this line may run it (Gemfile, ansible playbook, .conf ...)
            walker.active_files.append((path, len(walker.out.commands)))
        if "/.git/hooks/" in path or path.endswith(("/.git/config", "/.gitconfig")):
            walker.opaque(f"{path} is a file git runs or reads commands from later")
        elif path.endswith(CONFIGURES_LATER_RUNS):
            walker.opaque(f"{path} is a file a program runs or reads commands from later")
        elif "/.codingcode/" in path or path.endswith(AGENT_CONTROL_FILES):
            walker.opaque(f"{path} configures the agent or the tools it starts later")


def file_content(walker: Walk, w: Word, cwd: str) -> str | None:
    """The content of the file ``w`` names, when this line wrote it (else None)."""
    if w.content is not None:
        return w.content
    if w.dynamic:
        return None
    return walker.out.written_files.get(lexical(w.text, cwd))


def written(walker: Walk, w: Word, cwd: str | None) -> bool:
    if w.content is not None:
        return True
    if w.dynamic or cwd is None:
        return False
    return lexical(w.text, cwd) in walker.out.written_files
