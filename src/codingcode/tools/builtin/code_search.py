"""Search tools on ripgrep: search_code and search_files (SPEC T4, T5).

Both stream rg's output and kill it as soon as they have what they need, so a search
that hits ``max_results`` early never walks the whole tree. A search has a time limit
(``code_search.timeout_s`` in settings, default 30 s): at the limit rg is killed and the
matches found so far are returned with a note saying they are partial. rg runs in its own
process group, killed on timeout, cancellation and early stop, and (through ``setpriv
--pdeathsig``) dies with this process even when it is killed outright. An rg that dies for
any other reason is a failure, never "No matches".
"""

from __future__ import annotations

import os
import shutil
import signal as signal_module
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from pydantic import BaseModel, ConfigDict, Field

from codingcode.cancel import CancelSignal
from codingcode.errors import (
    CancelledError,
    InvalidArgumentsError,
    NotFoundError,
    ToolFailureError,
    ToolTimeoutError,
)
from codingcode.process import CappedBuffer, kill_process_group
from codingcode.sandbox.masks import check_readable, guard_for
from codingcode.tools.builtin.file_access import display_path
from codingcode.tools.definition import BUILTIN, ToolAnnotations, ToolDefinition, ToolExecCtx

if TYPE_CHECKING:
    from codingcode.workspace import Workspace

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


#: How long one search may run (seconds) unless the settings say otherwise.
DEFAULT_TIMEOUT_S = 30.0


class CodeSearchSettings(BaseModel):
    """The ``code_search`` section of the settings (search_code and search_files)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=3600)


def load_search_settings(workspace: Workspace) -> CodeSearchSettings:
    return workspace.section("code_search", CodeSearchSettings)


@cache
def _pdeathsig_prefix() -> tuple[str, ...]:
    """``setpriv --pdeathsig KILL`` where util-linux has it: rg then dies with our process
    even when we are killed outright (SIGTERM, SIGKILL) and cannot clean up."""
    if not sys.platform.startswith("linux"):
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return ()
    try:
        probe = subprocess.run(
            [setpriv, "--pdeathsig", "KILL", "--", "true"], capture_output=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    return (setpriv, "--pdeathsig", "KILL", "--") if probe.returncode == 0 else ()


@dataclass
class RgOutcome:
    """How a run of rg ended."""

    #: The consumer had what it needed and rg was stopped (early stop at max_results).
    stopped: bool = False
    timed_out: bool = False
    cancelled: bool = False
    returncode: int | None = None
    stderr: str = ""

    @property
    def killed_by_others(self) -> int | None:
        """The signal that killed rg when we did not (None otherwise)."""
        rc = self.returncode
        if rc is not None and rc < 0 and not (self.stopped or self.timed_out or self.cancelled):
            return -rc
        return None


async def run_rg(
    argv: list[str],
    cwd: Path,
    on_line: Callable[[bytes], bool],
    *,
    timeout_s: float,
    signal: CancelSignal | None = None,
) -> RgOutcome:
    """Run rg, handing each output line to ``on_line`` (True: enough, stop rg).

    rg leads its own process group and, where setpriv is available, dies with this process;
    the group is killed when the consumer stops, at ``timeout_s``, on ``signal``, on task
    cancellation, and on any error, and the process is reaped before this returns.
    """
    outcome = RgOutcome()
    err = CappedBuffer(8_000)
    with anyio.CancelScope(shield=True):
        proc = await anyio.open_process(
            [*_pdeathsig_prefix(), *argv],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    assert proc.stdout is not None and proc.stderr is not None
    stdout, stderr = proc.stdout, proc.stderr
    err_done = anyio.Event()
    try:
        async with anyio.create_task_group() as tg:

            async def read_out() -> None:
                pending = b""
                async for chunk in stdout:
                    pending += chunk
                    *complete, pending = pending.split(b"\n")
                    for line in complete:
                        if on_line(line):
                            outcome.stopped = True
                            tg.cancel_scope.cancel()
                            return
                if pending and on_line(pending):
                    outcome.stopped = True
                await proc.wait()
                with anyio.move_on_after(1):
                    await err_done.wait()
                tg.cancel_scope.cancel()

            async def read_err() -> None:
                async for chunk in stderr:
                    err.feed(chunk)
                err_done.set()

            async def deadline() -> None:
                await anyio.sleep(timeout_s)
                outcome.timed_out = True
                tg.cancel_scope.cancel()

            async def watch(sig: CancelSignal) -> None:
                await sig.wait()
                outcome.cancelled = True
                tg.cancel_scope.cancel()

            tg.start_soon(read_out)
            tg.start_soon(read_err)
            tg.start_soon(deadline)
            if signal is not None:
                tg.start_soon(watch, signal)
    finally:
        if proc.returncode is None:
            kill_process_group(proc.pid)
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await proc.aclose()
    outcome.returncode = proc.returncode
    outcome.stderr = err.text()
    return outcome


def _check_outcome(outcome: RgOutcome, tool: str) -> None:
    """Raise for a run that failed: cancelled, killed by someone else, or a bad exit."""
    if outcome.cancelled:
        raise CancelledError(f"{tool} was cancelled.")
    signum = outcome.killed_by_others
    if signum is not None:
        name = _signal_name(signum)
        raise ToolFailureError(
            f"ripgrep was killed by {name} before it finished (out of memory, or stopped "
            "from outside); the results are incomplete, so none are shown. Narrow the "
            "pattern or the files searched and try again."
        )
    rc = outcome.returncode
    if rc is not None and rc not in (0, 1, 2) and not (outcome.stopped or outcome.timed_out):
        raise ToolFailureError(
            f"ripgrep failed (exit code {rc}): {_first_lines(outcome.stderr) or 'no message'}"
        )


def _signal_name(signum: int) -> str:
    try:
        return signal_module.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _timeout_note(outcome: RgOutcome, timeout_s: float) -> str:
    return (
        f"\n[search stopped after {timeout_s:g}s (the time limit, code_search.timeout_s in "
        "settings): these results are partial — narrow the pattern, glob or path]"
        if outcome.timed_out
        else ""
    )


# -- search_code -------------------------------------------------------------------------
class SearchCodeArgs(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")
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
    settings = load_search_settings(ctx.session_workspace())
    results: list[str] = []
    hidden = _Hidden(ctx, ctx.project_path)

    def on_line(line: bytes) -> bool:
        path, _, rest = line.partition(b"\0")
        if hidden.masked(path):
            return False
        number, _, text = rest.partition(b":")
        results.append(
            f"{_rel(path)}:{number.decode()}: {text.decode('utf-8', errors='replace').rstrip()}"
        )
        return len(results) >= args.max_results

    outcome = await run_rg(
        argv, ctx.project_path, on_line, timeout_s=settings.timeout_s, signal=ctx.signal
    )
    _check_outcome(outcome, "search_code")
    if outcome.returncode == 2 and outcome.stderr.strip() and not results:
        if "regex" in outcome.stderr.lower():
            raise InvalidArgumentsError(
                f"Invalid regex {args.pattern!r}: {_first_lines(outcome.stderr)}"
            )
        raise ToolFailureError(f"ripgrep failed: {_first_lines(outcome.stderr)}")
    if not results:
        if outcome.timed_out:
            raise ToolTimeoutError(
                f"search_code found no match for {args.pattern!r} in the {settings.timeout_s:g}s "
                "it may run (code_search.timeout_s in settings) and was stopped; the search "
                "was not complete. Narrow the pattern or the glob."
            )
        return f"No matches for {args.pattern!r} in files matching {args.glob!r}." + hidden.rule()
    if outcome.stopped:
        note = (
            f"\n[stopped at max_results={args.max_results}; there may be more matches — "
            "narrow the pattern or glob]"
        )
    else:
        results.sort(key=_sort_key)
        note = _timeout_note(outcome, settings.timeout_s)
    return f"{len(results)} matches:\n" + "\n".join(results) + note + hidden.rule()


class _Hidden:
    """Files of rg's output that sandbox.denyRead masks: left out, and counted."""

    def __init__(self, ctx: ToolExecCtx, root: Path) -> None:
        self.guard = guard_for(ctx.launcher)
        self.root = root
        self.seen: dict[bytes, bool] = {}
        self.specs: set[str] = set()

    def masked(self, path: bytes) -> bool:
        if self.guard is None:
            return False
        found = self.seen.get(path)
        if found is None:
            spec = self.guard.denied(self.root / os.fsdecode(path))
            found = self.seen[path] = spec is not None
            if spec is not None:
                self.specs.add(spec.origin)
        return found

    def rule(self) -> str:
        """For search_code: the same words whether or not a masked file matched (a count
        would tell the model what a masked file holds)."""
        if self.guard is None:
            return ""
        origins = sorted({s.origin for s in self.guard.specs})
        return f"\n[files masked by {'; '.join(origins)} are not searched]"

    def note(self) -> str:
        n = sum(self.seen.values())
        if not n:
            return ""
        return f"\n[{n} file(s) left out: masked by {'; '.join(sorted(self.specs))}]"


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
    model_config = ConfigDict(defer_build=True, extra="forbid")
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
    check_readable(root, shown, ctx.launcher)  # sandbox.denyRead (issue 11)
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
    settings = load_search_settings(ctx.session_workspace())
    files: list[str] = []
    cut = False

    hidden = _Hidden(ctx, root)

    def on_line(line: bytes) -> bool:
        nonlocal cut
        if hidden.masked(line):
            return False
        if len(files) == args.max_results:
            cut = True
            return True
        rel = _rel(line)
        files.append(rel if shown == "." else f"{shown.rstrip('/')}/{rel}")
        return False

    outcome = await run_rg(argv, root, on_line, timeout_s=settings.timeout_s, signal=ctx.signal)
    _check_outcome(outcome, "search_files")
    if outcome.returncode == 2 and outcome.stderr.strip() and not files:
        raise InvalidArgumentsError(f"search_files failed: {_first_lines(outcome.stderr)}")
    if not files:
        if outcome.timed_out:
            raise ToolTimeoutError(
                f"search_files found no file matching {args.pattern!r} under {shown} in the "
                f"{settings.timeout_s:g}s it may run (code_search.timeout_s in settings) and "
                "was stopped; the listing was not complete. Narrow the path."
            )
        return f"No files match {args.pattern!r} under {shown}." + hidden.note()
    files.sort()
    note = (
        f"\n[results cut at max_results={args.max_results}; narrow the pattern to see others]"
        if cut
        else _timeout_note(outcome, settings.timeout_s)
    )
    return f"{len(files)} files:\n" + "\n".join(files) + note + hidden.note()


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
