"""UserConfirmation (SPEC A5): who answers an ``ask``, and the terminal prompt.

A front end that can ask a person implements :class:`Confirmer`: the terminal prompt here,
an MCP elicitation, the agent's TUI. With no confirmer (headless, CI, ``codingcode tool``)
an ``ask`` becomes a deny whose message says how to allow the call.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol, TextIO, runtime_checkable

if TYPE_CHECKING:
    from codingcode.approval.pipeline import ToolCall


class Answer(StrEnum):
    ALLOW = "allow"  # this call, once
    DENY = "deny"  # this call, once
    ALWAYS = "always"  # allow, and save an allow rule
    NEVER = "never"  # deny, and save a deny rule


@dataclass(frozen=True)
class ConfirmRequest:
    """What a confirmer shows: the call, why it is asked, and what always/never would save."""

    call: ToolCall
    reason: str
    #: The rule "always" would save as an allow rule and "never" as a deny rule, in the
    #: compact form; ``None`` when no rule can be saved (a preset rule asked: it stands).
    suggested_rule: str | None


@runtime_checkable
class Confirmer(Protocol):
    async def confirm(self, request: ConfirmRequest) -> Answer: ...


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


def describe_call(call: ToolCall, *, max_chars: int = 4000) -> str:
    """A human view of a call: the command, the diff of an edit, the path of a write."""
    args = call.args
    if call.tool == "execute_command":
        where = f"  (in {args['cwd']})" if args.get("cwd") else ""
        return f"$ {args.get('command', '')}{where}"
    if call.tool == "edit_file":
        import difflib

        old = str(args.get("old_string", "")).splitlines(keepends=True)
        new = str(args.get("new_string", "")).splitlines(keepends=True)
        diff = "".join(
            difflib.unified_diff(old, new, fromfile=str(args.get("path")), tofile="edited")
        )
        return _cut(diff or f"edit {args.get('path')}", max_chars)
    if call.tool == "write_file":
        content = str(args.get("content", ""))
        return _cut(f"write {args.get('path')} ({len(content)} characters):\n{content}", max_chars)
    return _cut(f"{call.tool} {json.dumps(args, ensure_ascii=False)}", max_chars)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more]"


class TerminalConfirmer:
    """Asks on the terminal: [a]llow, [d]eny, al[w]ays, [n]ever (the default is deny)."""

    def __init__(self, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self._in = stdin or sys.stdin
        self._out = stdout or sys.stderr

    @staticmethod
    def available() -> bool:
        return sys.stdin.isatty() and sys.stderr.isatty()

    async def confirm(self, request: ConfirmRequest) -> Answer:
        import anyio

        return await anyio.to_thread.run_sync(self._ask, request)

    def _ask(self, request: ConfirmRequest) -> Answer:
        out = self._out
        out.write(f"\n{request.call.tool} wants to run — {request.reason}\n")
        out.write(describe_call(request.call) + "\n")
        choices = "[a]llow once, [d]eny"
        if request.suggested_rule:
            choices += ", al[w]ays, [n]ever"
            out.write(f'always/never save the rule "{request.suggested_rule}" to ')
            out.write(".codingcode/settings.local.json\n")
        out.write(f"{choices}? ")
        out.flush()
        line = self._in.readline()
        reply = line.strip().lower()
        mapping: dict[str, Answer] = {
            "a": Answer.ALLOW,
            "allow": Answer.ALLOW,
            "y": Answer.ALLOW,
            "yes": Answer.ALLOW,
            "d": Answer.DENY,
            "deny": Answer.DENY,
            "no": Answer.DENY,
        }
        if request.suggested_rule:
            mapping.update(
                {
                    "w": Answer.ALWAYS,
                    "always": Answer.ALWAYS,
                    "n": Answer.NEVER,
                    "never": Answer.NEVER,
                }
            )
        answer = mapping.get(reply, Answer.DENY)
        if answer in (Answer.ALWAYS, Answer.NEVER):
            action = "allow" if answer is Answer.ALWAYS else "deny"
            out.write(f'saving {action} rule "{request.suggested_rule}"\n')
            out.flush()
        return answer


class ScriptedConfirmer:
    """Answers from a list, recording each request (for tests and scripted front ends)."""

    def __init__(self, answers: list[Answer | str]) -> None:
        self.answers = [Answer(a) for a in answers]
        self.requests: list[ConfirmRequest] = []

    async def confirm(self, request: ConfirmRequest) -> Answer:
        self.requests.append(request)
        return self.answers.pop(0) if self.answers else Answer.DENY
