"""What a command runs: wrappers looked through, shells and interpreters, eval, aliases,
traps, scripts in files this line writes (Makefile, package.json), hidden shells."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, cast

from codingcode.paths import lexical
from codingcode.shell import flow
from codingcode.shell.context import Ctx, Walk, deeper
from codingcode.shell.hidden import REMOTE, embedded_commands, maybe_downloaded
from codingcode.shell.model import DYN, MAX_DEPTH, Command, Redirect, Stdin, Word, literal_word
from codingcode.shell.programs import (
    DOWNLOADERS,
    NON_RUNNERS,
    SHELLS,
    SOURCE_BUILTINS,
    code_parts,
    download_targets,
    env_pairs,
    invocation,
    is_interpreter,
    look_inside,
    makefile_scripts,
    unwrap,
)
from codingcode.shell.variables import SOURCED_VARIABLES


def can_match_many(text: str) -> bool:
    """A glob bash can expand: ``*``, ``?``, or a ``[`` closed by a ``]`` (``^[`` alone is
    a literal name)."""
    if "*" in text or "?" in text:
        return True
    start = text.find("[")
    return start != -1 and "]" in text[start + 2 :]


def xargs_opens_tty(cmd: Command) -> bool:
    for w in cmd.argv[1:]:
        t = w.text
        if t == "--":
            return False
        if t == "--open-tty" or (t[:1] == "-" and t[1:2] != "-" and "o" in t[1:]):
            return True
    return False


#: A shell named inside a word: ``/bin/sh``, ``--cmd=bash``, ``{"/bin/sh;false"}``.
SHELL_IN_WORD = re.compile(
    r"(?:^|[=\s\"'{;:,(])(?P<shell>(?:/usr)?(?:/s?bin/|/usr/local/bin/)?"
    r"(?:ba|da|z|k|mk|c|tc|a|ya|fi)?sh)(?=$|[\s;\"'})&|,])"
)


#: The end of the reason given for a shell that reads commands the analysis cannot see
#: (another descriptor, the terminal, a pipe of unknown output).
OPAQUE_STDIN = "runs a script from stdin that is only known at run time"


#: Programs that start an interactive shell (which reads their stdin).
STARTS_A_SHELL = frozenset(
    {"screen", "tmux", "capsh", "sg", "newgrp", "script", "byobu", "dtach", "abduco"}
)


def strip_runner_marks(text: str) -> str:
    """``!cmd``, ``%(cmd)``, ``esyscmd(cmd)``, ``exec { 'cmd': }``: the command inside."""
    text = re.sub(r"^[^!]*!", "", text) if "!" in text else text
    return re.sub(r"[%(){}\[\]'\"`]", " ", text)


def lang(prog: str) -> str:
    if prog.startswith("python"):
        return "python"
    return {"nodejs": "node", "luajit": "lua"}.get(prog, prog)


# -- looking through ------------------------------------------------------------
def emit(walker: Walk, cmd: Command, ctx: Ctx) -> None:
    """Record ``cmd`` and look through it: wrappers, nested shells, eval, find -exec."""
    out = walker.out
    for name, value in cmd.assigns:
        # before a program the assignment is that program's alone
        walker.note_assignment(name, prefix=bool(cmd.argv))
        walker.env_effect(name, value, cmd, ctx)
        if cmd.argv and not ctx.via:  # the program may hand it to a shell (PERL5DB, ...)
            for piece in embedded_commands(value.text.replace(DYN, " ")):
                out.speculative.append((piece, cmd.cwd, cmd.program or ""))
    if cmd.program == "env":
        for name, value in env_pairs(cmd):
            walker.note_assignment(name, prefix=True)
            walker.env_effect(name, value, cmd, ctx)
    if ctx.depth > MAX_DEPTH:
        walker.add(cmd)
        walker.mark_opaque(cmd, "commands are nested too deeply to follow")
        return
    if not cmd.argv:
        walker.add(cmd)
        return
    first = cmd.argv[0]
    prog = cmd.program
    if first.dynamic:
        walker.add(cmd)
        walker.mark_opaque(cmd, f"the program name {first.shown!r} is computed at run time")
        return
    if first.glob and can_match_many(first.text):
        out.program_globs.append(first.pattern)
        walker.add(cmd)
        walker.mark_opaque(cmd, f"the program name {first.text!r} is a glob")
        return
    if "/" in first.text and walker.written(first, cmd.cwd):
        walker.add(cmd)
        walker.run_file(first, cmd, ctx, first.text)
        return
    inner = unwrap(cmd) if prog is not None else None
    if inner is not None:
        kind, payload = inner
        walker.add(replace(cmd, transparent=kind != "find"))
        if kind == "argv":
            words = cast("list[Word]", payload)
            stdin = cmd.stdin
            if prog == "xargs" and xargs_opens_tty(cmd):
                stdin = Stdin("file", opaque=True)  # `xargs -o`: the command reads the tty
            if words:
                walker.emit(
                    replace(cmd, argv=tuple(words), via=(*cmd.via, prog or ""), stdin=stdin),
                    deeper(ctx),
                )
        elif kind == "find":
            for argv in cast("list[list[Word]]", payload):
                walker.emit(replace(cmd, argv=tuple(argv), via=(*cmd.via, "find")), deeper(ctx))
        elif kind == "script":
            assert isinstance(payload, Word)
            walker.nested_script(payload, cmd, ctx, prog or "")
        return
    if prog == "eval":
        walker.add(cmd)
        joined = [w for w in cmd.argv[1:]]
        if any(w.download for w in joined):
            out.downloads_into_shell.append("eval of a downloaded script")
        ran: Ctx | None = None
        if any(w.dynamic for w in joined):
            walker.mark_opaque(cmd, "eval runs text only known at run time")
        elif joined:
            text = literal_word(" ".join(w.text for w in joined))
            ran = walker.nested_script(text, cmd, ctx, "eval")
        if not cmd.via:
            flow.call(walker, "eval", [], ctx, ran)
        return
    if prog in SHELLS or (prog is not None and is_interpreter(prog)):
        walker.add(cmd)
        walker.shell_like(cmd, ctx, prog)
        return
    if prog in ("at", "batch"):
        # at/batch run the script they read on stdin (or from -f FILE) later.
        walker.add(cmd)
        stdin = cmd.stdin
        if stdin is not None and stdin.download:
            out.downloads_into_shell.append(f"a download is fed into {prog}")
        elif stdin is not None and stdin.text is not None:
            walker.nested_script(literal_word(stdin.text), cmd, ctx, prog)
        elif stdin is not None and stdin.opaque:
            walker.mark_opaque(cmd, f"{prog} runs a script only known at run time")
        for i, w in enumerate(cmd.argv[1:-1], 1):
            if w.text == "-f":
                walker.run_file(cmd.argv[i + 1], cmd, ctx, prog)
        return
    if prog in SOURCE_BUILTINS:
        walker.add(cmd)
        if cmd.stdin and cmd.stdin.download:
            out.downloads_into_shell.append(f"{prog} of a downloaded script")
        target = cmd.argv[1] if len(cmd.argv) > 1 else None
        ran = None
        if target is not None:
            if target.text in ("/dev/stdin", "/proc/self/fd/0", "/dev/fd/0"):
                walker.shell_stdin(cmd, ctx, prog)
            else:
                ran = walker.run_file(target, cmd, ctx, prog)
        if not cmd.via:
            flow.call(walker, prog, [], ctx, ran)  # it may have changed anything
        return
    if prog == "alias":
        # With expand_aliases an alias runs its value: look at it as a command line.
        walker.add(cmd)
        for w in cmd.argv[1:]:
            if "=" in w.text:
                value = replace(w, text=w.text.split("=", 1)[1], fallback="")
                walker.nested_script(value, cmd, ctx, "alias")
        return
    if prog == "trap" and len(cmd.argv) > 2:
        walker.add(cmd)
        walker.nested_script(cmd.argv[1], cmd, ctx, "trap")
        return
    if prog in ("npm", "pnpm", "yarn", "bun") and cmd.cwd is not None:
        manifest = lexical("package.json", cmd.cwd)
        if manifest in out.written_files:
            walker.add(cmd)
            walker.package_scripts(out.written_files[manifest], cmd, ctx)
            return
    parts = look_inside(cmd)
    if parts is not None:
        walker.add(cmd)
        walker.follow(parts, cmd, ctx)
        return
    walker.add(cmd)
    if prog in DOWNLOADERS:
        out.downloaded_files |= download_targets(cmd)
    walker.hidden_shell(cmd, ctx)
    if prog not in NON_RUNNERS and not ctx.via:
        walker.speculate(cmd)


def run_file(walker: Walk, w: Word, cmd: Command, ctx: Ctx, via: str) -> Ctx | None:
    """``cmd`` runs the script file ``w`` (source, bash FILE, ./FILE, BASH_ENV=FILE); the
    context after it, when its text is known."""
    cwd = cmd.cwd
    if w.download:
        walker.out.downloads_into_shell.append(f"{via} runs a downloaded script")
        return None
    if walker.written(w, cwd):
        content = walker.file_content(w, cwd or "/")
        if content is None:
            if not w.dynamic and maybe_downloaded(walker, w.text, cmd):
                walker.out.downloads_into_shell.append(
                    f"{via} runs a script this line may download"
                )
            walker.opaque(f"{via} runs a file this command writes, whose content is unknown")
            return None
        return walker.nested_script(literal_word(content), cmd, ctx, via)
    elif w.dynamic or w.subst:
        walker.opaque(f"{via} runs a script whose name or content is only known at run time")
    elif via in SOURCED_VARIABLES:
        walker.opaque(f"{via} makes every shell started here run {w.text}")
    elif maybe_downloaded(walker, w.text, cmd):
        walker.out.downloads_into_shell.append(f"{via} runs a script this line may download")
    return None


def speculate(walker: Walk, cmd: Command) -> None:
    """An unknown program may run what it reads on stdin or holds in its arguments (or in
    the variables set for it): each text that could be a command line is looked at."""
    prog = cmd.program or ""
    if prog in STARTS_A_SHELL:
        walker.shell_stdin(cmd, Ctx(cmd.cwd, {}, 1, cmd.via), prog)
    stdin = cmd.stdin
    spec = walker.out.speculative
    if stdin is not None and stdin.text:
        text = stdin.text[:20_000]
        spec.append((text, cmd.cwd, prog))
        stripped = strip_runner_marks(text)
        if any(ch in text for ch in "!%({") and stripped.split() != text.split():
            spec.append((stripped, cmd.cwd, prog))
        for piece in embedded_commands(text):
            spec.append((piece, cmd.cwd, prog))
    texts = [w.text.replace(DYN, " ") for w in cmd.argv[1:]]
    texts += [v.text.replace(DYN, " ") for _, v in cmd.assigns]
    for text in texts:
        if len(text) >= 20_000:
            continue
        if any(ch in text for ch in " !;|("):
            spec.append((strip_runner_marks(text), cmd.cwd, prog))
        for piece in embedded_commands(text):
            spec.append((piece, cmd.cwd, prog))


#: Interpreters whose code is command lines (a program name runs that program).
SHELL_LIKE_LANGUAGES = frozenset({"pwsh", "powershell"})


def follow(walker: Walk, parts: list[tuple[str, Any]], cmd: Command, ctx: Ctx) -> None:
    prog = cmd.program or ""
    for kind, payload in parts:
        if kind == "argv":
            # A runner's command (`uv run pytest`): the runner's own rule covers it
            # (transparent for allow rules); deny and ask rules and the presets see it.
            words = cast("list[Word]", payload)
            if words:
                inner = replace(cmd, argv=tuple(words), via=(*cmd.via, prog), transparent=True)
                walker.emit(inner, deeper(ctx))
        elif kind == "script":
            walker.nested_script(cast(Word, payload), cmd, ctx, prog)
        elif kind == "file":
            walker.run_file(cast(Word, payload), cmd, ctx, prog)
        elif kind == "makefile":
            walker.makefile(cast(Word, payload), cmd, ctx)
        elif kind in ("write", "read"):
            w = cast(Word, payload)
            op = ">" if kind == "write" else "<"
            pseudo = Command((), cmd.cwd, (Redirect(op, w),), via=cmd.via, transparent=True)
            walker.add(pseudo)
            if kind == "write":
                walker.record_writes(pseudo, None)
        elif kind == "opaque":
            walker.mark_opaque(cmd, str(payload))


def makefile(walker: Walk, w: Word, cmd: Command, ctx: Ctx) -> None:
    cwd = cmd.cwd
    if not w.text and w.content is None:
        # the default makefile: seen only if this line wrote it
        if cwd is None:
            return
        for name in ("GNUmakefile", "makefile", "Makefile"):
            path = lexical(name, cwd)
            if path in walker.out.written_files:
                w = literal_word(path)
                break
        else:
            return
    if not walker.written(w, cwd):
        if w.dynamic or w.subst:
            walker.mark_opaque(cmd, "make runs a makefile only known at run time")
        return
    content = walker.file_content(w, cwd or "/")
    if content is None:
        walker.mark_opaque(cmd, "make runs a makefile this command writes, of unknown content")
        return
    scripts, why = makefile_scripts(content)
    if why:
        walker.mark_opaque(cmd, why)
    for body in scripts:
        walker.nested_script(literal_word(body), cmd, ctx, "make")


def package_scripts(walker: Walk, content: str | None, cmd: Command, ctx: Ctx) -> None:
    """npm/yarn run scripts of a package.json this line wrote: look at every one."""
    import json

    try:
        scripts = json.loads(content or "").get("scripts", {}) if content else None
    except (ValueError, AttributeError):
        scripts = None
    if not isinstance(scripts, dict):
        walker.mark_opaque(cmd, "package.json is written by this command; its scripts are unknown")
        return
    for body in scripts.values():
        if isinstance(body, str):
            walker.nested_script(literal_word(body), cmd, ctx, "package.json")


def hidden_shell(walker: Walk, cmd: Command, ctx: Ctx) -> None:
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
        if i + 2 < len(words) and words[i + 1].text == "-c" and w.text.rsplit("/", 1)[-1] in SHELLS:
            walker.nested_script(words[i + 2], cmd, ctx, prog)
            continue
        m = SHELL_IN_WORD.search(w.text)
        if m is None and w.text not in ("shell", "sh", "bash", "repl", "console"):
            continue
        rest = w.text[m.start("shell") :] if m is not None else ""
        if " " in rest or ";" in rest:
            walker.nested_script(literal_word(rest), cmd, ctx, prog)
        if any(REMOTE.search(x.text) for x in words):
            walker.mark_opaque(cmd, f"{prog} may hand what it downloads to a shell")
        # and the shell it starts reads this command's stdin
        walker.shell_stdin(cmd, ctx, f"{prog} (a shell it may start)")
        return


def shell_stdin(walker: Walk, cmd: Command, ctx: Ctx, prog: str) -> None:
    stdin = cmd.stdin
    if stdin is None:
        return
    if stdin.download:
        walker.out.downloads_into_shell.append(f"a download is fed into {prog}")
    elif stdin.text is not None:
        walker.nested_script(literal_word(stdin.text), cmd, ctx, prog, stdin_used=True)
    elif stdin.opaque:
        walker.mark_opaque(cmd, f"{prog} {OPAQUE_STDIN}")


def shell_like(walker: Walk, cmd: Command, ctx: Ctx, prog: str) -> None:
    """A shell or interpreter: what code it runs (-c/-e, a file, or stdin)."""
    out = walker.out
    inv = invocation(cmd, prog)
    is_shell = prog in SHELLS
    if "xargs" in cmd.via and cmd.stdin is not None and cmd.stdin.download:
        out.downloads_into_shell.append(f"xargs hands a download to {prog}")
    if inv.code is not None:
        if inv.code.download:
            out.downloads_into_shell.append(f"{prog} runs a downloaded script")
        if is_shell:
            walker.nested_script(inv.code, cmd, ctx, prog)
        elif inv.code.dynamic:
            walker.mark_opaque(cmd, f"{prog} runs code only known at run time")
        elif prog in SHELL_LIKE_LANGUAGES:
            walker.nested_script(inv.code, cmd, ctx, prog)
        else:
            walker.follow(code_parts(inv.code.text, lang(prog)), cmd, ctx)
            for piece in embedded_commands(inv.code.text):
                out.speculative.append((piece, cmd.cwd, prog))
        return
    if inv.script is not None:
        if is_shell:
            walker.run_file(inv.script, cmd, ctx, prog)
        elif inv.script.download:
            out.downloads_into_shell.append(f"{prog} runs a downloaded script")
        elif walker.written(inv.script, cmd.cwd) or inv.script.subst:
            content = walker.file_content(inv.script, cmd.cwd or "/")
            if content is None:
                walker.mark_opaque(cmd, f"{prog} runs a script this command makes")
            else:
                walker.follow(code_parts(content, lang(prog)), cmd, ctx)
        elif not inv.script.dynamic and maybe_downloaded(walker, inv.script.text, cmd):
            out.downloads_into_shell.append(f"{prog} runs a script this line may download")
        else:
            for piece in embedded_commands(inv.script.text):  # `guile -c CODE`, ...
                out.speculative.append((piece, cmd.cwd, prog))
        return
    stdin = cmd.stdin
    if stdin is None:
        return
    if is_shell:
        walker.shell_stdin(cmd, ctx, prog)
    elif stdin.download:
        out.downloads_into_shell.append(f"a download is fed into {prog}")
    elif stdin.text is not None:
        walker.follow(code_parts(stdin.text, lang(prog)), cmd, ctx)
        for piece in embedded_commands(stdin.text[:20_000]):
            out.speculative.append((piece, cmd.cwd, prog))
    elif stdin.opaque:
        walker.mark_opaque(cmd, f"{prog} {OPAQUE_STDIN}")


def nested_script(
    walker: Walk, code: Word, cmd: Command, ctx: Ctx, via: str, *, stdin_used: bool = False
) -> Ctx | None:
    """Walk ``code``, run by ``cmd``; the context it ends in (None: not walked)."""
    if code.dynamic:
        if code.download:
            walker.out.downloads_into_shell.append(f"{via} runs a downloaded script")
        walker.opaque(f"{via} runs code only known at run time")
        return None
    inner = deeper(ctx)
    inner.cwd = cmd.cwd
    inner.via = (*cmd.via, via)
    # The code's commands read what the command reads (`echo X | bash -c 'sh'`), unless
    # the script itself came from that stdin (`echo X | bash`).
    inner.stdin = None if stdin_used else cmd.stdin
    saved = walker.last_output
    walker.script(code.text, inner)
    walker.last_output = saved
    return inner
