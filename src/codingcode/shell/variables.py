"""Variables: assignments tracked through the walk, and variables that make code run."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from codingcode.shell import flow
from codingcode.shell.context import Ctx, Walk
from codingcode.shell.model import DYN, Command, Redirect, Word, literal_word
from codingcode.shell.programs import RISKY_VARIABLES, SHELLS


def declared_case(flags: str) -> str:
    if "l" in flags:
        return "lower"
    if "u" in flags:
        return "upper"
    return ""


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


def note_assignment(walker: Walk, name: str, *, prefix: bool = False) -> None:
    if name in RISKY_VARIABLES or name.startswith(("LD_", "DYLD_", "GIT_CONFIG")):
        walker.out.risky_assignments.append(name)


def env_effect(walker: Walk, name: str, value: Word, cmd: Command | None, ctx: Ctx) -> None:
    """Variables that make bash or another program run code: look at that code."""
    where = cmd or Command((), ctx.cwd, via=ctx.via)
    if name.startswith(("BASH_FUNC_", "BASH_ALIASES", "BASH_CMDS")):
        walker.opaque(f"{name} defines code the shell runs later")
    elif name == "SHELL" and cmd is not None and cmd.argv:
        if value.dynamic or value.text.rsplit("/", 1)[-1] not in SHELLS:
            walker.opaque("SHELL names a program that tools (script, make, vim...) run")
    elif name in CODE_VARIABLES:
        text = value.text
        if name == "LESSOPEN" and not text.startswith(("|", "-")):
            # its output names the file less shows instead: any path in it is read
            for token in text.split():
                if token.startswith(("/", "~", ".")):
                    target = (Redirect("<", literal_word(token)),)
                    walker.add(Command((), ctx.cwd, target, via=ctx.via, transparent=True))
        if name == "LESSOPEN" or name == "LESSCLOSE":
            text = text.lstrip("|-")
        walker.nested_script(replace(value, text=text), where, ctx, name)
    elif name in PROMPT_VARIABLES:
        # prompts are expanded: the command substitutions in them run
        walker.nested_script(replace(value, text=": " + value.text), where, ctx, name)
    elif name in SOURCED_VARIABLES:
        walker.run_file(value, where, ctx, name)
    elif name in ("LD_PRELOAD", "LD_AUDIT"):
        walker.opaque(f"{name} loads a library into every program that runs")
    elif name == "IFS" and value.dynamic:
        walker.opaque("IFS is set to something only known at run time")


def assignment(walker: Walk, node: Any, ctx: Ctx, case: str = "") -> None:
    name_node = node.child_by_field_name("name")
    name = walker.t(name_node) if name_node is not None else ""
    if name_node is not None and name_node.type == "subscript":
        array = name.split("[", 1)[0]
        ctx.set_vars().pop(array, None)
        if array in ("BASH_ALIASES", "BASH_CMDS"):
            walker.opaque(f"{array}[...] defines a command the shell runs later")
        return
    prefix = node.parent is not None and node.parent.type == "command"
    walker.note_assignment(name, prefix=prefix)
    value = node.child_by_field_name("value")
    if value is not None and value.type == "array":
        for child in value.named_children:
            walker.word(child, ctx)
        ctx.set_vars().pop(name, None)
        return
    w = walker.word(value, ctx) if value is not None else literal_word("")
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
        walker.env_effect(name, w, None, ctx)
    if name:
        if flow.NAMEREFS in ctx.vars:  # `ref=x` may assign the variable ref names
            flow.forget(walker, ctx, {flow.EVERYTHING}, False)
        # (unknown, not unset: an unset HOME or PWD would read as the process's own)
        ctx.set_vars()[name] = DYN if w.dynamic else w.text
        literal = walker.literal_values
        if w.dynamic:
            literal[name] = None
        else:
            seen = literal.setdefault(name, set())
            if seen is not None:
                seen.add(w.text)
