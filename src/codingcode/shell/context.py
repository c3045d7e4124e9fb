"""Where a command runs, as the walk knows it: directory, variables, depth, stdin."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from codingcode.shell.model import Analysis, Command, Redirect, Stdin, Word
from codingcode.shell.source import Source


@dataclass
class Ctx:
    cwd: str | None
    vars: dict[str, str]
    depth: int
    via: tuple[str, ...] = ()
    stdin: Stdin | None = None
    #: False while ``vars`` is shared with the context it was copied from: copied on the
    #: first write (a 20,000-stage pipeline after 20,000 assignments stays linear).
    owns_vars: bool = True

    def copy(self) -> Ctx:
        self.owns_vars = False
        return Ctx(self.cwd, self.vars, self.depth, self.via, self.stdin, owns_vars=False)

    def set_vars(self) -> dict[str, str]:
        """``vars``, to change (this context's own copy)."""
        if not self.owns_vars:
            self.vars = dict(self.vars)
            self.owns_vars = True
        return self.vars


def deeper(ctx: Ctx) -> Ctx:
    inner = ctx.copy()
    inner.depth += 1
    return inner


class Walk(Protocol):
    """The walker, as the modules doing its work see it (:class:`.walker.Walker`)."""

    out: Analysis
    sources: list[Source]
    last_output: str | None
    active_files: list[tuple[str, int]]
    attached: dict[tuple[int, tuple[int, int]], list[Any]]
    functions: set[str]
    function_effects: dict[str, tuple[frozenset[str], bool]]
    aliases: bool
    literal_values: dict[str, set[str] | None]

    def opaque(self, reason: str) -> None: ...

    def add(self, cmd: Command) -> None: ...

    def mark_opaque(self, cmd: Command, reason: str) -> Command: ...

    def mentions(self, pattern: bytes) -> bool: ...

    def t(self, node: Any) -> str: ...

    def script(self, text: str, ctx: Ctx) -> None: ...

    def visit(self, node: Any, ctx: Ctx) -> None: ...

    def command(self, node: Any, ctx: Ctx, extra_redirects: Any) -> None: ...

    def note_assignment(self, name: str, *, prefix: bool = False) -> None: ...

    def env_effect(self, name: str, value: Word, cmd: Command | None, ctx: Ctx) -> None: ...

    def redirect(self, node: Any, ctx: Ctx) -> Redirect | None: ...

    def record_writes(self, cmd: Command, output: str | None) -> None: ...

    def file_content(self, w: Word, cwd: str) -> str | None: ...

    def written(self, w: Word, cwd: str | None) -> bool: ...

    def emit(self, cmd: Command, ctx: Ctx) -> None: ...

    def run_file(self, w: Word, cmd: Command, ctx: Ctx, via: str) -> Ctx | None: ...

    def speculate(self, cmd: Command) -> None: ...

    def follow(self, parts: list[tuple[str, Any]], cmd: Command, ctx: Ctx) -> None: ...

    def makefile(self, w: Word, cmd: Command, ctx: Ctx) -> None: ...

    def package_scripts(self, content: str | None, cmd: Command, ctx: Ctx) -> None: ...

    def hidden_shell(self, cmd: Command, ctx: Ctx) -> None: ...

    def shell_stdin(self, cmd: Command, ctx: Ctx, prog: str) -> None: ...

    def shell_like(self, cmd: Command, ctx: Ctx, prog: str) -> None: ...

    def nested_script(
        self, code: Word, cmd: Command, ctx: Ctx, via: str, *, stdin_used: bool = False
    ) -> Ctx | None: ...

    def word(self, node: Any, ctx: Ctx) -> Word: ...
