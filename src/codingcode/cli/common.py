"""What the commands share, without Typer: ARGS_JSON, the mode and the project.

Typer-free so that ``codingcode check`` and ``codingcode tool`` (:mod:`codingcode.cli.fast`)
run without importing it; the Typer commands use the same functions.
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path
from typing import Any

from codingcode.cli.output import echo as echo
from codingcode.config import MAX_JSON_DEPTH
from codingcode.modes import PERMISSION_MODES


def parse_args_json(text: str) -> dict[str, Any]:
    """Parse ARGS_JSON (``-`` reads stdin); a clear error for anything but a JSON object."""
    from codingcode.cli.exits import fail

    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        fail(f"ARGS_JSON is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}).")
    except RecursionError:
        fail(f"ARGS_JSON is nested too deeply to read (keep it under {MAX_JSON_DEPTH} levels).")
    if not isinstance(value, dict):
        fail(
            f'ARGS_JSON must be a JSON object such as \'{{"path": "README.md"}}\', got {type(value).__name__}.'
        )
    result: dict[str, Any] = value
    return result


def check_mode(mode: str | None) -> str | None:
    """The mode if it is a known one (None: the settings decide); a clear error otherwise."""
    from codingcode.cli.exits import fail

    if mode is not None and mode not in PERMISSION_MODES:
        fail(f"unknown mode {mode!r}; choose one of: {', '.join(PERMISSION_MODES)}.")
    return mode


def project_dir(project: Path | None) -> Path:
    from codingcode.cli.exits import fail

    path = (project or Path.cwd()).resolve()
    if not path.is_dir():
        hint = ""
        if project is not None and not path.exists():
            # `codingcode -p "fix it"` as in Claude Code, where -p is --print
            text = str(project)
            hint = (
                f" -p is --project here (the project directory). To start the app with a "
                f'prompt: codingcode "{text}"; to run it without the app: '
                f'codingcode run "{text}".'
            )
        fail(f"--project {path} is not a directory.{hint}")
    return path


def resume_gc() -> None:
    """The cycle collector back on, once the modules are loaded (``codingcode.__main__``
    turns it off while they load). What loading made lives as long as the process: frozen
    first, so no pass walks it again (the first full pass alone costs about 10 ms). Once:
    a second call (Typer's path runs the same command function) freezes nothing more."""
    if gc.isenabled():
        return
    gc.freeze()
    gc.enable()
