"""Control flow: what a variable, alias, function or the directory may be where it is used.

The walk goes through a script once, in order. Where bash may or may not run a part (the
right of ``&&``/``||``, the branches of ``if`` and ``case``, the body of a loop, a function
called somewhere), a name that part may change has no one value after it: it becomes
unknown (``DYN``), so a program named by it is an unknown program (opaque: asked about,
never read-only) rather than the value the walk happened to see first or last. The same for
the working directory (``cd``). A background job (``&``) runs in a subshell: what it
assigns never reaches the script.

Aliases live among the variables under :data:`ALIAS` keys (so they merge the same way), and
a command whose name is an alias of this line is looked at as the alias's value.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from codingcode.shell.context import Ctx, Walk
from codingcode.shell.model import DYN, Command, Word, literal_word

#: The key under which an alias's value is kept among the variables.
ALIAS = f"{DYN}alias:"
#: Set once a name reference (``declare -n``) exists: any assignment may assign any name.
NAMEREFS = f"{DYN}namerefs"
#: The value of a variable that differs between paths, each of which the line assigned a
#: literal: MERGED + the variable's name (unknown, yet with known choices).
MERGED = f"{DYN}\x01"
#: At most this many choices are looked at one by one (more: an unknown program).
MAX_CHOICES = 16
#: Stands for "every name" in a set of names a part may change (``eval``, ``source``).
EVERYTHING = f"{DYN}*"

#: Builtins that assign the variables named among their arguments.
ASSIGNING = frozenset(
    {"read", "mapfile", "readarray", "printf", "getopts", "let", "wait", "unset", "select"}
)
#: Builtins whose text runs in this shell and may assign anything.
RUNS_HERE = frozenset({"eval", "source", "."})
#: Builtins that change the working directory.
CHANGES_DIR = frozenset({"cd", "pushd", "popd"})
#: Variables those builtins assign besides the ones they are given.
_IMPLICIT = {
    "read": ("REPLY",),
    "mapfile": ("MAPFILE",),
    "readarray": ("MAPFILE",),
    "getopts": ("OPTIND", "OPTARG"),
    "select": ("REPLY",),
}
_NAME = re.compile(r"[A-Za-z_]\w*")
_ARITH_ASSIGN = re.compile(
    r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?(?:[-+*/%&|^]|<<|>>)?=(?!=)"
    r"|([A-Za-z_]\w*)\s*(?:\+\+|--)|(?:\+\+|--)\s*([A-Za-z_]\w*)"
)
_ISOLATED = frozenset({"subshell", "command_substitution", "process_substitution"})


class Snapshot:
    """What ``ctx`` held before a part of the script: the values of the names the part may
    change (read from its text: no copy of every variable, so a long chain of branches
    stays linear), or all of them when the part may change anything (eval, source)."""

    __slots__ = ("cwd", "full", "values")

    def __init__(self, walker: Walk, ctx: Ctx, nodes: list[Any]) -> None:
        self.cwd = ctx.cwd
        names: set[str] = set()
        for node in nodes:
            names |= assigned(walker, node)[0]
        self.full: dict[str, str] | None = None
        self.values: dict[str, str | None] = {}
        if EVERYTHING in names or NAMEREFS in ctx.vars:
            ctx.owns_vars = False  # the next change copies: ctx.vars stays as it was
            self.full = ctx.vars
        else:
            vars_ = ctx.vars
            self.values = {n: vars_.get(n) for n in names}

    def value(self, name: str) -> str | None:
        if self.full is not None:
            return self.full.get(name)
        return self.values.get(name)

    def changed(self, ctx: Ctx) -> tuple[set[str], bool]:
        """The names changed since, and whether the directory did."""
        cwd = self.cwd != ctx.cwd
        after = ctx.vars
        if self.full is not None:
            before = self.full
            if before is after:
                return set(), cwd
            return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}, cwd
        return {n for n, v in self.values.items() if after.get(n) != v}, cwd


def forget(
    walker: Walk, ctx: Ctx, names: set[str], cwd: bool, origin: Snapshot | None = None
) -> None:
    """``names`` (and the directory, when ``cwd``) have no one value any more. A variable
    whose value was known before the part (``origin``) and is known now becomes *merged*:
    still unknown, but one of the literal values the line gives it (``choices``)."""
    if cwd:
        ctx.cwd = None
    if not names:
        return
    if NAMEREFS in ctx.vars:
        names = names | {EVERYTHING}
    if EVERYTHING in names:
        walker.literal_values[EVERYTHING] = None
        names = set(ctx.vars) | (names - {EVERYTHING})
    current = ctx.vars
    new: dict[str, str] = {}
    for name in names:
        if name == NAMEREFS:
            continue
        now = current.get(name)
        before = origin.value(name) if origin is not None else None
        if origin is not None and _known(now) and _known(before) and _NAME.fullmatch(name):
            new[name] = MERGED + name
        else:
            new[name] = DYN
    if all(current.get(n) == v for n, v in new.items()):
        return
    ctx.set_vars().update(new)
    if "IFS" in names:
        walker.opaque("IFS depends on the path the script takes")


def _known(value: str | None) -> bool:
    return value is not None and (DYN not in value or value.startswith(MERGED))


def merged_name(text: str) -> str | None:
    """The variable a word is the merged value of (``$p`` after branches), or None."""
    if text.startswith(MERGED) and _NAME.fullmatch(text[len(MERGED) :]):
        return text[len(MERGED) :]
    return None


def choices(walker: Walk, name: str) -> list[str] | None:
    """Every value the line may give ``name`` (its literal assignments), or None when one
    is not known (read, a loop variable, a substitution, eval of unknown text...)."""
    found = walker.literal_values.get(name)
    if found is None or EVERYTHING in walker.literal_values or len(found) > MAX_CHOICES:
        return None
    return sorted(found)


def alternatives(walker: Walk, groups: list[list[Any]], ctx: Ctx) -> None:
    """Parts of which any, one or none may run (branches): each is walked from what was
    known before the first; after them, what any of them changed is unknown."""
    names: set[str] = set()
    cwd = False
    origin = Snapshot(walker, ctx, [node for group in groups for node, _ in group])
    for group in groups:
        forget(walker, ctx, names, cwd, origin)
        before = Snapshot(walker, ctx, [node for node, _ in group])
        visit_statements(walker, group, ctx)
        more, moved = before.changed(ctx)
        names |= more
        cwd = cwd or moved
    forget(walker, ctx, names, cwd, origin)


def visit_list(walker: Walk, node: Any, ctx: Ctx) -> None:
    """``a && b || c ...``: after an ``&&``, what came before did run; after an ``||``,
    any of the earlier parts may have been the last one run. After the list, what any
    part after the first changed is unknown."""
    rights: list[tuple[str, Any]] = []
    while node.type == "list" and node.named_children:  # it nests to the left
        kids = node.named_children
        op = next((c.type for c in node.children if c.type in ("&&", "||")), "&&")
        rights.extend(reversed([(op, k) for k in kids[1:]]))
        node = kids[0]
    walker.visit(node, ctx)
    rights.reverse()
    names: set[str] = set()
    cwd = False
    either = False
    origin = Snapshot(walker, ctx, [child for _, child in rights])
    for op, child in rights:
        if op == "||":
            either = True
        if either:
            forget(walker, ctx, names, cwd, origin)
        before = Snapshot(walker, ctx, [child])
        walker.visit(child, ctx)
        more, moved = before.changed(ctx)
        names |= more
        cwd = cwd or moved
    forget(walker, ctx, names, cwd, origin)


def visit_if(walker: Walk, node: Any, ctx: Ctx) -> None:
    conditions: list[Any] = []
    groups: list[list[Any]] = []
    body: list[Any] = []
    kids = node.children
    for i, child in enumerate(kids):
        if not child.is_named:
            continue
        if node.field_name_for_child(i) == "condition":
            conditions.append((child, _background(kids, i)))
        elif child.type in ("elif_clause", "else_clause"):
            if body:
                groups.append(body)
                body = []
            groups.append([(child, False)])
        else:
            body.append((child, _background(kids, i)))
    if body:
        groups.append(body)
    visit_statements(walker, conditions, ctx)
    alternatives(walker, groups, ctx)


def visit_case(walker: Walk, node: Any, ctx: Ctx) -> None:
    items = []
    for child in node.named_children:
        if child.type == "case_item":
            items.append([(child, False)])
        else:
            walker.visit(child, ctx)  # the word matched
    alternatives(walker, items, ctx)


def visit_loop(walker: Walk, node: Any, ctx: Ctx) -> None:
    """A loop's body runs any number of times, seeing what earlier rounds changed: what
    the loop (its variable, condition or body) may change is unknown in it and after it."""
    names, cwd = assigned(walker, node)
    before = Snapshot(walker, ctx, [node])
    kids = node.children
    rest = []
    for i, child in enumerate(kids):
        if not child.is_named:
            continue
        field = node.field_name_for_child(i)
        if node.type == "for_statement" and field == "value":
            walker.visit(child, ctx)  # the words looped over: expanded once, first
        elif field != "variable":
            rest.append((child, _background(kids, i)))
    if node.type in ("for_statement", "select_statement"):
        var = node.child_by_field_name("variable")
        if var is not None:  # its values are words of the loop, not assignments
            walker.literal_values[walker.t(var)] = None
    forget(walker, ctx, names, cwd, before)
    visit_statements(walker, rest, ctx)
    forget(walker, ctx, names | before.changed(ctx)[0], cwd, before)


def visit_function(walker: Walk, node: Any, ctx: Ctx) -> None:
    """A function's body runs whenever it is called, with the values of that time: it is
    looked at here with every variable of the script unknown (and the directory, when the
    script changes it); a call makes what the body changes unknown (``call``)."""
    name_node = node.child_by_field_name("name")
    name = walker.t(name_node) if name_node is not None else ""
    if name:
        walker.functions.add(name)
    inner = ctx.copy()
    # every variable unset (unknown) but the aliases (expanded where the body is read),
    # IFS as it is, and HOME and PWD as the process's unless the script sets them
    own = {k: v for k, v in ctx.vars.items() if k.startswith(ALIAS)} if walker.aliases else {}
    if "IFS" in ctx.vars:
        own["IFS"] = ctx.vars["IFS"]
    for default in ("HOME", "PWD"):
        if walker.mentions(rf"\b{default}\s*\+?=".encode()):
            own[default] = DYN
    inner.vars, inner.owns_vars = own, True
    if walker.mentions(rb"\b(?:cd|pushd|popd)\b"):
        inner.cwd = None
    body = node.child_by_field_name("body")
    if name and body is not None:
        names, cwd = assigned(walker, body)
        old_names, old_cwd = walker.function_effects.get(name, (frozenset(), False))
        walker.function_effects[name] = (old_names | names, old_cwd or cwd)
    for child in node.named_children:
        walker.visit(child, inner.copy())
    walker.last_output = None


def call(walker: Walk, prog: str, words: list[str], ctx: Ctx, inner: Ctx | None) -> None:
    """After a simple command that runs in this shell: what it may have assigned."""
    effects = walker.function_effects.get(prog)
    if effects is not None:
        forget(walker, ctx, set(effects[0]), effects[1])
        return
    if prog in RUNS_HERE:
        if inner is not None:  # eval or source of known text: its assignments stay
            ctx.vars, ctx.owns_vars = inner.vars, False
            ctx.cwd = inner.cwd
            inner.owns_vars = False
        else:
            forget(walker, ctx, {EVERYTHING}, False)
        return
    if prog in ASSIGNING:
        assigned_names = _assigned_by(prog, words, ctx)
        for name in assigned_names:
            walker.literal_values[name] = None  # a value read at run time
        forget(walker, ctx, assigned_names, False)
    elif prog == "alias":
        for w in words:
            name, eq, value = w.partition("=")
            if eq:
                ctx.set_vars()[ALIAS + name] = value
                walker.aliases = True
    elif prog == "unalias":
        names = [w for w in words if not w.startswith("-")]
        if "-a" in words:
            names = [k[len(ALIAS) :] for k in ctx.vars if k.startswith(ALIAS)]
        if names:
            out = ctx.set_vars()
            for name in names:
                out.pop(ALIAS + name, None)


def alias_of(ctx: Ctx, name: str) -> str | None:
    """The value of the alias ``name`` defined in this line, or None."""
    return ctx.vars.get(ALIAS + name)


def expand_alias(value: str, argv: list[Word]) -> tuple[list[Word], bool]:
    """``argv`` with its first word replaced by the alias's value, and whether the value
    could be read as plain words (else ``argv`` unchanged: the program is unknown)."""
    if DYN in value or any(ch in value for ch in ";|&<>()$`\\\n"):
        return argv, False
    try:
        words = shlex.split(value)
    except ValueError:
        return argv, False
    if not words:
        return argv, False
    return [literal_word(w) for w in words] + argv[1:], True


def run_alias(walker: Walk, value: str, cmd: Command, ctx: Ctx) -> None:
    """``cmd`` names an alias whose value is more than plain words: bash runs the value's
    text followed by the arguments; unknown when the value or an argument is."""
    args = cmd.argv[1:]
    if DYN in value or any(w.dynamic for w in args):
        walker.mark_opaque(cmd, "the program is an alias whose value is not known here")
        return
    text = " ".join([value, *(shlex.quote(w.text) for w in args)])
    walker.nested_script(literal_word(text), cmd, ctx, "alias")


def _assigned_by(prog: str, words: list[str], ctx: Ctx) -> set[str]:
    if prog == "printf" or prog == "wait":
        flag = "-v" if prog == "printf" else "-p"
        words = [words[i + 1] for i, w in enumerate(words[:-1]) if w == flag]
    elif prog == "let":
        words = [
            m.group(1) or m.group(2) or m.group(3) for w in words for m in _ARITH_ASSIGN.finditer(w)
        ]
    names = {w.split("[", 1)[0] for w in words if _NAME.fullmatch(w.split("[", 1)[0])}
    names.update(_IMPLICIT.get(prog, ()))
    if DYN in "".join(words):
        names.add(EVERYTHING)  # `read $x`, `printf -v "$name"`: a name only known later
    return names


def assigned(walker: Walk, root: Any) -> tuple[set[str], bool]:
    """The names ``root`` may assign in this shell (not in its subshells), and whether it
    may change the directory, read from its text (a superset)."""
    names: set[str] = set()
    cwd = False
    stack = [root]
    while stack:
        node = stack.pop()
        t = node.type
        if t in _ISOLATED:
            continue
        if t == "variable_assignment":
            parent = node.parent
            if parent is not None and parent.type == "command":
                continue  # `IFS= read -r x`: the assignment is the command's alone
            name = node.child_by_field_name("name")
            if name is not None:
                plain = walker.t(name).split("[", 1)[0]
                names.add(plain)
                names.add(f"{DYN}case:{plain}")  # declare -l/-u NAME=...
        elif t in ("for_statement", "select_statement"):
            var = node.child_by_field_name("variable")
            if var is not None:
                names.add(walker.t(var))
        elif t == "unset_command":
            names.update(walker.t(c) for c in node.named_children)
        elif t == "function_definition":
            continue  # defining runs nothing (a call does: see `call`)
        elif t == "command":
            name_node = node.child_by_field_name("name")
            prog = walker.t(name_node).rsplit("/", 1)[-1] if name_node is not None else ""
            words = [walker.t(c) for c in node.children_by_field_name("argument")]
            effects = walker.function_effects.get(prog)
            if effects is not None:
                names |= effects[0]
                cwd = cwd or effects[1]
            elif prog in CHANGES_DIR:
                cwd = True
            elif prog in RUNS_HERE:
                names.add(EVERYTHING)
                cwd = True
            elif prog in ASSIGNING:
                names |= {w for w in words if _NAME.fullmatch(w)}
                for w in words:
                    names |= {
                        m.group(1) or m.group(2) or m.group(3) for m in _ARITH_ASSIGN.finditer(w)
                    }
                names.update(_IMPLICIT.get(prog, ()))
                if any("$" in w or "`" in w for w in words):
                    names.add(EVERYTHING)
            elif prog in ("alias", "unalias"):
                names |= {ALIAS + w.split("=", 1)[0] for w in words if not w.startswith("-")}
                if "-a" in words:
                    names.add(EVERYTHING)
        elif t.endswith("_expression") or t == "arithmetic_expansion":
            for m in _ARITH_ASSIGN.finditer(walker.t(node)):
                names.add(m.group(1) or m.group(2) or m.group(3))
            continue
        stack.extend(node.named_children)
    return names, cwd


def _background(kids: list[Any], i: int) -> bool:
    return i + 1 < len(kids) and kids[i + 1].type == "&"


def visit_block(walker: Walk, node: Any, ctx: Ctx) -> None:
    """The statements of ``node`` in order; one followed by ``&`` runs in a subshell."""
    kids = node.children
    visit_statements(
        walker, [(c, _background(kids, i)) for i, c in enumerate(kids) if c.is_named], ctx
    )


def visit_statements(walker: Walk, items: list[Any], ctx: Ctx) -> None:
    for child, background in items:
        if background:
            job = ctx.copy()
            job.stdin = None
            walker.visit(child, job)
        else:
            walker.visit(child, ctx)
    walker.last_output = None
