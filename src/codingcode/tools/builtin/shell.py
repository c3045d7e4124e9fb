"""execute_command: run a bash command in the project (SPEC T6)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from codingcode.errors import CancelledError, InvalidArgumentsError, ToolTimeoutError
from codingcode.process import CommandResult, run_command
from codingcode.tools.builtin.file_access import display_path
from codingcode.tools.definition import BUILTIN, ToolAnnotations, ToolDefinition, ToolExecCtx

TIMEOUT_DEFAULT_MS = 30_000
#: Ten minutes: long enough for a full build or test run, short enough that a hung
#: command cannot hold a session for good.
TIMEOUT_MAX_MS = 600_000


class ExecuteCommandArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
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
            parts.append(f"--- {label} ---\n{buf.text().rstrip()}")
    if not result.stdout.total and not result.stderr.total:
        parts.append("(no output)")
    return "\n".join(parts)


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
    result = await run_command(
        ["bash", "-c", args.command],
        cwd=cwd,
        timeout_s=args.timeout_ms / 1000,
        cancel=ctx.signal,
        launcher=ctx.launcher,
        capabilities=ctx.capabilities,
    )
    text = "\n".join([format_result(result), *mask_hints(result, cwd)])
    if result.timed_out:
        raise ToolTimeoutError(text)
    if result.cancelled:
        raise CancelledError(text)
    return text


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
