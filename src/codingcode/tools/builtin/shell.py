"""execute_command: run a bash command in the project (SPEC T6)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from codingcode.errors import CancelledError, InvalidArgumentsError, ToolTimeoutError
from codingcode.process import OUTPUT_CAP_BYTES, CappedBuffer, CommandResult, run_command
from codingcode.tools.builtin.file_access import display_path
from codingcode.tools.definition import BUILTIN, ToolAnnotations, ToolDefinition, ToolExecCtx
from codingcode.tools.output import cut_note

#: Room for the header, the notes and mask hints within a result's budget.
NOTES_ROOM = 2_000
MIN_STREAM_CAP = 1_000
TIMEOUT_DEFAULT_MS = 30_000
#: Ten minutes: long enough for a full build or test run, short enough that a hung
#: command cannot hold a session for good.
TIMEOUT_MAX_MS = 600_000


class ExecuteCommandArgs(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")
    command: str = Field(min_length=1, description="The bash command line to run.")
    cwd: str = Field(
        default=".",
        description="Working directory, relative to the project root (default: the project root).",
    )
    timeout_ms: int = Field(
        default=TIMEOUT_DEFAULT_MS,
        ge=1,
        le=TIMEOUT_MAX_MS,
        description=f"Time limit in milliseconds (default {TIMEOUT_DEFAULT_MS}, at most {TIMEOUT_MAX_MS}).",
    )
    run_in_background: bool = Field(
        default=False,
        description="Start it and return at once with an id (for servers, watchers, long "
        "builds); read its output with command_output, stop it with command_kill. "
        "timeout_ms does not apply; it ends with the session.",
    )


def format_result(result: CommandResult) -> str:
    parts = []
    if result.notice:
        parts.append(result.notice)
    if result.timed_out:
        parts.append(
            f"Timed out after {result.duration_s:.1f}s; the command and its children were killed."
        )
    elif result.cancelled:
        parts.append("Cancelled; the command and its children were killed.")
    else:
        parts.append(f"Exit code: {result.exit_code}")
    for label, buf in (("stdout", result.stdout), ("stderr", result.stderr)):
        if buf.total:
            parts.append(f"--- {label} ---\n{stream_text(buf, label).rstrip()}")
    if not result.stdout.total and not result.stderr.total:
        parts.append("(no output)")
    return "\n".join(parts)


def stream_text(buf: CappedBuffer, label: str) -> str:
    """A stream as the model sees it: whole, or its head and tail around the one note that
    gives its real size and where it is saved whole."""
    if not buf.omitted:
        return buf.text()
    head, tail = buf.head_bytes(), buf.tail_bytes()
    # Cut at line ends, so read_file can go on from the line after the head.
    nl = head.rfind(b"\n")
    if nl > len(head) // 2:
        head = head[: nl + 1]
    nl = tail.find(b"\n")
    if 0 <= nl < len(tail) // 2:
        tail = tail[nl + 1 :]
    left = buf.total - len(head) - len(tail)
    head_lines = head.count(b"\n")
    tail_lines = tail.count(b"\n") + (1 if tail and not tail.endswith(b"\n") else 0)
    note = cut_note(
        what=label,
        left_bytes=left,
        left_lines=max(0, buf.lines - head_lines - tail_lines),
        total_bytes=buf.total,
        total_lines=buf.lines,
        path=buf.spool_path,
        next_line=head_lines + 1,
        saved_bytes=buf.spooled,
        why_not_saved=buf.spool_error or "",
    )
    shown_head = head.decode("utf-8", errors="replace")
    shown_tail = tail.decode("utf-8", errors="replace")
    return f"{shown_head}\n{note}\n{shown_tail}"


#: At most this many mask hints on one result.
MAX_MASK_HINTS = 5
_REFUSED = re.compile(r"permission denied|operation not permitted|not permitted", re.IGNORECASE)


def mask_hints(result: CommandResult, cwd: Path, home: str | None = None) -> list[str]:
    """Hints for a command a mask made fail: its output names a masked path (as given, or
    relative to ``cwd``, or under ``~``), and it failed or reported a refusal."""
    if not result.masked:
        return []
    text = result.stdout.text() + "\n" + result.stderr.text()
    if result.exit_code == 0 and not _REFUSED.search(text):
        return []
    home = home if home is not None else os.path.expanduser("~")
    hints = []
    for path, how in result.masked:
        name = os.path.basename(path)
        if not name or name not in text:  # the cheap test first
            continue
        forms = {path, os.path.relpath(path, cwd)}
        if home and (path + "/").startswith(home.rstrip("/") + "/"):
            forms.add("~" + path[len(home.rstrip("/")) :])
        if any(_names(text, form) for form in forms):
            hints.append(f"[sandbox: {how}]")
            if len(hints) >= MAX_MASK_HINTS:
                break
    return hints


def _names(text: str, form: str) -> bool:
    return re.search(r"(?<![\w.-])" + re.escape(form) + r"(?![\w.-])", text) is not None


async def execute_command(args: ExecuteCommandArgs, ctx: ToolExecCtx) -> str:
    cwd = ctx.resolve_path(args.cwd)
    if not cwd.is_dir():
        raise InvalidArgumentsError(f"cwd {display_path(cwd, ctx)} is not an existing directory.")
    if args.run_in_background:
        from codingcode.tools.builtin.background import start_in_background

        return await start_in_background(args.command, cwd, ctx)
    files = None
    if ctx.output_dir is not None:
        name = _safe(ctx.call_id or f"command-{time.time_ns()}")
        files = (ctx.output_dir / f"{name}-stdout.txt", ctx.output_dir / f"{name}-stderr.txt")
    cap = OUTPUT_CAP_BYTES
    if ctx.output_budget is not None:
        # Both streams and their notes fit the budget: the session does not cut it again.
        cap = max(MIN_STREAM_CAP, (ctx.output_budget - NOTES_ROOM) // 2)
    result = await run_command(
        ["bash", "-c", args.command],
        cwd=cwd,
        timeout_s=args.timeout_ms / 1000,
        cancel=ctx.signal,
        launcher=ctx.launcher,
        capabilities=ctx.capabilities,
        output_cap=cap,
        output_files=files,
        on_output=ctx.on_output,
    )
    text = "\n".join([format_result(result), *mask_hints(result, cwd)])
    if result.timed_out:
        raise ToolTimeoutError(text)
    if result.cancelled:
        raise CancelledError(text)
    return text


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:80] or "command"


def shell_tools() -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name="execute_command",
            description=(
                "Run a command with bash in the project (or `cwd`), stdin closed. Reports the exit "
                "code and the captured stdout and stderr (long output keeps its head and tail). "
                f"The whole process tree is killed after `timeout_ms` (default {TIMEOUT_DEFAULT_MS}, "
                f"at most {TIMEOUT_MAX_MS})."
            ),
            short_description="Run a shell command",
            parameters=ExecuteCommandArgs,
            execute=execute_command,
            annotations=ToolAnnotations(destructive=True, open_world=True),
            arg_roles={"command": "command", "cwd": "cwd"},
            effects=frozenset({"reads", "writes", "runs", "network"}),
            origin=BUILTIN,
        )
    ]
