"""Settings files: where they are, how they load, how they merge (DESIGN: contract).

Three levels, read in this order; later ones override earlier ones and lists are merged:

1. the user's settings, ``~/.claude/settings.json`` then
   ``<platform config dir>/codingcode/settings.json`` (trusted: the user's own);
2. the project's: ``.claude/settings.json`` then ``.codingcode/settings.json`` (committed);
3. personal: ``.claude/settings.local.json`` then ``.codingcode/settings.local.json``
   (git-ignored; where the confirmation prompt saves always/never answers).

At each level Claude Code's file is read first, so codingcode's own file of the same level
wins a conflict (``codingcode.claude_settings`` says what is read from a Claude Code file).

This module only finds, reads and checks the JSON of each file and keeps where every value
came from. Each subsystem validates its own section (``permissions``, ``hooks``,
``sandbox``, ``mcpServers``, ...) with its own pydantic model, so an error can name the file
and the entry, and the trust logic can tell a project's grant from the user's own.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from codingcode.dirs import USER_CONFIG_ENV as USER_CONFIG_ENV
from codingcode.dirs import USER_STATE_ENV as USER_STATE_ENV
from codingcode.dirs import claude_config_dir
from codingcode.dirs import user_config_dir as user_config_dir
from codingcode.dirs import user_state_dir as user_state_dir
from codingcode.errors import InvalidArgumentsError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from codingcode.trust import TrustStore

    M = TypeVar("M", bound=BaseModel)

#: Roughly how deep Python's JSON parser can nest (its recursion limit); deeper input is a
#: clear error, never a RecursionError.
MAX_JSON_DEPTH = 900


class Scope(StrEnum):
    USER = "user"
    PROJECT = "project"
    LOCAL = "local"


#: What a section's reader keeps of one file's part: (path, scope, value, grants apply) → value.
Keep = Callable[[Path, str, dict[str, Any], bool], dict[str, Any]]


class SettingsError(InvalidArgumentsError):
    """A settings file that cannot be used; the message names the file and the entry."""


def settings_paths(project: Path) -> list[tuple[Scope, Path]]:
    """codingcode's own settings file of each level (where its commands write)."""
    return [
        (Scope.USER, user_config_dir() / "settings.json"),
        (Scope.PROJECT, project / ".codingcode" / "settings.json"),
        (Scope.LOCAL, project / ".codingcode" / "settings.local.json"),
    ]


def claude_settings_paths(project: Path) -> list[tuple[Scope, Path]]:
    """Claude Code's settings file of each level (read, never written)."""
    return [
        (Scope.USER, claude_config_dir() / "settings.json"),
        (Scope.PROJECT, project / ".claude" / "settings.json"),
        (Scope.LOCAL, project / ".claude" / "settings.local.json"),
    ]


def read_order(project: Path) -> list[tuple[Scope, Path, str]]:
    """Every settings file in the order it is read, with its dialect (``claude`` or
    ``codingcode``): by level, Claude Code's first, so ours wins a conflict."""
    ours, claude = settings_paths(project), claude_settings_paths(project)
    order: list[tuple[Scope, Path, str]] = []
    for (scope, theirs), (_, own) in zip(claude, ours, strict=True):
        order += [(scope, theirs, "claude"), (scope, own, "codingcode")]
    return order


@dataclass(frozen=True)
class SettingsFile:
    scope: Scope
    path: Path
    data: dict[str, Any]
    #: The exact bytes read (trust hashes them).
    raw: bytes = b""
    #: Whether what this file *grants or executes* may apply (``codingcode.trust``): always
    #: for the user's own file; for a project file only once the user trusted it as it is.
    #: What a file *restricts* applies either way.
    trusted: bool = True
    #: ``codingcode`` or ``claude`` (a Claude Code file: ``data`` is what we read of it).
    dialect: str = "codingcode"
    #: Keys of the file that codingcode recognises and does not act on.
    unused: tuple[str, ...] = ()

    def section(self, key: str) -> Any:
        return self.data.get(key)


@dataclass
class Settings:
    """Every settings file of a project, in order, and their merged view."""

    project: Path
    files: list[SettingsFile] = field(default_factory=list)
    #: One line each, shown once by the front end and by ``codingcode config``: a Claude
    #: Code file that could not be read, an unknown key, a value with no equivalent.
    notes: list[str] = field(default_factory=list)

    def merged(self, key: str, default: Any = None) -> Any:
        """The value of a top-level key, later files overriding (dicts merged, lists joined)."""
        result: Any = default
        for f in self.files:
            if key in f.data:
                result = merge_values(result, f.data[key])
        return result

    def sources(self, key: str) -> list[tuple[SettingsFile, Any]]:
        """Each file's own value for ``key``, in order (for per-file validation and trust)."""
        return [(f, f.data[key]) for f in self.files if key in f.data]

    def section(
        self,
        key: str,
        model: type[M],
        *,
        keep: Keep | None = None,
    ) -> M:
        """The ``key`` section as its reader's typed model: each file's part validated on
        its own (an error names the file and the entry), then merged in order (dicts
        merged, lists joined) and validated whole.

        ``keep(path, scope, value, grants_apply)``: what of one file's valid part is merged
        (a granting section's reader leaves out what an untrusted project file grants).
        """
        from pydantic import ValidationError

        merged: dict[str, Any] = {}
        for f, value in self.sources(key):
            try:
                model.model_validate(value)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{key}.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}".replace(
                        f"{key}.: ", f"{key}: "
                    )
                    for e in exc.errors(include_url=False)
                )
                raise SettingsError(f"Settings file {f.path}: {problems}.") from None
            part = dict(value)
            if keep is not None:
                part = keep(f.path, f.scope, part, grants_apply(f.scope, f.trusted))
            merged = merge_values(merged, part)
        return model.model_validate(merged)


#: The settings sections through which a project file can *grant or execute* something,
#: and what in each grants (DESIGN "Trust"). What an untrusted project file says there is
#: left out; what it restricts applies. Every section's reader asks :func:`grants_apply`
#: (through :func:`granting_sources`): the trust rule is written there once.
#: (``mcpServers``/``.mcp.json`` and agent and skill files are files of their own, checked
#: by ``Workspace.is_trusted`` with their exact bytes.)
GRANTING_SECTIONS: dict[str, str] = {
    "permissions": "allow rules and a looser defaultMode (deny and ask rules always apply)",
    "hooks": "every hook (a hook runs a command)",
    "approvals": "the whole section (readOnlyCommands, autoAllowSandboxed)",
    "sandbox": "entries that widen the sandbox (writable roots, network, environment, mode)",
    "web": "web.fetch.allow_private_hosts and web.search",
}


def users_own(scope: Scope | None) -> bool:
    """The user's own settings file, or what was made in code (``scope`` None): what it
    grants always applies, whatever the project's trust."""
    return scope is None or scope is Scope.USER


def grants_apply(scope: Scope | None, trusted: bool) -> bool:
    """Whether what a settings entry grants or executes applies: always for the user's own
    file (and for what was made in code, ``scope`` None); for a project or local file only
    once the user trusted it as it is (``trusted``; never in a session that distrusts its
    project: its workspace marks those files untrusted). What an entry restricts applies
    either way."""
    return users_own(scope) or trusted


def granting_sources(settings: Settings, section: str) -> list[tuple[SettingsFile, Any, bool]]:
    """Each file's own value of a granting ``section`` (one of :data:`GRANTING_SECTIONS`),
    in order, and whether what it grants applies."""
    if section not in GRANTING_SECTIONS:
        raise ValueError(f"{section!r} is not a granting settings section")
    return [(f, value, grants_apply(f.scope, f.trusted)) for f, value in settings.sources(section)]


def merge_values(base: Any, override: Any) -> Any:
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for k, v in override.items():
            merged[k] = merge_values(base.get(k), v) if k in base else v
        return merged
    if isinstance(base, list) and isinstance(override, list):
        return [*base, *override]
    return override


def read_settings_file(scope: Scope, path: Path) -> SettingsFile | None:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SettingsError(f"Cannot read settings file {path}: {exc.strerror}.") from None
    if not raw.strip():
        return SettingsFile(scope, path, {}, raw)
    try:
        data = json.loads(raw)
    except RecursionError:
        raise SettingsError(
            f"Settings file {path} is nested too deeply to read (keep it under {MAX_JSON_DEPTH} levels)."
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = (
            f" (line {exc.lineno}, column {exc.colno})"
            if isinstance(exc, json.JSONDecodeError)
            else ""
        )
        raise SettingsError(f"Settings file {path} is not valid JSON{where}: {exc}.") from None
    if not isinstance(data, dict):
        raise SettingsError(
            f"Settings file {path} must hold a JSON object, not {type(data).__name__}."
        )
    return SettingsFile(scope, path, data, raw)


def load_settings(project: Path, *, trust: TrustStore | None = None) -> Settings:
    """Read every settings file of ``project`` (missing files are simply absent), each
    project file marked by ``trust`` (default: the user's trust records).

    Below the front ends, read the session's :class:`codingcode.workspace.Workspace`
    instead: it holds what this read once per session.
    """
    from dataclasses import replace

    from codingcode.trust import TrustStore

    settings = Settings(project=project)
    store = trust if trust is not None else TrustStore()
    for scope, path, dialect in read_order(project):
        if dialect == "claude":
            loaded = _read_claude_file(scope, path, settings.notes)
        else:
            loaded = read_settings_file(scope, path)
            if loaded is not None:
                settings.notes += _unknown_key_notes(loaded)
        if loaded is None:
            continue
        if scope is not Scope.USER:
            loaded = replace(loaded, trusted=store.is_trusted(project, path, loaded.raw))
        settings.files.append(loaded)
    return settings


def _read_claude_file(scope: Scope, path: Path, notes: list[str]) -> SettingsFile | None:
    """A Claude Code settings file: one it cannot read is one line in ``notes`` (the rest
    of the settings still load, as Claude Code does)."""
    from dataclasses import replace

    from codingcode.claude_settings import normalize

    try:
        loaded = read_settings_file(scope, path)
    except SettingsError as exc:
        notes.append(f"codingcode: {exc.message} It is skipped.")
        return None
    if loaded is None:
        return None
    read = normalize(loaded.data, path)
    notes += read.notes
    return replace(loaded, data=read.data, dialect="claude", unused=tuple(read.unused))


def _unknown_key_notes(f: SettingsFile) -> list[str]:
    from codingcode.claude_settings import (
        CLAUDE_KEYS_KNOWN,
        CODINGCODE_KEYS,
        unknown_keys_note,
    )

    keys = [k for k in f.data if k not in CODINGCODE_KEYS and k not in CLAUDE_KEYS_KNOWN]
    return unknown_keys_note(f.path, keys, CODINGCODE_KEYS)


LOCAL_SETTINGS = "settings.local.json"


def ignore_local_settings(path: Path) -> None:
    """Keep a personal ``settings.local.json`` out of git: after codingcode created one, the
    ``.gitignore`` beside it (in ``.codingcode/``, never the project's own) lists it.

    Idempotent; a ``.gitignore`` that lists it already is left alone, one that does not gets
    the line appended (atomically). Failing to write it is not worth failing the command for.
    """
    from codingcode.atomic import atomic_write_bytes

    if path.name != LOCAL_SETTINGS:
        return
    ignore = path.parent / ".gitignore"
    try:
        old = ignore.read_bytes()
    except FileNotFoundError:
        old = b""
    except OSError:
        return
    if any(
        line.strip() in (b"settings.local.json", b"/settings.local.json")
        for line in old.splitlines()
    ):
        return
    text = old + (b"\n" if old and not old.endswith(b"\n") else b"") + b"settings.local.json\n"
    with contextlib.suppress(OSError):
        atomic_write_bytes(ignore, text)


def audit_required(settings: Settings) -> bool:
    """Whether calls must be refused when the audit log cannot record them.

    ``"audit": {"required": true}`` in any settings file: a restriction, so a project file
    may set it too, and a later file cannot lift what an earlier one required.
    """
    required = False
    for f, value in settings.sources("audit"):
        flag = value.get("required", False) if isinstance(value, dict) else value
        if not isinstance(value, dict) or not isinstance(flag, bool):
            raise SettingsError(
                f'Invalid settings in {f.path}: "audit" must be an object such as '
                '{"required": true} (required: true or false).'
            )
        required |= flag
    return required


def untrusted_note(ignored: list[str], project: Path) -> str:
    """The one line that says which project grants were ignored and how to trust them."""
    shown = "; ".join(ignored[:5]) + (f"; and {len(ignored) - 5} more" if len(ignored) > 5 else "")
    return (
        f"codingcode: ignored what this untrusted project would grant ({shown}). "
        f"Review it, then run `codingcode trust --project {project}` to allow it."
    )
