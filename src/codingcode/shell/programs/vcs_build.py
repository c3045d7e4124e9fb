"""Version control and build tools: git (config that runs commands), make (recipes)."""

from __future__ import annotations

import re

from codingcode.shell.model import DYN, Command, literal_word
from codingcode.shell.programs.common import Part, join_lits, lit_word, ws

# -- git -----------------------------------------------------------------------------
#: Config keys whose value is a command git runs (``alias.*`` when it starts with ``!``).
_GIT_CMD_KEYS = re.compile(
    r"^(core\.(sshcommand|pager|editor|askpass|fsmonitor|gitproxy)|sequence\.editor|"
    r"pager\..*|diff\.(external|.*\.(command|textconv))|difftool\..*\.cmd|"
    r"mergetool\..*\.cmd|merge\..*\.driver|filter\..*\.(clean|smudge|process)|"
    r"credential\.(.*\.)?helper|gpg\.(.*\.)?program|uploadpack\.packobjectshook|"
    r"remote\..*\.(uploadpack|receivepack)|sendemail\..*|web\.browser|browser\..*\.cmd|"
    r"man\..*\.cmd|instaweb\..*|ssh\.variant|core\.hookspath|include\.path|includeif\..*)$",
    re.IGNORECASE,
)


_GIT_GLOBAL_WITH_ARG = ws("-C -c --git-dir --work-tree --namespace --config-env --exec-path")


def git_parts(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    i = 0
    while i < len(rest):
        t = rest[i].text
        if t == "-c" and i + 1 < len(rest):
            parts.extend(_git_config(rest[i + 1].text))
            i += 2
            continue
        if t.startswith("--exec-path="):
            parts.append(("opaque", "git --exec-path runs git commands from another directory"))
        if t == "--config-env" or t.startswith("--config-env="):
            parts.append(("opaque", "git --config-env takes a setting from the environment"))
        if t in _GIT_GLOBAL_WITH_ARG:
            i += 2
            continue
        if t.startswith("-"):
            i += 1
            continue
        break
    sub = rest[i].text if i < len(rest) else ""
    tail = rest[i + 1 :]
    texts = [w.text for w in tail]
    if sub == "config" and any(
        _GIT_CMD_KEYS.match(x) or x.lower().startswith("alias.")
        for x in texts
        if not x.startswith("-")
    ):
        parts.append(("opaque", "git config stores a command that later git commands run"))
    elif sub == "rebase":
        for j, w in enumerate(tail):
            if w.text in ("-x", "--exec") and j + 1 < len(tail):
                parts.append(("script", tail[j + 1]))
            elif w.text.startswith("--exec="):
                parts.append(("script", lit_word(w.text[7:])))
    elif sub == "bisect" and texts[:1] == ["run"]:
        parts.append(("argv", tail[1:]))
    elif sub == "submodule" and "foreach" in texts:
        after = tail[texts.index("foreach") + 1 :]
        after = [w for w in after if not w.text.startswith("--")]
        if after:
            parts.append(("script", join_lits(after)))
    elif sub == "filter-branch":
        for j, w in enumerate(tail):
            if w.text.endswith("-filter") and j + 1 < len(tail):
                parts.append(("script", tail[j + 1]))
    elif sub in ("difftool", "mergetool"):
        for j, w in enumerate(tail):
            if w.text in ("-x", "--extcmd") and j + 1 < len(tail):
                parts.append(("script", tail[j + 1]))
            elif w.text.startswith("--extcmd="):
                parts.append(("script", lit_word(w.text[9:])))
    return parts


def _git_config(assignment: str) -> list[Part]:
    key, eq, value = assignment.partition("=")
    if DYN in key:
        return [("opaque", "git -c sets a setting only known at run time")]
    if key.lower().startswith("alias.") and value.startswith("!"):
        return [("script", lit_word(value[1:]))]
    if key.lower() in ("core.hookspath",) or key.lower().startswith(("include", "includeif")):
        return [("opaque", f"git -c {key} makes git run files the analysis does not see")]
    if _GIT_CMD_KEYS.match(key):
        return [("script", lit_word(value))] if eq else []
    return []


# -- make -------------------------------------------------------------------------------
def make_parts(cmd: Command) -> list[Part]:
    parts: list[Part] = []
    rest = list(cmd.argv[1:])
    files = False
    for i, w in enumerate(rest):
        t = w.text
        if t in ("-f", "--file", "--makefile") and i + 1 < len(rest):
            parts.append(("makefile", rest[i + 1]))
            files = True
        elif t.startswith(("--file=", "--makefile=")):
            parts.append(("makefile", lit_word(t.split("=", 1)[1])))
            files = True
        elif t.startswith("-f") and len(t) > 2:
            parts.append(("makefile", lit_word(t[2:])))
            files = True
        elif t in ("-E", "--eval") or t.startswith("--eval="):
            code = (
                t.split("=", 1)[1] if "=" in t else (rest[i + 1].text if i + 1 < len(rest) else "")
            )
            parts.extend(_make_eval(code))
        elif "=" in t and not t.startswith("-"):
            name, _, value = t.partition("=")
            if "$(" in value or "${" in value or "`" in value or DYN in value:
                parts.append(("opaque", f"make variable {name} holds code make expands"))
            elif name.strip() in ("SHELL", ".SHELLFLAGS", "MAKESHELL"):
                parts.append(("opaque", f"make {name}= changes the shell recipes run in"))
    if not files:
        parts.append(("makefile", literal_word("")))  # the default makefile, if written here
    return parts


#: make code that can run commands or define rules (whose recipes run): not followed.
_MAKE_EVAL_RUNS = re.compile(
    r"shell|eval|guile|load|include|call|value|foreach|SHELL|[:;`\n]|\$\$|" + DYN
)


_MAKE_FILE_FN = re.compile(r"\$[({]file\s+(>>|>|<)\s*([^,)}\s]+)")


def _make_eval(code: str) -> list[Part]:
    """``make --eval CODE``: file reads and writes are seen; code that could run commands
    or define a rule is opaque."""
    if _MAKE_EVAL_RUNS.search(code):
        return [("opaque", "make --eval runs make code that can run commands")]
    return [
        ("read" if op == "<" else "write", literal_word(path))
        for op, path in _MAKE_FILE_FN.findall(code)
    ]


_MAKE_REF = re.compile(r"\$[({]\s*([^)}\s]*)[^)}]*[)}]|\$[@<^?*%+|]|\$\w")


def makefile_scripts(text: str) -> tuple[list[str], str | None]:
    """The recipes of a makefile as shell scripts (make references become unknown
    variables), and why it is opaque, if it is."""
    scripts: list[str] = []
    why: str | None = None
    for line in text.split("\n"):
        if "$(shell" in line or "${shell" in line or "$(eval" in line:
            why = "the makefile runs $(shell ...) or $(eval ...)"
        if line.startswith("\t"):
            body = line[1:].lstrip("@-+ ")
            body = body.replace("$$", "\x01")
            body = _MAKE_REF.sub("${__make_var}", body).replace("\x01", "$")
            scripts.append(body)
        elif re.match(r"^\s*(SHELL|\.SHELLFLAGS)\s*[:?+]?=", line):
            why = "the makefile sets SHELL"
    return scripts, why
