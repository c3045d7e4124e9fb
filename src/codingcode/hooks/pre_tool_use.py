"""PreToolUse hooks: a layer of approval (SPEC A4, A6).

Two kinds of PreToolUse hooks decide a call: Python functions registered in code (the
:class:`~codingcode.hooks.bus.HookBus`), and command hooks from settings
(:mod:`codingcode.hooks.settings`). A command hook gets the call as JSON on stdin
(``hook_event_name``, ``tool_name``, ``tool_input``, ``session_id``, ``turn_id``, ``cwd``,
``permission_mode``) and answers with JSON on stdout: ``decision`` (allow / deny / ask /
continue), ``reason``, ``modifiedInput``. Exit code 2 means deny, with stderr as the reason.
A hook that crashes, answers nonsense or runs out of time never allows: the call is asked.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import anyio

from codingcode.approval.pipeline import HOOK, LayerResult, ToolCall
from codingcode.hooks.bus import HookAnswer, HookBus, HookDecision, HookModel, PythonHook
from codingcode.hooks.settings import CommandHook, matcher_matches

_MAX_HOOK_OUTPUT = 1 << 20


_ORDER = {"deny": 0, "ask": 1, "allow": 2, "continue": 3}


class PreToolUseHooks:
    """Runs every matching hook in order and combines them: deny > ask > allow > continue.

    A hook that changes the input hands the changed input to the hooks after it.
    """

    def __init__(self, command_hooks: list[CommandHook], bus: HookBus | None = None) -> None:
        self.command_hooks = [h for h in command_hooks if h.event == "PreToolUse"]
        self.bus = bus or HookBus()
        #: The ``once`` hooks that already ran this session.
        self.ran_once: set[CommandHook] = set()

    def __bool__(self) -> bool:
        return bool(self.command_hooks or self.bus.pre_tool_use)

    async def __call__(self, call: ToolCall) -> LayerResult:
        answers: list[tuple[str, HookAnswer]] = []
        current = call
        modified: dict[str, Any] | None = None
        for matcher, fn in self.bus.pre_tool_use:
            if not matcher_matches(matcher, call.tool):
                continue
            answer = await _run_python(fn, current)
            answers.append((getattr(fn, "__name__", "python hook"), answer))
            if answer.decision == "deny":
                break
            if answer.modified_input is not None:
                modified = answer.modified_input
                current = _with_args(current, modified)
        else:  # no Python hook denied: the command hooks run too
            for hook in self.command_hooks:
                if not hook.matches(call.tool) or not if_matches(hook, current):
                    continue
                if hook.once:
                    if hook in self.ran_once:
                        continue
                    self.ran_once.add(hook)
                answer = await run_command_hook(hook, current, self.bus.ask_model, self.bus)
                answers.append((f"hook `{hook.label}`", answer))
                if answer.decision == "deny":
                    break
                if answer.modified_input is not None:
                    modified = answer.modified_input
                    current = _with_args(current, modified)
        if not answers:
            return LayerResult(HOOK, "continue", "no PreToolUse hook matches")
        stopped = [a.stop_reason for _, a in answers if a.stop_reason is not None]
        if stopped:  # continue: false wins over any decision: the call does not run
            message = f"A PreToolUse hook stopped the agent: {stopped[0]}"
            self.bus.request_stop(call.session_id, message)
            return LayerResult(HOOK, "deny", message)
        name, strongest = min(answers, key=lambda a: _ORDER[a[1].decision])
        reason = strongest.reason or f"{name} answered {strongest.decision}"
        if strongest.decision == "continue":
            reason = "the PreToolUse hooks did not decide"
        return LayerResult(HOOK, strongest.decision, reason, None, modified)


def _with_args(call: ToolCall, args: dict[str, Any]) -> ToolCall:
    return replace(call, args=args)


async def _run_python(fn: PythonHook, call: ToolCall) -> HookAnswer:
    try:
        answer = await fn(call)
    except Exception as exc:
        return HookAnswer("ask", f"a PreToolUse hook failed ({type(exc).__name__}: {exc}); asking")
    if answer is None:
        return HookAnswer()
    if (
        not isinstance(answer, HookAnswer)
        or not isinstance(answer.decision, str)
        or answer.decision not in _ORDER
    ):
        return HookAnswer("ask", "a PreToolUse hook gave no valid answer; asking")
    return answer


#: Claude Code's file tools (Read, Write, Edit, ...) name the file ``file_path``; ours,
#: ``path``. Hooks written for Claude Code read ``tool_input.file_path``.
_FILE_PATH_NAMES = frozenset({"Read", "Write", "Edit", "MultiEdit", "NotebookEdit"})


def _takes_file_path(tool: str) -> bool:
    from codingcode.tools.claude_names import OURS_TO_CLAUDE

    return any(n in _FILE_PATH_NAMES for n in OURS_TO_CLAUDE.get(tool, ()))


def hook_tool_input(call: ToolCall) -> dict[str, Any]:
    """``tool_input`` as a hook sees it: the call's arguments, and for a file tool also
    Claude Code's ``file_path`` — the same file as an absolute path (``~`` and relative
    paths resolved against the call's directory, as Claude Code gives it), so a hook
    cannot be dodged by spelling the path differently. ``path`` stays, as given."""
    args = call.args
    path = args.get("path")
    if not isinstance(path, str) or "file_path" in args or not _takes_file_path(call.tool):
        return args
    full = os.path.normpath(os.path.join(call.cwd, os.path.expanduser(path)))
    return {**args, "file_path": full}


def from_hook_input(call: ToolCall, modified: dict[str, Any]) -> dict[str, Any]:
    """A hook's ``updatedInput`` in our argument names: a ``file_path`` we added becomes
    ``path`` again (a changed one is the new path; an unchanged one is dropped)."""
    if "file_path" not in modified or "file_path" in call.args or not _takes_file_path(call.tool):
        return modified
    out = dict(modified)
    new = out.pop("file_path")
    if new != hook_tool_input(call).get("file_path"):
        out["path"] = new
    return out


def hook_input(call: ToolCall) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "tool_name": call.tool,
        "tool_input": hook_tool_input(call),
        "session_id": call.session_id,
        "transcript_path": call.transcript_path,
        "tool_use_id": call.call_id,
        "turn_id": call.turn_id,
        "cwd": str(call.cwd),
        "project_path": str(call.project_path),
        "permission_mode": call.mode,
    }


@dataclass(frozen=True)
class HookRun:
    """What one command hook did: its exit code (None: it did not finish), its output."""

    code: int | None
    stdout: str
    stderr: str
    #: Why it did not finish (could not start, timed out), for messages.
    failure: str = ""


def hook_env(project: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["CODINGCODE_PROJECT_DIR"] = str(project)
    env["CLAUDE_PROJECT_DIR"] = str(project)  # hooks written for Claude Code
    return env


async def run_prompt_hook(
    hook: CommandHook, payload: dict[str, Any], ask_model: HookModel | None
) -> HookRun:
    """A ``prompt`` (or ``agent``) hook: one model call with the hook's prompt, the event's
    JSON in place of ``$ARGUMENTS`` (or after it). ``{"ok": true}`` lets the event go on;
    ``{"ok": false, "reason": ...}`` is exit code 2 with that reason."""
    if ask_model is None:
        return HookRun(None, "", "", "is a prompt hook and this run has no model to ask")
    event = json.dumps(payload)
    prompt = (
        hook.prompt.replace("$ARGUMENTS", event)
        if "$ARGUMENTS" in hook.prompt
        else f"{hook.prompt}\n\n{event}"
    )
    try:
        with anyio.fail_after(hook.timeout_s):
            text = await ask_model(prompt)
    except TimeoutError:
        return HookRun(None, "", "", f"took longer than {hook.timeout_s:g}s")
    except Exception as exc:  # the model call failed: no answer, never an allow
        return HookRun(None, "", "", f"could not ask the model ({type(exc).__name__})")
    found = re.search(r"\{.*\}", text, re.DOTALL)
    answer: Any = None
    if found is not None:
        with contextlib.suppress(ValueError):
            answer = json.loads(found.group(0))
    if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
        return HookRun(None, "", "", 'answered without {"ok": true|false}')
    if answer["ok"]:
        return HookRun(0, "", "")
    return HookRun(2, "", str(answer.get("reason") or "the prompt hook said no"))


#: The bus event of a hook with a ``statusMessage``: ``{"state": "start"|"end",
#: "message", "event", "hook"}`` when it starts and when it is done.
HOOK_STATUS = "hook.status"


async def run_hook(
    hook: CommandHook,
    payload: dict[str, Any],
    cwd: Path,
    ask_model: HookModel | None = None,
    bus: HookBus | None = None,
) -> HookRun:
    """Run one hook of any kind: a command (``/bin/sh``, or bash with ``shell: bash``;
    ``async``: started and not waited for), an HTTP hook (the event POSTed as JSON to its
    URL through the network policy, its response body read as a command's output). A
    ``statusMessage`` goes to ``bus``'s listeners while the hook runs."""
    if not hook.status_message or bus is None or hook.run_async:
        return await _run_hook(hook, payload, cwd, ask_model)
    status = {"message": hook.status_message, "event": hook.event, "hook": hook.label}
    bus.emit(HOOK_STATUS, {"state": "start", **status})
    try:
        return await _run_hook(hook, payload, cwd, ask_model)
    finally:
        bus.emit(HOOK_STATUS, {"state": "end", **status})


async def _run_hook(
    hook: CommandHook, payload: dict[str, Any], cwd: Path, ask_model: HookModel | None
) -> HookRun:
    if hook.kind == "http":
        from codingcode.hooks.http_hook import HookNetwork, expand_headers, post_event

        answer = await post_event(
            hook.url,
            expand_headers(dict(hook.headers), hook.allowed_env_vars),
            payload,
            hook.timeout_s,
            hook.network or HookNetwork(),
        )
        if answer.failure:
            return HookRun(None, "", "", answer.failure)
        return HookRun(0, answer.body, "")
    if hook.kind in ("prompt", "agent"):
        return await run_prompt_hook(hook, payload, ask_model)
    if hook.shell == "powershell":
        return HookRun(None, "", "", "asks for PowerShell, which codingcode does not run")
    shell = "/bin/bash" if hook.shell == "bash" else "/bin/sh"
    if hook.run_async:
        start_detached(hook.command, payload, cwd, hook.timeout_s, shell)
        return HookRun(0, "", "")
    return await run_hook_process(hook.command, payload, cwd, hook.timeout_s, shell=shell)


def start_detached(
    command: str, payload: dict[str, Any], cwd: Path, timeout_s: float, shell: str
) -> None:
    """An ``async`` hook: started, fed its input, never waited for (its answer decides
    nothing); its process group is killed at its timeout."""
    import subprocess
    import threading

    try:
        proc = subprocess.Popen(
            [shell, "-c", command],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=str(cwd),
            env=hook_env(cwd),
            start_new_session=True,
        )
    except OSError:
        return

    def feed_and_reap() -> None:
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(payload).encode())
            proc.stdin.close()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    threading.Thread(target=feed_and_reap, daemon=True).start()


async def run_hook_process(
    command: str, payload: dict[str, Any], cwd: Path, timeout_s: float, *, shell: str = "/bin/sh"
) -> HookRun:
    """Run ``command`` with ``payload`` as JSON on stdin; its process group never outlives it."""
    data = json.dumps(payload).encode()
    try:
        proc = await anyio.open_process(
            [shell, "-c", command],
            stdin=-1,
            stdout=-1,
            stderr=-1,
            cwd=str(cwd),
            env=hook_env(cwd),
            start_new_session=True,
        )
    except OSError as exc:
        return HookRun(None, "", "", f"could not start ({exc})")
    out = bytearray()
    err = bytearray()

    async def pump(stream: Any, sink: bytearray) -> None:
        async for chunk in stream:
            if len(sink) < _MAX_HOOK_OUTPUT:
                sink.extend(chunk[: _MAX_HOOK_OUTPUT - len(sink)])

    timed_out = False
    try:
        with anyio.move_on_after(timeout_s) as scope:
            async with anyio.create_task_group() as tg:
                assert proc.stdout is not None and proc.stderr is not None
                tg.start_soon(pump, proc.stdout, out)
                tg.start_soon(pump, proc.stderr, err)
                if proc.stdin is not None:
                    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                        await proc.stdin.send(data)
                    await proc.stdin.aclose()
                await proc.wait()
        timed_out = scope.cancelled_caught
    finally:
        # The hook's whole process group goes, whatever happened (timeout, cancellation).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            await proc.aclose()
    stdout = out.decode("utf-8", "replace")
    stderr = err.decode("utf-8", "replace").strip()
    if timed_out:
        return HookRun(None, stdout, stderr, f"took longer than {timeout_s:g}s and was killed")
    return HookRun(proc.returncode, stdout, stderr)


def if_matches(hook: CommandHook, call: ToolCall) -> bool:
    """A hook's ``if`` (a permission rule, Claude Code's syntax or ours): whether ``call``
    is one it matches. No ``if``: every call its matcher matched."""
    if not hook.if_rule:
        return True
    from codingcode.approval.rules import Rule, RuleEngine, RuleSyntaxError
    from codingcode.approval.rules.syntax import rule_texts

    try:
        rules = [Rule(t, "allow") for t in rule_texts(hook.if_rule, call.project_path)]
        hit = RuleEngine(rules, call.project_path).evaluate_user(call)
    except (RuleSyntaxError, ValueError):
        return False  # an `if` that is no rule matches nothing
    return hit is not None and hit.action == "allow"


async def run_command_hook(
    hook: CommandHook,
    call: ToolCall,
    ask_model: HookModel | None = None,
    bus: HookBus | None = None,
) -> HookAnswer:
    """Run one hook; a failure is an ask, never an allow — but an HTTP hook that does not
    answer lets the call go on (Claude Code's rule: a non-blocking error), said once."""
    run = await run_hook(hook, hook_input(call), call.project_path, ask_model, bus)
    if run.code is None:
        if hook.kind == "http":
            _say_once(f"codingcode: the PreToolUse hook {hook.url} {run.failure}; going on.")
            return HookAnswer()
        return HookAnswer("ask", f"the hook `{hook.label}` {run.failure}; asking")
    code = run.code
    stderr = run.stderr
    if code == 2:
        return HookAnswer("deny", stderr or f"the hook `{hook.label}` denied the call")
    if code != 0:
        detail = f": {stderr[:300]}" if stderr else ""
        return HookAnswer(
            "ask", f"the hook `{hook.label}` failed with exit code {code}{detail}; asking"
        )
    answer = parse_hook_output(run.stdout, hook.label)
    if answer.modified_input is not None:
        answer = replace(answer, modified_input=from_hook_input(call, answer.modified_input))
    return answer


_SAID: set[str] = set()


def _say_once(line: str) -> None:
    import sys

    if line not in _SAID:
        _SAID.add(line)
        print(line, file=sys.stderr, flush=True)


def parse_hook_output(text: str, command: str) -> HookAnswer:
    text = text.strip()
    if not text:
        return HookAnswer()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return HookAnswer("ask", f"the hook `{command}` printed something that is not JSON; asking")
    if not isinstance(data, dict):
        return HookAnswer("ask", f"the hook `{command}` did not answer with a JSON object; asking")
    stop = None
    if data.get("continue") is False:  # Claude Code's universal field
        stop = str(data.get("stopReason") or f"the hook `{command}` answered continue: false")
    specific = data.get("hookSpecificOutput")
    if isinstance(specific, dict):  # the shape other agents' hooks print
        data = {
            "decision": specific.get("permissionDecision", "continue"),
            "reason": specific.get("permissionDecisionReason", ""),
            "modifiedInput": specific.get("updatedInput"),
        }
    decision: Any = data.get("decision", "continue")
    if isinstance(decision, str):  # Claude Code's older PreToolUse answers: approve / block
        decision = {"approve": "allow", "block": "deny"}.get(decision, decision)
    if not isinstance(decision, str) or decision not in _ORDER:
        return HookAnswer(
            "ask", f"the hook `{command}` answered an unknown decision {decision!r}; asking"
        )
    modified = data.get("modifiedInput")
    if modified is not None and not isinstance(modified, dict):
        return HookAnswer(
            "ask", f"the hook `{command}` gave a modifiedInput that is not an object; asking"
        )
    reason = data.get("reason") or ""
    return HookAnswer(cast(HookDecision, decision), str(reason), modified, stop)
