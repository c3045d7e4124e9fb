"""Search tools on ripgrep: search_code and search_files (SPEC T4, T5).

Both stream rg's output and kill it as soon as they have what they need, so a search
that hits ``max_results`` early never walks the whole tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import AsyncGenerator
from contextlib import aclosing
from functools import cache
from pathlib import Path

import anyio
from pydantic import BaseModel, ConfigDict, Field

from codingcode.errors import InvalidArgumentsError, NotFoundError, ToolFailureError
from codingcode.process import kill_process_group
from codingcode.tools.builtin.fs import display_path
from codingcode.tools.definition import BUILTIN, ToolAnnotations, ToolDefinition, ToolExecCtx

SEARCH_CODE_DEFAULT = 30
SEARCH_CODE_MAX = 100
SEARCH_FILES_DEFAULT = 50
SEARCH_FILES_MAX = 500
#: Columns of a matching line shown; rg cuts longer ones and says so.
MAX_COLUMNS = 300


@cache
def find_rg() -> str:
    """The rg binary: the one the ripgrep wheel installed beside our interpreter, else PATH."""
    candidates = [
        Path(sysconfig.get_path("scripts")) / "rg",
        Path(sys.executable).parent / "rg",
    ]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("rg")
    if found:
        return found
    raise ToolFailureError(
        "ripgrep (rg) was not found. Install it with `pip install ripgrep==14.1.0` (the "
        "project's dependencies include it) or put `rg` on PATH; search_code and "
        "search_files need it."
    )


#: Globs that mean "every file". rg lets a --glob that matches a *directory* override the
#: ignore rules for it, so passing `**/*` would search .git/ and git-ignored build output;
#: these are therefore left out, and rg's own defaults decide.
_MATCH_ALL = frozenset({"*", "**", "**/*", "./**/*", "./*"})


def glob_filter(glob: str) -> list[str]:
    return [] if glob.strip() in _MATCH_ALL else ["--glob", glob]


class _RgFailed(Exception):
    def __init__(self, stderr: str) -> None:
        self.stderr = stderr


async def _rg_lines(argv: list[str], cwd: Path) -> AsyncGenerator[bytes, None]:
    """Yield rg's output lines; closing the generator early kills rg at once."""
    proc = await anyio.open_process(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    finished = False
    try:
        pending = b""
        async for chunk in proc.stdout:
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for line in complete:
                yield line
        if pending:
            yield pending
        finished = True
    finally:
        if not finished:
            kill_process_group(proc.pid)
        with anyio.CancelScope(shield=True):
            err = await _read_all(proc.stderr) if finished else b""
            await proc.aclose()
    if proc.returncode == 2 and err:
        raise _RgFailed(err.decode("utf-8", errors="replace"))


async def _read_all(stream: anyio.abc.ByteReceiveStream) -> bytes:
    data = b""
    async for chunk in stream:
        data += chunk
    return data


# -- search_code -------------------------------------------------------------------------
class SearchCodeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str = Field(min_length=1, description="Regular expression (Rust regex syntax).")
    glob: str = Field(
        default="**/*",
        min_length=1,
        description="Which files to search, as a glob relative to the project root.",
    )
    max_results: int = Field(
        default=SEARCH_CODE_DEFAULT,
        ge=1,
        le=SEARCH_CODE_MAX,
        description=f"Stop after this many matching lines (at most {SEARCH_CODE_MAX}).",
    )


async def search_code(args: SearchCodeArgs, ctx: ToolExecCtx) -> str:
    argv = [
        find_rg(),
        "--line-number",
        "--with-filename",
        "--no-heading",
        "--null",
        "--color=never",
        "--no-messages",
        f"--max-columns={MAX_COLUMNS}",
        "--max-columns-preview",
        *glob_filter(args.glob),
        "--regexp",
        args.pattern,
        "--",
        ".",
    ]
    results: list[str] = []
    stopped = False
    try:
        async with aclosing(_rg_lines(argv, ctx.project_path)) as lines:
            async for line in lines:
                path, _, rest = line.partition(b"\0")
                number, _, text = rest.partition(b":")
                results.append(
                    f"{_rel(path)}:{number.decode()}: "
                    f"{text.decode('utf-8', errors='replace').rstrip()}"
                )
                if len(results) >= args.max_results:
                    stopped = True
                    break
    except _RgFailed as exc:
        if "regex" in exc.stderr.lower():
            raise InvalidArgumentsError(
                f"Invalid regex {args.pattern!r}: {_first_lines(exc.stderr)}"
            ) from None
        raise ToolFailureError(f"ripgrep failed: {_first_lines(exc.stderr)}") from None
    if not results:
        return f"No matches for {args.pattern!r} in files matching {args.glob!r}."
    if stopped:
        note = (
            f"\n[stopped at max_results={args.max_results}; there may be more matches — "
            "narrow the pattern or glob]"
        )
    else:
        results.sort(key=_sort_key)
        note = ""
    return f"{len(results)} matches:\n" + "\n".join(results) + note


def _rel(path: bytes) -> str:
    text = path.decode("utf-8", errors="replace")
    return text[2:] if text.startswith("./") else text


def _sort_key(line: str) -> tuple[str, int]:
    path, _, rest = line.partition(":")
    number = rest.partition(":")[0]
    return path, int(number) if number.isdigit() else 0


def _first_lines(text: str, n: int = 6) -> str:
    return " ".join(text.strip().splitlines()[:n])


# -- search_files -----------------------------------------------------------------------
class SearchFilesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str = Field(min_length=1, description="Glob of file paths, e.g. `**/*.py` or `*.md`.")
    path: str = Field(default=".", description="Directory to search, relative to the project root.")
    max_results: int = Field(
        default=SEARCH_FILES_DEFAULT,
        ge=1,
        le=SEARCH_FILES_MAX,
        description=f"Stop after this many files (at most {SEARCH_FILES_MAX}).",
    )


async def search_files(args: SearchFilesArgs, ctx: ToolExecCtx) -> str:
    root = ctx.resolve_path(args.path)
    shown = display_path(root, ctx)
    if not root.exists():
        raise NotFoundError(f"Directory not found: {shown}.")
    if not root.is_dir():
        raise InvalidArgumentsError(f"{shown} is a file, not a directory.")
    argv = [
        find_rg(),
        "--files",
        "--no-messages",
        "--color=never",
        "--glob",
        args.pattern,
        "--",
        ".",
    ]
    files: list[str] = []
    cut = False
    try:
        async with aclosing(_rg_lines(argv, root)) as lines:
            async for line in lines:
                if len(files) == args.max_results:
                    cut = True
                    break
                rel = _rel(line)
                files.append(rel if shown == "." else f"{shown.rstrip('/')}/{rel}")
    except _RgFailed as exc:
        raise InvalidArgumentsError(f"search_files failed: {_first_lines(exc.stderr)}") from None
    if not files:
        return f"No files match {args.pattern!r} under {shown}."
    files.sort()
    note = (
        f"\n[results cut at max_results={args.max_results}; narrow the pattern to see others]"
        if cut
        else ""
    )
    return f"{len(files)} files:\n" + "\n".join(files) + note


def search_tools() -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name="search_code",
            description=(
                "Search file contents with a regular expression (ripgrep). Respects .gitignore "
                "and skips hidden and binary files. Prints `path:line: text` for each matching "
                f"line, at most `max_results` (default {SEARCH_CODE_DEFAULT}, at most "
                f"{SEARCH_CODE_MAX}); `glob` limits which files are searched."
            ),
            short_description="Regex search over the project's files (ripgrep)",
            parameters=SearchCodeArgs,
            execute=search_code,
            annotations=ToolAnnotations(read_only=True, idempotent=True),
            arg_roles={"pattern": "text", "glob": "glob"},
            effects=frozenset({"reads"}),
            origin=BUILTIN,
        ),
        ToolDefinition(
            name="search_files",
            description=(
                "Find files whose path matches a glob (ripgrep's file list: respects .gitignore, "
                f"skips hidden files). Lists at most `max_results` (default {SEARCH_FILES_DEFAULT}, "
                f"at most {SEARCH_FILES_MAX}) paths under `path` and says when the list was cut."
            ),
            short_description="Find files by glob pattern",
            parameters=SearchFilesArgs,
            execute=search_files,
            annotations=ToolAnnotations(read_only=True, idempotent=True),
            arg_roles={"pattern": "glob", "path": "directory"},
            effects=frozenset({"reads"}),
            origin=BUILTIN,
        ),
    ]
