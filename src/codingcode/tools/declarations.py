"""What a tool declares about itself — its arguments' roles, its effects, its origin — looked
up by name, so that approval and the sandbox read declarations instead of naming tools.

A :class:`Declaration` is the part of a :class:`~codingcode.tools.definition.ToolDefinition`
approval needs. :func:`lookup` answers for the tools of a service (custom and MCP tools
included), :func:`builtin_declaration` for the built-ins alone (a call made by hand, or a
rule compiled without a registry).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codingcode.tools.definition import ArgRole, Effect, ToolDefinition, ToolOrigin

if TYPE_CHECKING:
    from codingcode.tools.service import ToolService
    from codingcode.tools.text_edit import EditPreview

#: Effects that leave everything as it was: a built-in tool with no others only reads.
READING_EFFECTS: frozenset[Effect] = frozenset({"reads", "network"})
#: Roles that name a place on disk (a rule's SPEC for such a tool is a path glob).
PATH_ROLES: tuple[ArgRole, ...] = ("path", "directory", "glob")


@dataclass(frozen=True)
class Declaration:
    """A tool's declared argument roles, effects and origin."""

    name: str
    arg_roles: Mapping[str, ArgRole] = field(default_factory=dict)
    effects: frozenset[Effect] | None = None
    origin: ToolOrigin = field(default_factory=ToolOrigin)

    @classmethod
    def of(cls, d: ToolDefinition) -> Declaration:
        return cls(d.name, dict(d.arg_roles), d.effects, d.origin)

    def arg_with(self, *roles: ArgRole) -> str | None:
        """The first argument with one of ``roles`` (in the order of ``roles``)."""
        for role in roles:
            for name, r in self.arg_roles.items():
                if r == role:
                    return name
        return None

    @property
    def edit_preview(self) -> EditPreview | None:
        """The change a call will make, shown before anyone is asked: declared by a tool
        whose effects include ``writes`` with a ``path`` and a ``content`` argument (with an
        ``old_text`` argument too, an edit). What the tool is called does not matter."""
        if self.effects is None or "writes" not in self.effects:
            return None
        path, content = self.arg_with("path"), self.arg_with("content")
        if path is None or content is None:
            return None
        from codingcode.tools.text_edit import EditPreview

        return EditPreview(path, content, self.arg_with("old_text"))

    @property
    def runs_commands(self) -> bool:
        """It runs a command line (an argument with the ``command`` role)."""
        return "command" in self.arg_roles.values()

    @property
    def names_files(self) -> bool:
        """An argument names a file or a directory (``path`` or ``directory``)."""
        return any(r in ("path", "directory") for r in self.arg_roles.values())

    @property
    def names_places(self) -> bool:
        """An argument names a place on disk: a file, a directory or a file-name glob."""
        return any(r in PATH_ROLES for r in self.arg_roles.values())

    @property
    def only_reads(self) -> bool:
        """A built-in that declares it only reads (files, the network) or does nothing
        outside the session: the read-only whitelist (SPEC A2)."""
        return (
            self.origin.kind == "builtin"
            and self.effects is not None
            and self.effects <= READING_EFFECTS
        )

    @property
    def writes_files(self) -> bool:
        return self.effects is not None and "writes" in self.effects and self.names_files


Lookup = Callable[[str], "Declaration | None"]


@functools.cache
def _builtins() -> dict[str, Declaration]:
    from codingcode.tools.builtin import builtin_tools
    from codingcode.tools.plan_mode import make_exit_plan_mode_tool
    from codingcode.tools.search import make_tool_search_tool

    tools = [
        *builtin_tools(),
        make_tool_search_tool(lambda query, ctx: ""),
        make_exit_plan_mode_tool(lambda: "", lambda: ""),
    ]
    return {d.name: Declaration.of(d) for d in tools}


def builtin_declaration(name: str) -> Declaration | None:
    """The declaration of the built-in tool ``name`` (None: not a built-in)."""
    return _builtins().get(name)


def lookup(service: ToolService | None) -> Lookup:
    """Declarations of ``service``'s tools as they are now (a tool registered later is
    found), the built-ins' for a name it does not hold."""
    if service is None:
        return builtin_declaration

    seen: dict[str, tuple[ToolDefinition, Declaration]] = {}

    def find(name: str) -> Declaration | None:
        if name not in service:
            return builtin_declaration(name)
        definition = service.get(name)
        cached = seen.get(name)
        if cached is None or cached[0] is not definition:  # registered again: read anew
            cached = (definition, Declaration.of(definition))
            seen[name] = cached
        return cached[1]

    return find
