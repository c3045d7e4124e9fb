"""What each argument of a call is (path, command, url, ...): approval reads declarations,
never tool names (DESIGN "Capabilities").

A tool declares its arguments' roles in its definition (``ToolDefinition.arg_roles``, the
built-ins included). A tool that declares nothing — most MCP tools, some custom ones — gets
roles inferred from its JSON schema: a property whose *name* (or, failing that, whose
*description*) says path / file / filename / dir / folder is a ``path``; command / cmd /
script / shell a ``command``; url / uri / link / endpoint a ``url``; cwd / workdir a
``cwd``; glob / include / exclude a ``glob``. Nested objects and arrays are looked into by
the rules anyway (``presets``), so an undeclared string that *looks* like a path
(``/...``, ``~/...``, ``./...``) is still checked as one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from codingcode.tools.declarations import builtin_declaration
from codingcode.tools.definition import ArgRole

_BY_NAME: tuple[tuple[re.Pattern[str], ArgRole], ...] = (
    (re.compile(r"^(cwd|workdir|working_?dir(ectory)?)$", re.I), "cwd"),
    (re.compile(r"(^|_)(command|cmd|script|shell_?command|commandline)s?$", re.I), "command"),
    (re.compile(r"(^|_)(url|uri|href|link|endpoint)s?$", re.I), "url"),
    (re.compile(r"^(glob|include|exclude|file_?pattern)s?$", re.I), "glob"),
    (
        re.compile(
            r"(^|_)(path|file|filename|file_?path|filepath|dir|directory|folder|root|"
            r"source|destination|target|src|dst|dest)s?$",
            re.I,
        ),
        "path",
    ),
)
_BY_DESCRIPTION: tuple[tuple[re.Pattern[str], ArgRole], ...] = (
    (
        re.compile(r"\b(shell )?command( line)? to (run|execute)\b|\bscript to run\b", re.I),
        "command",
    ),
    (re.compile(r"\b(url|uri)\b", re.I), "url"),
    (re.compile(r"\b(file|directory|folder)( path)?\b|\bpath (to|of)\b", re.I), "path"),
)


def role_by_name(name: str) -> ArgRole | None:
    for pattern, role in _BY_NAME:
        if pattern.search(name):
            return role
    return None


def infer_arg_roles(schema: Mapping[str, Any] | None) -> dict[str, ArgRole]:
    """Roles of a JSON schema's top-level properties, from their names and descriptions."""
    props = (schema or {}).get("properties")
    if not isinstance(props, Mapping):
        return {}
    roles: dict[str, ArgRole] = {}
    for name, prop in props.items():
        role = role_by_name(str(name))
        if role is None and isinstance(prop, Mapping):
            description = str(prop.get("description") or "")[:500]
            for pattern, guess in _BY_DESCRIPTION:
                if pattern.search(description):
                    role = guess
                    break
        if role is not None:
            roles[str(name)] = role
    return roles


def __getattr__(name: str) -> Any:
    """``BUILTIN_ROLES``: the built-ins' roles by name, read from their definitions (kept for
    callers of the old table; approval itself asks :mod:`codingcode.tools.declarations`)."""
    if name == "BUILTIN_ROLES":
        from codingcode.tools.service import ToolService

        return {d.name: dict(d.arg_roles) for d in ToolService.default().list()}
    raise AttributeError(name)


def call_roles(
    declared: Mapping[str, ArgRole],
    args: Mapping[str, Any],
    tool: str = "",
    origin_kind: str = "custom",
) -> dict[str, ArgRole]:
    """The roles of a call's arguments: the declared ones; for a call that declares none,
    the built-in's declaration of that name (not for an MCP tool), else inferred from the
    argument names."""
    if declared:
        return dict(declared)
    builtin = builtin_declaration(tool) if origin_kind != "mcp" else None
    if builtin is not None:
        return dict(builtin.arg_roles)
    inferred: dict[str, ArgRole] = {}
    for name in args:
        role = role_by_name(str(name))
        if role is not None:
            inferred[str(name)] = role
    return inferred


def first_with(roles: Mapping[str, ArgRole], args: Mapping[str, Any], role: ArgRole) -> str | None:
    """The value of the first string argument with ``role``."""
    for name, r in roles.items():
        if r == role:
            value = args.get(name)
            if isinstance(value, str):
                return value
    return None
