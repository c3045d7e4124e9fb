"""The sandbox policy: what the ``sandbox`` settings say, where each part came from.

Each settings file keeps its scope (user / project / local), and each entry of its
``sandbox`` section is kept with that origin (:class:`SandboxEntry`). The policy in effect
is built from a list of entries (:func:`policy_from_entries`), so a caller that must ignore
some of them (workspace trust ignores a not-yet-trusted project's *widening* entries) can
drop them first: :func:`widening_entries` says which entries widen the sandbox and why.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codingcode.config import Scope, Settings, SettingsError, SettingsFile, grants_apply
from codingcode.sandbox.credentials.settings import (
    CredentialSettingsError,
    CredentialSpec,
    expand,
    parse_credentials,
)
from codingcode.sandbox.masks import MaskSpec
from codingcode.sandbox.network.domains import DomainPolicy, pattern_problem

SETTINGS_KEY = "sandbox"
_Model = TypeVar("_Model", bound=BaseModel)


class SandboxMode(StrEnum):
    WORKSPACE_WRITE = "workspace-write"
    READ_ONLY = "read-only"
    OFF = "off"


class BackendChoice(StrEnum):
    AUTO = "auto"
    BUBBLEWRAP = "bubblewrap"
    LANDLOCK = "landlock"
    NONE = "none"


class Network(StrEnum):
    """``sandbox.network.mode``: ``off`` (no network), ``limited`` (only the names
    ``allowedDomains`` lists, through codingcode's proxy) or ``on`` (the host's network).
    The old string values ``"none"`` and ``"allow"`` mean ``off`` and ``on``."""

    OFF = "off"
    LIMITED = "limited"
    ON = "on"
    NONE = "off"  # the names of before sandbox.network became an object
    ALLOW = "on"


#: ``sandbox.network`` as a string (today's and the old values) -> the mode it means.
NETWORK_STRINGS = {"none": "off", "allow": "on", "off": "off", "limited": "limited", "on": "on"}
#: The list keys of the ``sandbox.network`` object, each a list of host patterns.
NETWORK_LISTS = ("allowedDomains", "deniedDomains", "readOnlyDomains")


class NetworkSettings(BaseModel):
    """The ``sandbox.network`` object of one file (see :mod:`codingcode.sandbox.network`)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    mode: Literal["off", "limited", "on"] | None = None
    allowedDomains: list[str] = Field(default_factory=list)
    deniedDomains: list[str] = Field(default_factory=list)
    readOnlyDomains: list[str] = Field(default_factory=list)
    allowLocalAddresses: bool | None = None
    #: Terminate TLS for the hosts a masked credential names (``sandbox.credentials``).
    tlsTerminate: bool | None = None


class SandboxSettings(BaseModel):
    """One file's ``sandbox`` section, exactly as written (absent keys stay ``None``)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    mode: Literal["workspace-write", "read-only", "off"] | None = None
    backend: Literal["auto", "bubblewrap", "landlock", "none"] | None = None
    writable_roots: list[str] = Field(default_factory=list)
    #: A string (``"off"``, ``"limited"``, ``"on"``, or the old ``"none"``/``"allow"``) or a
    #: :class:`NetworkSettings` object; checked by :func:`_network_entries`.
    network: Any = None
    masked_paths: list[str] = Field(default_factory=list)
    #: Paths or globs every command's sandbox masks, on top of the defaults (issue 11).
    denyRead: list[str] = Field(default_factory=list)
    #: Environment variables that look like secrets but should reach commands anyway.
    keep_env: list[str] = Field(default_factory=list)
    #: ``sandbox.credentials`` (Claude Code's names), checked by :func:`parse_credentials`.
    credentials: Any = None


@dataclass(frozen=True)
class SandboxEntry:
    """One value of one settings file: ``field`` is a key of the sandbox section."""

    field: str
    value: str
    scope: Scope
    path: Path
    #: Whether the file's grants may apply (see ``SettingsFile.trusted``).
    trusted: bool = True
    #: A ``credentials`` entry's credential (``value`` is its label).
    credential: CredentialSpec | None = None

    def describe(self) -> str:
        return f"sandbox.{self.field} = {self.value!r} ({self.scope.value} settings {self.path})"


@dataclass(frozen=True)
class SandboxPolicy:
    """The policy in effect for one project (defaults: workspace-write, auto, no network)."""

    project: Path
    mode: SandboxMode = SandboxMode.WORKSPACE_WRITE
    backend: BackendChoice = BackendChoice.AUTO
    network: Network = Network.OFF
    #: The names a ``limited`` network reaches (and the ones it never does).
    domains: DomainPolicy = field(default_factory=DomainPolicy)
    writable_roots: tuple[Path, ...] = ()
    masked_paths: tuple[Path, ...] = ()
    keep_env: tuple[str, ...] = ()
    #: Patterns masked besides the defaults: ``sandbox.denyRead`` and the user's deny rules
    #: on paths (the front end passes those in; see :func:`with_deny_read`).
    deny_read: tuple[MaskSpec, ...] = ()
    #: ``sandbox.credentials`` in effect (presets expanded, later entries win).
    credentials: tuple[CredentialSpec, ...] = ()
    #: ``sandbox.network.tlsTerminate``: the proxy injects masked credentials' real values.
    tls_terminate: bool = False
    #: The entries this policy was built from (for messages and `sandbox status`).
    entries: tuple[SandboxEntry, ...] = field(default=(), compare=False)

    @property
    def contained(self) -> bool:
        """False when the user switched containment off (mode off or backend none)."""
        return self.mode is not SandboxMode.OFF and self.backend is not BackendChoice.NONE


def _validated(
    file: SettingsFile,
    raw: Any,
    model: type[_Model],
    must: str,
    describe: Callable[[Any], str],
) -> _Model:
    """``raw`` as ``model``; not an object (``must`` says what it must be), or an invalid
    one, is a SettingsError naming the file and each problem (``describe``)."""
    if not isinstance(raw, dict):
        raise SettingsError(f"Settings file {file.path}: {must}, not {type(raw).__name__}.")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(describe(e) for e in exc.errors())
        raise SettingsError(f"Settings file {file.path}: {problems}.") from None


def parse_file(file: SettingsFile) -> list[SandboxEntry]:
    """Validate one file's ``sandbox`` section; a bad entry names the file and the field."""
    raw = file.section(SETTINGS_KEY)
    if raw is None:
        return []
    parsed = _validated(
        file,
        raw,
        SandboxSettings,
        '`sandbox` must be an object such as {"mode": "workspace-write"}',
        _describe_error,
    )
    entries = []
    for name in ("mode", "backend"):
        value = getattr(parsed, name)
        if value is not None:
            entries.append(SandboxEntry(name, value, file.scope, file.path, file.trusted))
    entries += _network_entries(file, parsed.network)
    if parsed.credentials is not None:
        try:
            specs, presets = parse_credentials(parsed.credentials)
        except CredentialSettingsError as exc:
            raise SettingsError(f"Settings file {file.path}: {exc}.") from None
        where = (file.scope, file.path, file.trusted)
        entries += [SandboxEntry("credentials", s.label, *where, credential=s) for s in specs]
        entries += [SandboxEntry("credentials.presets", name, *where) for name in presets]
    for name in ("writable_roots", "masked_paths", "denyRead", "keep_env"):
        for value in getattr(parsed, name):
            what = "name" if name == "keep_env" else "path"
            if not value.strip():
                raise SettingsError(
                    f"Settings file {file.path}: sandbox.{name} holds an empty {what}."
                )
            if "\0" in value:
                raise SettingsError(
                    f"Settings file {file.path}: sandbox.{name} holds a {what} with a NUL "
                    f"character ({value!r}); no {what} can contain one."
                )
            if name == "denyRead" and _over_root(value):
                raise SettingsError(
                    f"Settings file {file.path}: sandbox.denyRead holds {value!r}, a glob over "
                    "/ (it would hide the whole system and no command could run); name the "
                    "directories or files to hide, e.g. /srv/secrets/**."
                )
            entries.append(SandboxEntry(name, value, file.scope, file.path, file.trusted))
    return entries


def _over_root(pattern: str) -> bool:
    """``/``, ``/*``, ``/**``, ``/[a-z]*/x``: a pattern whose first step from the root is
    the root itself or a glob."""
    text = pattern.strip()
    if not text.startswith("/"):
        return False
    first = text.lstrip("/").split("/", 1)[0]
    return not first or any(c in first for c in "*?[")


def _network_entries(file: SettingsFile, raw: Any) -> list[SandboxEntry]:
    """``sandbox.network``: a mode string, or the object with mode and domain lists."""

    def entry(name: str, value: str) -> SandboxEntry:
        return SandboxEntry(name, value, file.scope, file.path, file.trusted)

    if raw is None:
        return []
    if isinstance(raw, str):
        if raw not in NETWORK_STRINGS:
            raise SettingsError(
                f"Settings file {file.path}: sandbox.network must be one of off, limited or on "
                f'(or an object such as {{"mode": "limited", "allowedDomains": ["pypi.org"]}}), '
                f"got {raw!r}."
            )
        return [entry("network", NETWORK_STRINGS[raw])]
    parsed = _validated(
        file,
        raw,
        NetworkSettings,
        "sandbox.network must be an object such as "
        '{"mode": "limited", "allowedDomains": ["pypi.org"]}',
        _describe_network_error,
    )
    entries = [entry("network", parsed.mode)] if parsed.mode is not None else []
    for name in NETWORK_LISTS:
        for value in getattr(parsed, name):
            problem = pattern_problem(value)
            if problem is not None:
                raise SettingsError(
                    f"Settings file {file.path}: sandbox.network.{name} holds {value!r}: {problem}."
                )
            entries.append(entry(f"network.{name}", value.strip()))
    if parsed.allowLocalAddresses is not None:
        entries.append(
            entry("network.allowLocalAddresses", str(parsed.allowLocalAddresses).lower())
        )
    if parsed.tlsTerminate is not None:
        entries.append(entry("network.tlsTerminate", str(parsed.tlsTerminate).lower()))
    return entries


def _describe_network_error(error: Any) -> str:
    where = "sandbox.network." + ".".join(str(p) for p in error["loc"])
    if error["type"] == "extra_forbidden":
        return (
            f"unknown key {where} (known: mode, allowedDomains, deniedDomains, "
            "readOnlyDomains, allowLocalAddresses, tlsTerminate)"
        )
    if error["loc"] and error["loc"][0] == "mode":
        return f"{where} must be one of off, limited or on, got {error.get('input')!r}"
    return f"{where}: {error['msg']}"


def _describe_error(error: Any) -> str:
    where = "sandbox." + ".".join(str(p) for p in error["loc"])
    allowed = {
        "mode": "workspace-write, read-only or off",
        "backend": "auto, bubblewrap, landlock or none",
    }
    name = str(error["loc"][0]) if error["loc"] else ""
    if error["type"] == "extra_forbidden":
        return f"unknown key {where} (known: mode, backend, writable_roots, network, masked_paths, denyRead, keep_env, credentials)"
    if name in allowed:
        return f"{where} must be one of {allowed[name]}, got {error.get('input')!r}"
    return f"{where}: {error['msg']}"


def sandbox_entries(settings: Settings) -> list[SandboxEntry]:
    """Every sandbox entry of every settings file, in file order (user, project, local)."""
    entries: list[SandboxEntry] = []
    for file in settings.files:
        entries.extend(parse_file(file))
    return entries


def resolve_setting_path(value: str, project: Path) -> Path:
    """``~`` expanded, relative to the project, symlinks resolved (what a mount needs)."""
    path = Path(os.path.expanduser(value))
    if not path.is_absolute():
        path = project / path
    return Path(os.path.realpath(path))


def policy_from_entries(project: Path, entries: list[SandboxEntry]) -> SandboxPolicy:
    """Later entries override earlier ones for scalars; path lists are joined."""
    project = Path(os.path.realpath(project))
    values: dict[str, str] = {}
    roots: list[Path] = []
    masks: list[Path] = []
    keep_env: list[str] = []
    deny_read: list[MaskSpec] = []
    lists: dict[str, list[str]] = {name: [] for name in NETWORK_LISTS}
    allow_local = False
    tls_terminate = False
    credentials: list[CredentialSpec] = []
    presets: list[str] = []
    for entry in entries:
        if entry.field == "writable_roots":
            roots.append(resolve_setting_path(entry.value, project))
        elif entry.field == "masked_paths":
            masks.append(resolve_setting_path(entry.value, project))
        elif entry.field == "keep_env":
            keep_env.append(entry.value)
        elif entry.field.startswith("network.") and entry.field[8:] in lists:
            lists[entry.field[8:]].append(entry.value)
        elif entry.field == "network.allowLocalAddresses":
            allow_local = entry.value == "true"
        elif entry.field == "network.tlsTerminate":
            tls_terminate = entry.value == "true"
        elif entry.credential is not None:
            origin = f"sandbox.credentials in {entry.scope.value} settings {entry.path}"
            credentials.append(replace(entry.credential, origin=origin))
        elif entry.field == "credentials.presets":
            presets.append(entry.value)
        elif entry.field == "denyRead":
            origin = f"sandbox.denyRead in {entry.scope.value} settings {entry.path}"
            deny_read.append(MaskSpec(entry.value.strip(), origin))
        else:
            values[entry.field] = entry.value
    return SandboxPolicy(
        project=project,
        mode=SandboxMode(values.get("mode", SandboxMode.WORKSPACE_WRITE)),
        backend=BackendChoice(values.get("backend", BackendChoice.AUTO)),
        # allowedDomains given without a mode means limited.
        network=Network(
            values.get("network", Network.LIMITED if lists["allowedDomains"] else Network.OFF)
        ),
        domains=DomainPolicy(
            allowed=tuple(dict.fromkeys(lists["allowedDomains"])),
            denied=tuple(dict.fromkeys(lists["deniedDomains"])),
            read_only=tuple(dict.fromkeys(lists["readOnlyDomains"])),
            allow_local=allow_local,
        ),
        writable_roots=tuple(dict.fromkeys(roots)),
        masked_paths=tuple(dict.fromkeys(masks)),
        keep_env=tuple(dict.fromkeys(keep_env)),
        deny_read=tuple(deny_read),
        credentials=expand(credentials, presets),
        tls_terminate=tls_terminate,
        entries=tuple(entries),
    )


def with_deny_read(policy: SandboxPolicy, specs: list[MaskSpec]) -> SandboxPolicy:
    """``policy`` also masking ``specs`` (the front end's deny rules on paths)."""
    return replace(policy, deny_read=tuple(dict.fromkeys([*policy.deny_read, *specs])))


def load_sandbox_policy(project: Path, settings: Settings) -> SandboxPolicy:
    """The policy of ``project``: every entry, except what an untrusted file would widen."""
    return load_policy_with_ignored(project, settings)[0]


def load_policy_with_ignored(
    project: Path, settings: Settings
) -> tuple[SandboxPolicy, list[Widening]]:
    """The policy in effect, and the widening entries of untrusted files that were ignored
    (``settings``: the session's, as its workspace read them)."""
    kept, ignored = split_untrusted_widening(sandbox_entries(settings))
    return policy_from_entries(project, kept), ignored


# How much each value opens up; a later entry with a higher rank than what is in effect
# before it widens the sandbox. Backends rank by the guarantees they give.
_MODE_RANK = {"read-only": 0, "workspace-write": 1, "off": 2}
_NETWORK_RANK = {"off": 0, "limited": 1, "on": 2}
_BACKEND_RANK = {"auto": 0, "bubblewrap": 0, "landlock": 1, "none": 2}
_RANKS = {"mode": _MODE_RANK, "network": _NETWORK_RANK, "backend": _BACKEND_RANK}
_DEFAULTS = {"mode": "workspace-write", "network": "off", "backend": "auto"}


@dataclass(frozen=True)
class Widening:
    entry: SandboxEntry
    reason: str

    def describe(self) -> str:
        return f"{self.entry.describe()}: {self.reason}"


def widening_entries(entries: list[SandboxEntry]) -> list[Widening]:
    """The entries that make the sandbox weaker than what was in effect before them.

    Every writable root and every ``keep_env`` name widens; ``mode``, ``network`` and
    ``backend`` widen when they rank above the value in effect at that point (the default,
    or an earlier file's value). Masked paths and denyRead only restrict and never appear here.
    """
    return _walk(entries, drop_untrusted=False)[1]


def split_untrusted_widening(
    entries: list[SandboxEntry],
) -> tuple[list[SandboxEntry], list[Widening]]:
    """Drop the widening entries of untrusted files (restricting ones always apply).

    Widening is judged against what is in effect once earlier ignored entries are gone,
    so a trusted file's later value is compared with the right baseline.
    """
    return _walk(entries, drop_untrusted=True)


def _walk(
    entries: list[SandboxEntry], *, drop_untrusted: bool
) -> tuple[list[SandboxEntry], list[Widening]]:
    current = dict(_DEFAULTS)
    kept: list[SandboxEntry] = []
    widening: list[Widening] = []
    for entry in entries:
        found: Widening | None = None
        ranks = _RANKS.get(entry.field)
        if entry.field == "writable_roots":
            found = Widening(entry, "adds a writable root outside the project")
        elif entry.field == "keep_env":
            found = Widening(entry, "passes a secret-looking environment variable to commands")
        elif entry.field == "network.allowedDomains":
            found = Widening(entry, f"lets commands reach {entry.value}")
        elif entry.field == "network.allowLocalAddresses" and entry.value == "true":
            found = Widening(entry, "lets commands reach local and private addresses")
        elif entry.field == "credentials.presets":
            found = Widening(entry, f"sends the {entry.value!r} credentials' real values")
        elif (spec := entry.credential) is not None:
            if spec.mode == "mask" and spec.inject_hosts:
                found = Widening(
                    entry,
                    f"sends {spec.source}'s real value to " + ", ".join(spec.inject_hosts),
                )
        elif ranks is not None and ranks[entry.value] > ranks[current[entry.field]]:
            found = Widening(entry, f"weakens sandbox.{entry.field} from {current[entry.field]!r}")
        if found is not None:
            widening.append(found)
            if drop_untrusted and not grants_apply(entry.scope, entry.trusted):
                continue
        if ranks is not None:
            current[entry.field] = entry.value
        kept.append(entry)
    if drop_untrusted:
        widening = [w for w in widening if not grants_apply(w.entry.scope, w.entry.trusted)]
    return kept, widening
