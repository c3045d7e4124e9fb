"""Editors and pagers: vim, emacs, less/more/man and the commands they run."""

from __future__ import annotations

import re

from codingcode.shell.model import DYN, Command, literal_word
from codingcode.shell.programs.common import Part, lit_word

# -- editors and pagers -----------------------------------------------------------------
VIM = frozenset({"vim", "vi", "nvim", "ex", "view", "vimdiff", "gvim", "rvim", "rview", "evim"})


PAGERS = frozenset({"less", "more", "most"})


_VIM_CODE = re.compile(
    r"(^|[|\s:])(!|sy(stem)?\(|py(thon)?3?\b|lua\b|perl\b|ruby\b|"
    r"r(ead)?\s*!|w(rite)?\s*!|te(rminal)?\b|sh(ell)?\b|so(urce)?\b|"
    r"exe(cute)?\b|call\b|let\b|norm(al)?\b|map\b|au(tocmd)?\b)"
)


def vim_command_parts(text: str) -> list[Part]:
    """An ex command: ``!cmd`` runs a shell command; anything else that can run one
    (system(), :terminal, :python, :source, ...) is opaque."""
    parts: list[Part] = []
    for piece in text.split("\n"):
        body = piece.strip().lstrip(":").strip()
        if not body:
            continue
        if body.startswith("!"):
            parts.append(("script", lit_word(body[1:])))
        elif _VIM_CODE.search(body):
            parts.append(("opaque", f"the editor command {body[:40]!r} can run commands"))
    return parts


def vim_parts(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        t = w.text
        if t in ("-c", "--cmd") and i + 1 < len(rest):
            parts.extend(vim_command_parts(rest[i + 1].text))
        elif t.startswith("+") and len(t) > 1:
            parts.extend(vim_command_parts(t[1:]))
        elif t in ("-S", "-s", "-u", "-i") and i + 1 < len(rest) and t != "-i":
            parts.append(("opaque", f"{cmd.program} {t} reads editor commands from a file"))
        elif t.startswith("-S") and len(t) > 2:
            parts.append(("opaque", f"{cmd.program} -S reads editor commands from a file"))
    stdin = cmd.stdin
    if stdin is not None and (
        cmd.program == "ex" or any(w.text in ("-e", "-es", "-E", "-s", "-Es") for w in rest)
    ):
        if stdin.text is not None:
            parts.extend(vim_command_parts(stdin.text))
        elif stdin.opaque or stdin.download:
            parts.append(("opaque", f"{cmd.program} reads editor commands from stdin"))
    return parts


def pager_parts(cmd: Command) -> list[Part]:
    for w in cmd.argv[1:]:
        if w.text.startswith("+") and any(c in w.text for c in "!|"):
            return [("opaque", f"{cmd.program} {w.text} runs a command")]
    return []


# -- emacs --eval ------------------------------------------------------------------------
EMACS = frozenset({"emacs", "emacsclient", "xemacs", "emacs-nox"})


_ELISP_STR = r'"((?:[^"\\]|\\.)*)"'


#: Lisp calls that hand a string to a shell.
_ELISP_SHELL_CALL = re.compile(
    r"\((?:async-)?shell-command(?:-to-string|-on-region)?\s+"
    r"|\((?:compile|call-process-shell-command|process-file-shell-command)\s+"
    r"|\(start-process-shell-command\s+\S+\s+\S+\s+"
)


#: Lisp that starts processes or shells in ways not followed here.
_ELISP_SPAWN = re.compile(
    r"\((?:call-process|call-process-region|start-process|start-file-process|make-process|"
    r"process-lines|process-file|make-comint|make-comint-in-buffer|term|ansi-term|shell|"
    r"eshell|vterm|server-eval|eval|load|load-file|require|funcall|apply|"
    r"dired-do-shell-command|dired-do-async-shell-command|executable-interpret)[\s)]"
)


def emacs_parts(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    for i, w in enumerate(rest):
        name, eq, _ = w.text.partition("=")
        if name not in ("--eval", "-eval", "--execute", "-execute"):
            continue
        code = w.text[len(name) + 1 :] if eq else (rest[i + 1].text if i + 1 < len(rest) else "")
        if DYN in code:
            parts.append(("opaque", "emacs evaluates Lisp only known at run time"))
            continue
        for m in _ELISP_SHELL_CALL.finditer(code):
            lit = re.match(_ELISP_STR, code[m.end() :])
            if lit is None:
                parts.append(("opaque", "emacs --eval runs a shell command it builds"))
            else:
                parts.append(("script", literal_word(_elisp_unescape(lit.group(1)))))
        if _ELISP_SPAWN.search(code):
            parts.append(("opaque", "emacs --eval starts a process or a shell"))
        for lit in re.finditer(_ELISP_STR, code):
            text = _elisp_unescape(lit.group(1))
            if text.startswith(("/", "~", ".")) and " " not in text:
                parts.append(("read", literal_word(text)))
    return parts


def _elisp_unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)
