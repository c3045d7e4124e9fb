"""Where a command runs, as the walk knows it: directory, variables, depth, stdin."""

from __future__ import annotations

from dataclasses import dataclass

from codingcode.shell.model import Stdin


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
