"""The secrets every command's sandbox masks, by class: the one table (issue 26).

Five classes, each a list of patterns (see :mod:`codingcode.sandbox.masks` for how a pattern
resolves):

- ``project``: the project's ``.env`` files;
- ``system``: the machine's secrets under ``/etc`` — password hashes, SSH host keys, TLS
  private keys, Kerberos keytabs, Wi-Fi passwords, systemd credentials, sudoers — and,
  by rule, **every file or directory under /etc that "other" cannot read**: a regular file
  without the o+r bit, or a directory without o+x (masked whole, not entered). Only root
  (or a group) reads those, so nothing an unprivileged program needs is among them; a
  command running as root in the sandbox must not see them either. The rule is checked by
  a bounded scan of ``/etc`` (:class:`RootOnlyScan`: at most :data:`MAX_ETC_ENTRIES`
  entries, symlinks not followed) whose result is kept while no directory's mtime changed
  and for at most :data:`ETC_RESCAN_S` seconds (a ``chmod`` of an existing file changes no
  directory: it is seen within that time);
- ``user``: the user's credential stores in HOME (cloud, package registries, databases,
  password managers, keyrings);
- ``agents``: other coding agents' credentials (Claude Code, Codex, Gemini CLI, ...);
- ``codingcode``: codingcode's own state directory, whole (MCP OAuth tokens, the audit
  log, trust records, sessions, checkpoints). codingcode itself reads and writes it outside
  the sandbox; a command never needs it (a spilled output is read with ``read_file``).

``sandbox.denyRead`` adds patterns to these; the user's deny rules on read paths too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from codingcode.sandbox.etc_scan import ETC as ETC
from codingcode.sandbox.etc_scan import ETC_ALWAYS as ETC_ALWAYS
from codingcode.sandbox.etc_scan import ETC_RESCAN_S as ETC_RESCAN_S
from codingcode.sandbox.etc_scan import MAX_ETC_ENTRIES as MAX_ETC_ENTRIES
from codingcode.sandbox.etc_scan import RootOnlyScan as RootOnlyScan
from codingcode.sandbox.etc_scan import is_root_only as is_root_only
from codingcode.sandbox.masks import ENV_TEMPLATES, MaskSpec, ReadGuard, glob_regex

#: The pattern that stands for "the root-only files under /etc" in the table.
ROOT_ONLY = "/etc (root-only)"
#: The pattern that stands for codingcode's own state directory in the table.
STATE_DIR = "codingcode state directory"


@dataclass(frozen=True)
class SecretClass:
    key: str
    title: str
    specs: tuple[MaskSpec, ...]


def _s(pattern: str, what: str, cls: str, **kw: object) -> MaskSpec:
    return MaskSpec(pattern, what=what, secret_class=cls, **kw)  # type: ignore[arg-type]


_PROJECT = (
    _s("**/.env", "the project's .env files", "project", files_only=True),
    _s(
        "**/.env.*",
        "the project's .env.* files (templates such as .env.example stay readable)",
        "project",
        files_only=True,
        keep=ENV_TEMPLATES,
    ),
    _s("**/.env~", "editors' backups of .env files", "project", files_only=True),
    _s("**/.envrc", "direnv's .envrc files (they export secrets)", "project", files_only=True),
    _s(
        "**/*.env",
        "NAME.env files (docker --env-file; example.env and the like stay readable)",
        "project",
        files_only=True,
        keep=ENV_TEMPLATES | {"example.env", "sample.env", "template.env"},
    ),
)

_SYSTEM = (
    _s("/etc/*shadow*", "password hashes and their backups", "system"),
    _s("/etc/ssh/ssh_host_*key*", "SSH host private keys", "system"),
    _s("/etc/ssl/private", "TLS private keys", "system"),
    _s("/etc/pki/tls/private", "TLS private keys (Red Hat layout)", "system"),
    _s("/etc/letsencrypt/live", "Let's Encrypt certificates' private keys", "system"),
    _s("/etc/letsencrypt/archive", "Let's Encrypt private keys (all versions)", "system"),
    _s("/etc/letsencrypt/accounts", "Let's Encrypt account keys", "system"),
    _s(
        "/etc/*.keytab", "Kerberos keytabs (and, by the scan below, any *.keytab in /etc)", "system"
    ),
    _s("/etc/NetworkManager/system-connections", "Wi-Fi and VPN passwords", "system"),
    _s("/etc/wpa_supplicant", "Wi-Fi passwords", "system"),
    _s("/etc/credstore*", "systemd service credentials", "system"),
    _s("/etc/sudoers*", "sudo's configuration", "system"),
    _s(
        ROOT_ONLY,
        "every other file under /etc that only root (or a group) may read, and every "
        "*.keytab in its sub-directories",
        "system",
    ),
)

_USER = (
    _s("~/.ssh", "SSH keys", "user"),
    _s("~/.aws", "AWS credentials", "user"),
    _s("~/.azure", "Azure credentials", "user"),
    _s("~/.config/gcloud", "Google Cloud credentials", "user"),
    _s("~/.kube", "Kubernetes credentials", "user"),
    _s("~/.docker/config.json", "Docker registry credentials", "user"),
    _s("~/.netrc", "netrc passwords", "user"),
    _s("~/.git-credentials", "git's stored credentials", "user"),
    _s("~/.config/gh", "GitHub CLI tokens", "user"),
    _s("~/.config/hub", "hub (GitHub) tokens", "user"),
    _s("~/.npmrc", "npm tokens", "user"),
    _s("~/.pypirc", "PyPI tokens", "user"),
    _s("~/.gem/credentials", "RubyGems API key", "user"),
    _s("~/.cargo/credentials*", "crates.io token", "user"),
    _s("~/.m2/settings.xml", "Maven repository passwords", "user"),
    _s("~/.m2/settings-security.xml", "Maven master password", "user"),
    _s("~/.terraform.d/credentials.tfrc.json", "Terraform Cloud tokens", "user"),
    _s("~/.config/rclone", "rclone remotes' credentials", "user"),
    _s("~/.s3cfg", "s3cmd credentials", "user"),
    _s("~/.pgpass", "PostgreSQL passwords", "user"),
    _s("~/.my.cnf", "MySQL passwords", "user"),
    _s("~/.mylogin.cnf", "MySQL login paths", "user"),
    _s("~/.vault-token", "HashiCorp Vault token", "user"),
    _s("~/.config/op", "1Password CLI", "user"),
    _s("~/.gnupg", "GnuPG keys", "user"),
    _s("~/.password-store", "pass password store", "user"),
    _s("~/.local/share/keyrings", "GNOME keyrings", "user"),
    _s("~/.local/share/kwalletd", "KDE wallets", "user"),
)

_AGENTS = (
    _s("~/.claude/.credentials.json", "Claude Code's login", "agents"),
    _s("~/.codex/auth.json", "Codex's login", "agents"),
    _s("~/.gemini/oauth_creds.json", "Gemini CLI's login", "agents"),
    _s("~/.gemini/mcp-oauth-tokens.json", "Gemini CLI's MCP tokens", "agents"),
    _s("~/.config/github-copilot/hosts.json", "GitHub Copilot's tokens", "agents"),
    _s("~/.config/github-copilot/apps.json", "GitHub Copilot's tokens", "agents"),
    _s("~/.local/share/opencode/auth.json", "opencode's provider keys", "agents"),
)

_CODINGCODE = (
    _s(
        STATE_DIR,
        "codingcode's own state: MCP OAuth tokens, audit log, trust records, sessions, checkpoints",
        "codingcode",
    ),
)

SECRET_CLASSES: tuple[SecretClass, ...] = (
    SecretClass("project", "the project's environment files", _PROJECT),
    SecretClass("system", "the system's secrets", _SYSTEM),
    SecretClass("user", "the user's credential stores", _USER),
    SecretClass("agents", "other agents' credentials", _AGENTS),
    SecretClass("codingcode", "codingcode's own state directory, whole", _CODINGCODE),
)

#: Every class's patterns (the two placeholders resolve at run time: see ``resolve_specs``).
SECRET_SPECS: tuple[MaskSpec, ...] = tuple(s for c in SECRET_CLASSES for s in c.specs)


def _with(spec: MaskSpec, pattern: str, **kw: object) -> MaskSpec:
    return replace(spec, pattern=pattern, **kw)  # type: ignore[arg-type]


def resolve_specs(specs: Sequence[MaskSpec], state_dir: Path | None) -> list[MaskSpec]:
    """The table with its placeholders made real: the state directory's path (``None``:
    none to mask), the root-only /etc files as one ``scan`` spec."""
    out: list[MaskSpec] = []
    for spec in specs:
        if spec.pattern == STATE_DIR:
            if state_dir is not None:
                out.append(_with(spec, str(state_dir)))
        elif spec.pattern == ROOT_ONLY:
            out.append(_with(spec, ETC, scan="root-only"))
        else:
            out.append(spec)
    return out


#: The classes' patterns that need no run-time path: all but the state directory's.
DEFAULT_MASKS: tuple[MaskSpec, ...] = tuple(resolve_specs(SECRET_SPECS, None))


def default_masks(state_dir: Path | None = None) -> list[MaskSpec]:
    """Every class's patterns, codingcode's state directory included (``state_dir``, or
    where :func:`state_dir_mask` finds it)."""
    return resolve_specs(SECRET_SPECS, state_dir if state_dir is not None else state_dir_mask())


def state_dir_mask() -> Path | None:
    """codingcode's state directory as a command's sandbox masks it (absolute, symlinks
    resolved), or None when there is none to mask (it does not exist yet)."""
    from codingcode.dirs import user_state_dir

    path = user_state_dir()
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError):
        return None
    return real if real.is_absolute() else None


# -- which named paths are masked (for approval: read-only auto-allow never covers them) --
#: Under codingcode's state directory, what the file tools read unasked: spilled outputs
#: the model is told to read with ``read_file`` (they are the call's own output).
STATE_DIR_TOOL_READABLE = ("mcp-results/**", "projects/*/*/outputs/**")


class SecretMatcher:
    """Says whether a path is one the sandbox masks (``match``), from the same patterns:
    matched as written and with its symlinks resolved, a pattern naming a directory covering
    everything beneath it, the root-only rule checked on the path and its parents under
    /etc. ``for_tools``: spilled outputs under the state directory do not count."""

    def __init__(
        self,
        specs: Sequence[MaskSpec],
        project: Path,
        homes: Sequence[Path],
        *,
        state_dir: Path | None = None,
        for_tools: bool = False,
    ) -> None:
        self._specs, self._project, self._homes = specs, project, homes
        self.scans = [s for s in specs if s.scan == "root-only"]
        self.readable: list[re.Pattern[str]] = []
        if for_tools and state_dir is not None:
            base = str(state_dir).rstrip("/")
            self.readable = [glob_regex(f"{base}/{g}") for g in STATE_DIR_TOOL_READABLE]

    # The patterns are compiled when the first path is matched: many sessions and every
    # `codingcode check` of a command naming no path match none.
    @cached_property
    def guard(self) -> ReadGuard:
        return ReadGuard([s for s in self._specs if not s.scan], self._project, self._homes)

    @cached_property
    def any(self) -> re.Pattern[str]:
        """One pass says whether any pattern matches (most paths match none); each pattern's
        own regex is compiled when one does (``guard._compiled``)."""
        return re.compile("|".join(f"(?:{text})" for text, _ in self.guard.patterns) or "(?!)")

    def match(self, path: str, spellings: Sequence[str] = ()) -> MaskSpec | None:
        """``spellings``: the path as written and symlink-resolved, when the caller has them
        (approval resolves each path once per decision); else resolved here."""
        if "\0" in path:
            return None  # names no file (the tool or the shell refuses it)
        text = path if spellings else os.path.normpath(os.path.abspath(path))
        if self.readable and any(r.match(text) for r in self.readable):
            return None
        forms = list(dict.fromkeys(spellings or [text, os.path.realpath(text)]))
        for spelling in forms:
            if not self.any.match(spelling):
                continue
            for regex, spec in self.guard._compiled:
                if regex.match(spelling) and not (
                    spec.keep and os.path.basename(spelling) in spec.keep
                ):
                    return spec
        for spec in self.scans:
            root = spec.pattern.rstrip("/") + "/"
            for spelling in forms:
                if spelling.startswith(root) and _root_only_on_the_way(spelling, root):
                    return spec
        return None


def _root_only_on_the_way(path: str, root: str) -> bool:
    """``path`` (under ``root``) or one of its parents below ``root`` is root-only."""
    if ETC_ALWAYS.match(os.path.basename(path)):
        return True
    current = path
    while current.startswith(root):
        try:
            if is_root_only(os.lstat(current)):
                return True
        except OSError:
            return False
        current = os.path.dirname(current)
    return False
