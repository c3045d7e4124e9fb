"""The capability set of an allowed call: exactly the paths it names (issue 11, part 2).

When the pipeline allows a call, :func:`capabilities_for` lists the paths the call names —
read, or written — so that the sandbox can show that one call exactly those of its masked
paths (``cat .env`` after R9 asked: ``.env``, read-only) and nothing more. A path that is not
masked gains nothing from being listed; a named *parent* of a masked path exposes nothing.
The sandbox never sees rules; it sees this set.

**Exposure only by an explicit grant** (:func:`granted_capabilities`): a masked path becomes
visible to a call only when the user approved that very call (their answer to the question),
or when the allow rule that matched names that path literally. A mode pass (bypass,
acceptEdits), read-only auto-allow, ``approvals.autoAllowSandboxed``, a hook's allow and a
session grant allow the call but show it none of its masked paths: the analysis behind them
can be wrong about what the command does, and the sandbox is what holds then.

Commands are read through the shell analysis (:mod:`codingcode.shell`), used here
read-only: each simple command's arguments and redirect targets, resolved against that
command's directory. Words only known at run time (``$X``, ``$(...)``) and glob patterns
(``.env*``) name nothing: exposure follows what the rules saw, literally.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from codingcode import shell
from codingcode.approval.call import CONFIRM, HOOK, MODE, PERMISSION_HOOK, RULES, WHITELIST
from codingcode.approval.presets import NAMES_ONLY
from codingcode.capabilities import CapabilitySet
from codingcode.paths import lexical, spellings
from codingcode.sandbox.masks import MaskSpec
from codingcode.sandbox.secrets import SecretMatcher
from codingcode.tools.declarations import Lookup, builtin_declaration

if TYPE_CHECKING:
    from codingcode.approval.call import LayerResult, ToolCall
    from codingcode.approval.rules import Rule
    from codingcode.sandbox.policy import SandboxPolicy

#: Redirections that write their target.
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", "1>", "2>", "1>>", "2>>"})
#: Programs that write (or remove) every file they name.
_WRITES_ALL = frozenset({"tee", "touch", "truncate", "rm", "shred", "unlink"})
#: Programs whose last argument is the file or directory they write.
_WRITES_LAST = frozenset({"cp", "mv", "install", "ln", "rsync"})
#: Programs that edit in place with ``-i``.
_IN_PLACE = frozenset({"sed", "perl"})


def capabilities_for(call: ToolCall, domains: Iterable[str] = ()) -> CapabilitySet:
    """What the sandbox may show this one call beyond every command's defaults.
    ``domains``: the names the allow rule that decided it grants (its ``network(...)``
    clause, issue 16); the network policy lets this call reach them (deniedDomains wins)."""
    from codingcode.approval.roles import call_roles, first_with

    reads: set[str] = set()
    writes: set[str] = set()
    roles = call_roles(call.arg_roles, call.args, call.tool, call.origin.kind)
    if "command" in roles.values():  # a tool that runs a command line: what it names
        command = first_with(roles, call.args, "command")
        if command is not None:
            _command_paths(command, lexical(str(call.cwd), call.project_path), reads, writes)
    else:
        effects = call.effects
        for name, role in call.arg_roles.items():
            value = call.args.get(name)
            if role not in ("path", "directory") or not isinstance(value, str) or not value:
                continue
            path = lexical(value, call.project_path)
            if effects is not None and "writes" in effects and role == "path":
                writes.add(path)
            else:
                reads.add(path)
    # Only what exists can be shown (a mask hides an existing path); the rest is noise.
    return CapabilitySet(
        read_paths=frozenset(Path(p) for p in reads - writes if os.path.lexists(p)),
        write_paths=frozenset(Path(p) for p in writes if os.path.lexists(p)),
        domains=frozenset(domains),
    )


#: How to get a masked path shown, said after each reason it was not.
HOW_TO_EXPOSE = "approve the call or add an allow rule naming it"


def granted_capabilities(
    call: ToolCall, result: LayerResult
) -> tuple[CapabilitySet, dict[Path, str]]:
    """What the sandbox may show ``call``, allowed by ``result``, and the paths it named
    that are withheld, each with why. Only an explicit grant exposes (module docstring):
    the user's own answer to this call, or an allow rule naming the path literally. The
    network names a rule or an answer grants (``result.domains``) are kept either way."""
    named = capabilities_for(call, result.domains)
    if not named.read_paths and not named.write_paths:
        return named, {}
    if explicit_answer(result):
        return named, {}
    keep: frozenset[Path] = frozenset()
    if result.layer == RULES and result.rule and not result.preset:
        keep = rule_literal_paths(result.rule, call)
        why = (
            f"the allow rule {result.rule} does not name it literally (a pattern or a "
            f"wildcard never exposes a masked path); {HOW_TO_EXPOSE}"
        )
    else:
        why = withheld_reason(result, call.mode)
    kept = CapabilitySet(
        read_paths=named.read_paths & keep,
        write_paths=named.write_paths & keep,
        network=named.network,
        domains=named.domains,
    )
    withheld = {p: why for p in (named.read_paths | named.write_paths) - keep}
    return kept, withheld


#: The ``answer`` a front end records (``LayerResult(CONFIRM, "allow", ..., answer=TYPED)``)
#: for a command the user typed themselves (the app's ``!cmd``): that very call approved.
TYPED = "typed by the user"


def explicit_answer(result: LayerResult) -> bool:
    """The user approved this very call: their answer to its question, or (the same kind
    of grant) a command the user typed themselves (``answer`` set by the front end, e.g.
    :data:`TYPED`)."""
    return result.layer == CONFIRM and result.action == "allow" and result.answer is not None


def withheld_reason(result: LayerResult, mode: str) -> str:
    """Why the layer that allowed a call shows it none of its masked paths."""
    layer = result.layer
    if layer == MODE:
        what = f"{mode} mode passes"
    elif layer == WHITELIST:
        what = "read-only auto-allows"
    elif layer == CONFIRM:
        what = "approvals.autoAllowSandboxed passes"
    elif layer in (HOOK, PERMISSION_HOOK):
        what = "hooks' allows"
    elif layer == "SessionGrant":
        what = "session grants (approved for another call)"
    else:
        what = f"{layer} allows"
    return f"{what} never expose a masked path; {HOW_TO_EXPOSE}"


def rule_literal_paths(rule: str, call: ToolCall) -> frozenset[Path]:
    """The paths an allow rule's SPEC names literally, resolved as the call's paths are
    (against its directory and the project; ``~`` to the home). A word with a wildcard
    names nothing; ``--opt=PATH`` names PATH."""
    from codingcode.approval.rules import RuleSyntaxError, split_rule

    try:
        spec = split_rule(rule)[1]
    except RuleSyntaxError:
        return frozenset()
    if not spec:
        return frozenset()
    try:
        words = shlex.split(spec)
    except ValueError:
        words = spec.split()
    out: set[Path] = set()
    bases = dict.fromkeys([str(call.cwd), str(call.project_path)])
    for word in words:
        if word.startswith("-"):
            word = word.partition("=")[2]
        if not word or any(c in word for c in "*?[$`"):
            continue
        for base in bases:
            out.add(Path(lexical(word, base)))
    return frozenset(out)


def sandbox_masked_names(
    policy: SandboxPolicy, project: Path
) -> Callable[[ToolCall, bool], dict[Path, str]]:
    """:func:`masked_names` for what the sandbox masks under ``policy``: the file tools go
    by the secret classes (their denyRead and deny-rule paths are refused outright:
    :class:`codingcode.sandbox.masks.ReadGuard`), the commands by every mask."""
    from codingcode.sandbox.backends import mask_specs
    from codingcode.sandbox.masks import home_dirs, relocated_specs
    from codingcode.sandbox.secrets import state_dir_mask

    homes = home_dirs(os.environ)
    specs = mask_specs(policy)
    specs = [*specs, *relocated_specs(specs, os.environ, homes)]
    classes = [s for s in specs if s.secret_class]
    return masked_names(
        SecretMatcher(classes, project, homes, state_dir=state_dir_mask(), for_tools=True),
        SecretMatcher(specs, project, homes),
    )


def masked_names(
    tools: SecretMatcher, commands: SecretMatcher
) -> Callable[[ToolCall, bool], dict[Path, str]]:
    """For the pipeline: the masked paths a call names (what :func:`capabilities_for`
    lists), each with what masks it. ``tools`` judges the tools that run outside the
    sandbox (spilled outputs in the state directory are theirs to read), ``commands`` the
    others. Each path is resolved with :func:`spellings`, keyed as the rule engine keys it
    (within one decision, a path's symlinks are resolved once)."""
    from codingcode.approval.roles import call_roles, first_with

    def check(call: ToolCall, with_commands: bool = True) -> dict[Path, str]:
        """``with_commands=False``: {} for a tool that runs commands (the sandbox holds)."""
        roles = call_roles(call.arg_roles, call.args, call.tool, call.origin.kind)
        named: list[tuple[str, str]] = []
        if "command" in roles.values():
            if not with_commands:
                return {}
            matcher = commands
            command = first_with(roles, call.args, "command")
            if command is not None:
                cwd = lexical(str(call.cwd_for(roles)), call.project_path)
                _command_paths(command, cwd, set(), set(), named)
        else:
            matcher = tools
            cwd = str(call.cwd_for(roles))
            for name, role in roles.items():
                value = call.args.get(name)
                if role in ("path", "directory") and isinstance(value, str) and value:
                    named.append((value, cwd))
            if not named and "glob" in roles.values():
                # A search with no directory walks the project: a project inside a masked
                # directory (``cd ~/.aws``) is a masked path it reads.
                named.append((".", cwd))
        out: dict[Path, str] = {}
        for text, where in named:
            found = spellings(text, where)
            spec = matcher.match(found[0], found)
            if spec is not None:
                kind = f"{spec.secret_class} secrets" if spec.secret_class else spec.origin
                out[Path(found[0])] = f"{spec.what}, {kind}" if spec.what else kind
        return out

    return check


def _command_paths(
    command: str,
    cwd: str,
    reads: set[str],
    writes: set[str],
    raw: list[tuple[str, str]] | None = None,
) -> None:
    """``raw``: also collects each named path as written, with the directory it is
    relative to (for :func:`spellings`)."""
    analysis = shell.analyze(command, cwd)
    for c in analysis.commands:
        if c.cwd is None:
            continue
        words = [w for w in c.argv[1:] if not w.dynamic and w.text]
        program = c.program
        written: set[int] = set()
        if program in NAMES_ONLY:  # echo .env prints a name, it opens nothing
            words = []
        elif program in _WRITES_ALL:
            written = set(range(len(words)))
        elif program in _WRITES_LAST:
            operands = [i for i, w in enumerate(words) if not w.text.startswith("-")]
            written = set(operands[-1:])
        elif program in _IN_PLACE and any(
            w.text.startswith("-i") or w.text == "--in-place" for w in words
        ):
            written = set(range(len(words)))
        for i, w in enumerate(words):
            target = writes if i in written else reads
            target.update(_word_paths(w, c.cwd, raw))
        for r in c.redirects:
            if r.target is None or r.target.dynamic or not r.target.text:
                continue
            target = writes if r.op in _WRITE_REDIRECTS else reads
            target.update(_word_paths(r.target, c.cwd, raw))


def _word_paths(w: shell.Word, cwd: str, raw: list[tuple[str, str]] | None = None) -> list[str]:
    """The path one word names: literal words only. A glob names nothing here — bash
    expands it at run time, and the rules judged the pattern, not its matches — and
    neither does a word built by a substitution, even one the analysis could evaluate."""
    if w.glob or w.subst:
        return []
    text = w.text
    if text.startswith("-"):
        # --file=.env names .env; a bare option names nothing.
        _, eq, value = text.partition("=")
        if not eq or not value:
            return []
        text = value
    if raw is not None:
        raw.append((text, cwd))
    return [lexical(text, cwd)]


def _reads_named_files(declared: Lookup, tool: str) -> bool:
    """Deny rules of a tool that reads the files or directories its arguments name, and
    writes nothing (read_file, search_files), name paths a command must not read: the
    sandbox masks them. (A deny rule of a tool that writes is not a read mask: it would hide
    files the user only wanted kept unchanged.)"""
    found = declared(tool)
    return (
        found is not None
        and found.origin.kind != "mcp"
        and found.names_files
        and found.effects is not None
        and "reads" in found.effects
        and not found.effects & {"writes", "runs"}
    )


def deny_rule_masks(
    rules: Iterable[Rule], project: Path, declared: Lookup = builtin_declaration
) -> list[MaskSpec]:
    """The user's deny rules on read paths as sandbox masks (never exposed by an approval:
    the rules refuse every call that names them). The sandbox gets patterns, not rules.
    ``declared``: what the tools the rules name declare (default: the built-ins)."""
    from codingcode.approval.rules import RuleSyntaxError, path_pattern, split_rule

    masks = []
    for rule in rules:
        if rule.action != "deny":
            continue
        try:
            tool, spec = split_rule(rule.text)
        except RuleSyntaxError:
            continue
        if (
            spec is None
            or spec.strip() in ("", "*", "**")
            or not _reads_named_files(declared, tool)
        ):
            continue
        if re.match(r"^[A-Za-z_][\w-]*:", spec) and "/" not in spec:
            continue  # a parameter rule (path:...), not a path
        pattern = path_pattern(spec.strip(), project)
        masks.append(MaskSpec(pattern, f"deny rule {rule.text}", exposable=False))
    return masks
