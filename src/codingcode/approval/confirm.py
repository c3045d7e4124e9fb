"""UserConfirmation (SPEC A5): who answers an ``ask``, what they are shown, what they answer.

A front end that can ask a person implements :class:`Confirmer`: the interactive app, the
terminal prompt here (``codingcode tool`` on a terminal), an MCP elicitation. With no
confirmer (headless, CI) an ``ask`` becomes a deny whose message says how to allow the call.

The answers (issue 13): yes once; yes for this session; always in this project; always for
me; no; no, and tell the model why. A grant saves the narrowest useful rule
(:mod:`codingcode.approval.grants`), shown before it is saved and editable; a call a preset
rule asked about never gets a grant.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from codingcode.capabilities import NO_CAPABILITIES, CapabilitySet

if TYPE_CHECKING:
    from codingcode.approval.call import ToolCall


class Answer(StrEnum):
    ALLOW = "allow"  # this call, once
    SESSION = "session"  # allow, and grant the rule until the session ends
    ALWAYS = "always"  # allow, and save an allow rule in the project (settings.local.json)
    ALWAYS_USER = "always_user"  # allow, and save an allow rule in the user's settings
    DENY = "deny"  # this call, once
    NEVER = "never"  # deny, and save a deny rule in the project

    @property
    def allows(self) -> bool:
        return self in (Answer.ALLOW, Answer.SESSION, Answer.ALWAYS, Answer.ALWAYS_USER)

    @property
    def grants(self) -> bool:
        return self in (Answer.SESSION, Answer.ALWAYS, Answer.ALWAYS_USER, Answer.NEVER)

    @property
    def label(self) -> str:
        """How the audit log and messages name the answer."""
        return {
            Answer.ALLOW: "once",
            Answer.SESSION: "session",
            Answer.ALWAYS: "always (project)",
            Answer.ALWAYS_USER: "always (user)",
            Answer.DENY: "no",
            Answer.NEVER: "never",
        }[self]


@dataclass(frozen=True)
class Reply:
    """An answer with what came with it: the rule as the user edited it, or what to tell
    the model when the answer is no."""

    answer: Answer
    #: The rule a grant saves, when the user changed the suggested one.
    rule: str | None = None
    #: Sent back to the model as the reason of the denial.
    message: str | None = None
    #: The user interrupted the turn (Ctrl-C at the question): a deny saying so.
    interrupted: bool = False


def as_reply(answer: Answer | Reply | str) -> Reply:
    if isinstance(answer, Reply):
        return answer
    try:
        return Reply(Answer(answer))
    except ValueError:
        return Reply(Answer.DENY)


@dataclass(frozen=True)
class ConfirmRequest:
    """What a confirmer shows: the call, why it is asked, and what a grant would save."""

    call: ToolCall
    reason: str
    #: The rule a grant saves (allow) or "never" saves (deny), in the compact form; ``None``
    #: when no rule can be saved (a preset rule asked: it stands).
    suggested_rule: str | None
    #: The rule that asked, if one did (its text), and whether it is a preset rule.
    rule: str | None = None
    preset: bool = False
    #: What the sandbox will let this call do beyond its defaults, if allowed.
    capabilities: CapabilitySet = field(default=NO_CAPABILITIES)
    #: The names the network policy refused to this call, when the question is whether to
    #: allow them and run the command again (issue 16); then ``suggested_rule`` is the
    #: per-program rule a grant saves, or the names themselves (``allowedDomains``).
    network: tuple[str, ...] = ()
    #: With ``network``: whether ``suggested_rule`` is a rule (else a list of names).
    network_rule: bool = False
    #: The masked credentials a command gets as placeholders (``sandbox.credentials``),
    #: one line each.
    credentials: tuple[str, ...] = ()


@runtime_checkable
class Confirmer(Protocol):
    async def confirm(self, request: ConfirmRequest) -> Answer | Reply: ...


#: The choices a person is offered, in order: (key, answer, words).
CHOICES: tuple[tuple[str, Answer, str], ...] = (
    ("y", Answer.ALLOW, "yes, once"),
    ("s", Answer.SESSION, "yes, for this session"),
    ("p", Answer.ALWAYS, "yes, always in this project"),
    ("u", Answer.ALWAYS_USER, "yes, always for me (all projects)"),
    ("n", Answer.DENY, "no"),
    ("t", Answer.DENY, "no, and tell the model why"),
)


def offered(request: ConfirmRequest) -> list[tuple[str, Answer, str]]:
    """The choices for this request: no grant when a preset rule asked or none can be made."""
    if request.suggested_rule is None or request.preset:
        return [c for c in CHOICES if not c[1].grants]
    return list(CHOICES)


def not_offered(request: ConfirmRequest) -> str:
    """Why the grant answers are not offered for this request (said when one is pressed)."""
    if request.preset:
        return (
            "a preset rule asks about this kind of call every time, so it cannot be granted "
            "for the session or always; answer y (once) or n"
        )
    return (
        "no rule can be saved for this call (its text cannot be written as a rule: a `*`, "
        "parentheses, a comma or several lines); answer y (once) or n"
    )


def headless_message(call: ToolCall, reason: str, suggested_rule: str | None) -> str:
    """The deny message when an ``ask`` has no one to answer it."""
    how = []
    if suggested_rule:
        how.append(
            f'add an allow rule such as "{suggested_rule}" to permissions.allow in '
            f".codingcode/settings.local.json (or run `codingcode rules add allow "
            f"'{suggested_rule}'`)"
        )
    how.append("run interactively so the user can confirm it")
    return (
        f"{call.tool} needs the user's confirmation ({reason}), but no one can be asked in "
        f"this run, so it was denied. To allow it: {'; or '.join(how)}."
    )


def _command(call: ToolCall) -> str | None:
    """The command line the call runs, when its tool runs one (its ``command`` role)."""
    from codingcode.approval.roles import call_roles, first_with

    if call.origin.kind == "mcp":  # shown whole: a server's tool may do more than run it
        return None
    roles = call_roles(call.arg_roles, call.args, call.tool, call.origin.kind)
    return first_with(roles, call.args, "command") if "command" in roles.values() else None


def _leaves_plan_mode(call: ToolCall) -> bool:
    """The tool changes the session's permission mode (exit_plan_mode: its ``mode`` effect)."""
    return call.effects is not None and "mode" in call.effects


def headline(call: ToolCall) -> str:
    """What will happen, in plain words (from what the tool declares, not its name)."""
    args = call.args
    declared = call.declaration
    effects = declared.effects or frozenset()
    path_arg = declared.arg_with("path")
    path = args.get(path_arg) if path_arg is not None else None
    if _command(call) is not None:
        return "Run a command"
    if "writes" in effects and path_arg is not None and declared.arg_with("content"):
        return f"Edit {path}" if declared.arg_with("old_text") else f"Write {path}"
    url_arg = declared.arg_with("url")
    if url_arg is not None and "network" in effects:
        return f"Fetch {args.get(url_arg)}"
    if path_arg is not None and effects == frozenset({"reads"}):
        return f"Read {path}"
    if "mode" in effects:
        return "Approve this plan and leave plan mode"
    return f"Use the tool {call.tool}"


def request_headline(request: ConfirmRequest) -> str:
    """The headline of a question: what a yes does."""
    if request.network:
        what = "this command" if _command(request.call) is not None else request.call.tool
        return f"Let {what} reach {', '.join(request.network)} and run it again"
    return headline(request.call)


def grant_line(request: ConfirmRequest) -> str:
    """What a 'yes' for the session or always saves, in words."""
    if request.network and not request.network_rule:
        return (
            f"A 'yes' for the session or always allows {request.suggested_rule} to every "
            "command (always: saved in sandbox.network.allowedDomains)"
        )
    return f"A 'yes' for the session or always saves: {request.suggested_rule}"


def why_asked(request: ConfirmRequest) -> str:
    """Why the user is asked: the rule and its reason, or that nothing allowed the call."""
    if request.network:
        return request.reason
    if request.preset and request.rule:
        return f"the built-in rule {request.rule!r} asks: {request.reason}"
    if request.rule:
        return f"your rule {request.rule!r} asks ({request.reason})"
    if _command(request.call) is not None:
        return "this command may change files or run code, and no rule allows it"
    if _leaves_plan_mode(request.call):
        return "the model finished planning; yes ends plan mode so it can make the changes"
    return "no rule or mode allows this call"


def describe_capabilities(caps: CapabilitySet) -> str | None:
    """What the sandbox will grant this call beyond its defaults, in words (None: nothing)."""
    if caps.empty:
        return None
    parts = []
    if caps.read_paths:
        parts.append("read " + ", ".join(sorted(str(p) for p in caps.read_paths)))
    if caps.write_paths:
        parts.append("write " + ", ".join(sorted(str(p) for p in caps.write_paths)))
    if caps.network:
        parts.append("use the network")
    elif caps.network is False:
        parts.append("no network")
    if caps.domains:
        parts.append("reach " + ", ".join(sorted(caps.domains)))
    return "; ".join(parts)


def describe_call(call: ToolCall, *, max_lines: int = 60, color: bool = False) -> str:
    """A human view of a call: the command, the diff of an edit or a write."""
    args = call.args
    command = _command(call)
    if command is not None:
        cwd_arg = call.declaration.arg_with("cwd")
        cwd = args.get(cwd_arg) if cwd_arg is not None else None
        where = f"  (in {cwd})" if cwd and cwd != "." else ""
        return f"$ {command}{where}"
    if _leaves_plan_mode(call):
        text = call.declaration.arg_with("text")
        plan = str(args.get(text, "") if text is not None else "").splitlines()
        more = f"\n… {len(plan) - max_lines} more lines" if len(plan) > max_lines else ""
        return "\n".join(plan[:max_lines]) + more
    from codingcode.approval.preview import preview

    declared = call.declaration
    seen = preview(call.tool, args, call.project_path, declared)
    if seen is not None and seen.diff is not None:
        return seen.diff.render(max_lines=max_lines, color=color)
    if seen is not None and seen.error:
        return f"{call.tool} {args.get(declared.arg_with('path') or 'path')}: {seen.error}"
    return _cut(f"{call.tool} {json.dumps(args, ensure_ascii=False)}", 4000)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more]"


def question_text(request: ConfirmRequest, *, color: bool = False) -> str:
    """The whole question as plain text (no markup to eat the answer keys)."""
    lines = [
        f"{request_headline(request)} ({request.call.tool})",
        describe_call(request.call, color=color),
    ]
    lines.append(f"Why you are asked: {why_asked(request)}.")
    caps = describe_capabilities(request.capabilities)
    if caps:
        lines.append(f"If allowed, the sandbox lets it: {caps}.")
    if request.credentials:
        lines.append("Credentials it gets as placeholders: " + "; ".join(request.credentials) + ".")
    choices = offered(request)
    if any(a.grants for _, a, _ in choices):
        lines.append(grant_line(request))
    lines.append("  ".join(f"{k}) {w}" for k, _, w in choices))
    return "\n".join(lines)


class ScriptedConfirmer:
    """Answers from a list, recording each request (for tests and scripted front ends)."""

    def __init__(self, answers: list[Answer | Reply | str]) -> None:
        self.answers = [a if isinstance(a, Reply) else Answer(a) for a in answers]
        self.requests: list[ConfirmRequest] = []

    async def confirm(self, request: ConfirmRequest) -> Answer | Reply:
        self.requests.append(request)
        return self.answers.pop(0) if self.answers else Answer.DENY
