"""Installed packages' plugins: the entry points of one group, each loaded and handed on.

Tools (``codingcode.tools``), MCP prompts (``codingcode.prompts``) and MCP resources
(``codingcode.resources``) plug in the same way: only installed packages can (the user's
own environment, not a project's files), and a broken plugin is named, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Self


def load_plugins(
    group: str, kind: str, accept: Callable[[Any], None]
) -> list[tuple[str, Exception]]:
    """Load every entry point of ``group`` and pass what it names to ``accept`` (which
    raises when it is no plugin of this kind). Returns each plugin that failed, named
    (``<kind> plugin 'name' (module:attr)``), with why."""
    from importlib.metadata import entry_points

    failures = []
    for ep in entry_points(group=group):
        try:
            accept(ep.load())
        except Exception as exc:  # a broken plugin is named, not a traceback
            failures.append((f"{kind} plugin {ep.name!r} ({ep.value})", exc))
    return failures


class PluginSet:
    """The plugins of one entry-point group that offer one kind of thing (a dataclass whose
    fields all have defaults, with a ``notes`` list): :meth:`installed` loads them, ``add``
    takes one provider or raises saying why it is none."""

    group: ClassVar[str]
    kind: ClassVar[str]
    notes: list[str]

    def add(self, provider: Any) -> None:
        raise NotImplementedError

    @classmethod
    def installed(cls) -> Self:
        found = cls()
        for plugin, exc in load_plugins(cls.group, cls.kind, found.add):
            found.notes.append(f"{plugin} ignored: {exc}")
        return found
