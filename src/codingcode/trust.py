"""Workspace trust: what a project's files may grant, and when (DESIGN: Trust, contract).

A project directory may be a repository someone else wrote. Its files can always
*restrict* (deny and ask rules, a stricter mode); what they *grant or execute* (allow
rules, hooks, MCP servers, sandbox widening, sub-agent tool grants) applies only once the
user has trusted the project — and only for as long as those files are exactly what the
user trusted.

Trust is recorded per file, in the user's state directory (never in the project, which
cannot be allowed to vouch for itself): for each project (by its real path), the SHA-256
of every grant-bearing file at the moment the user trusted it. A file whose content
changes is untrusted again until the user trusts the change; the other files stay trusted.
When codingcode itself writes such a file for the user (an "always" answer saved to
``settings.local.json``), it re-records that file, so the user's own answer keeps working.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codingcode.atomic import atomic_write_bytes, flock_within
from codingcode.dirs import user_state_dir
from codingcode.errors import AgentError, ErrorKind

TRUST_FILE = "trust.json"
TRUST_ENV = "CODINGCODE_TRUST_ALL"  # "1": trust every project (for a user's own sandboxes/CI)


def grant_files(project: Path) -> list[Path]:
    """Every file of ``project`` that can grant permissions or run code, existing or not."""
    base = [
        project / ".codingcode" / "settings.json",
        project / ".codingcode" / "settings.local.json",
        project / ".mcp.json",
    ]
    # Claude Code's files, read beside ours: listed only when they exist (a project without
    # `.claude/` is not asked about it).
    claude = [
        p
        for p in (
            project / ".claude" / "settings.json",
            project / ".claude" / "settings.local.json",
        )
        if p.exists()
    ]
    agents: list[Path] = []
    for base_dir in (project / ".codingcode", project / ".claude"):
        agents_dir = base_dir / "agents"
        if agents_dir.is_dir():
            agents += sorted(p for p in agents_dir.rglob("*.md") if p.is_file())
    return [*base, *claude, *agents, *_instruction_files(project)]


def _instruction_files(project: Path) -> list[Path]:
    """A project's skills and custom commands (issue 17): instructions for the model that
    someone else may have written, loaded only while the user trusts them."""
    from codingcode.skill_files import skill_files

    found: list[Path] = []
    for base in (project / ".codingcode", project / ".claude"):
        found += skill_files(base / "skills")
        commands = base / "commands"
        if commands.is_dir():
            found += sorted(p for p in commands.rglob("*.md") if p.is_file())
    return found


def digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _file_digest(path: Path) -> str | None:
    try:
        return digest(path.read_bytes())
    except FileNotFoundError:
        return None
    except OSError:
        return "unreadable"


def project_key(project: Path) -> str:
    return os.path.realpath(project)


def _relative(project: Path, path: Path) -> str:
    try:
        return str(Path(os.path.realpath(path)).relative_to(project_key(project)))
    except ValueError:
        return str(path)


#: How long a change of the trust records waits for another process holding their lock.
LOCK_TIMEOUT_S = 10.0


class TrustStoreError(AgentError):
    """The trust records cannot be written (a read-only or full state directory)."""

    kind = ErrorKind.TOOL_FAILURE


@dataclass(frozen=True)
class FileTrust:
    """The trust state of one grant-bearing file."""

    path: Path
    relative: str
    exists: bool
    trusted: bool
    #: True when the file was trusted once but has changed since.
    changed: bool


class TrustStore:
    """The user's trust records, one JSON file under the state dir, safe across processes."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or user_state_dir() / TRUST_FILE

    # -- reading -------------------------------------------------------------------------
    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {"projects": {}}
        except (OSError, ValueError, RecursionError):
            # A damaged record trusts nothing: the safe reading of a file we cannot parse.
            return {"projects": {}}
        if not isinstance(data, dict) or not isinstance(data.get("projects"), dict):
            return {"projects": {}}
        return data

    def _record(self, project: Path) -> dict[str, str]:
        entry = self._read()["projects"].get(project_key(project), {})
        files = entry.get("files", {}) if isinstance(entry, dict) else {}
        return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}

    def file_trust(self, project: Path, path: Path, data: bytes | None = None) -> FileTrust:
        """Whether ``path`` (a grant-bearing file of ``project``) is trusted as it is now.

        ``data`` is the content the caller already read, so the check is of exactly what
        will be used (no window between checking and reading).
        """
        relative = _relative(project, path)
        current = digest(data) if data is not None else _file_digest(path)
        if current is None:
            return FileTrust(path, relative, exists=False, trusted=True, changed=False)
        if os.environ.get(TRUST_ENV) == "1":
            return FileTrust(path, relative, exists=True, trusted=True, changed=False)
        recorded = self._record(project).get(relative)
        return FileTrust(
            path,
            relative,
            exists=True,
            trusted=recorded == current,
            changed=recorded is not None and recorded != current,
        )

    def is_trusted(self, project: Path, path: Path, data: bytes | None = None) -> bool:
        return self.file_trust(project, path, data).trusted

    def status(self, project: Path) -> list[FileTrust]:
        return [self.file_trust(project, p) for p in grant_files(project)]

    def project_trusted(self, project: Path) -> bool:
        return all(f.trusted for f in self.status(project))

    # -- writing -------------------------------------------------------------------------
    def _cannot_write(self, exc: OSError) -> TrustStoreError:
        return TrustStoreError(
            f"cannot write the trust records in {self.path.parent} "
            f"({exc.strerror or type(exc).__name__}); nothing was changed. Make that directory "
            "writable, or point CODINGCODE_STATE_DIR at one that is."
        )

    def check_writable(self) -> None:
        """Raise :class:`TrustStoreError` unless the records can be written.

        For commands that change another file first (``rules add``): they check this before
        touching anything, so a read-only state directory leaves nothing half-written.
        """
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600))
            import tempfile

            fd, probe = tempfile.mkstemp(dir=self.path.parent, prefix=".probe.", suffix=".tmp")
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise self._cannot_write(exc) from None

    def _wait_for(self, lock: int) -> None:
        """Take the records' lock, waiting at most LOCK_TIMEOUT_S for another process (a
        poll: a hung holder costs a bounded wait and one clear error; Ctrl-C ends it)."""
        if not flock_within(lock, LOCK_TIMEOUT_S):
            raise TrustStoreError(
                f"the trust records ({self.path}) have been locked by another "
                f"codingcode process for over {LOCK_TIMEOUT_S:g} s; nothing was "
                "changed. If that process is stuck, stop it, then try again."
            )

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise self._cannot_write(exc) from None
        try:
            self._wait_for(lock)
            data = self._read()
            yield data
            try:
                atomic_write_bytes(
                    self.path, json.dumps(data, indent=2, sort_keys=True).encode(), mode=0o600
                )
            except OSError as exc:  # the old records stay as they were (atomic write)
                raise self._cannot_write(exc) from None
        finally:
            os.close(lock)

    def trust(self, project: Path) -> list[FileTrust]:
        """Record every grant-bearing file of ``project`` as trusted, as it is now."""
        files = {
            _relative(project, p): d
            for p in grant_files(project)
            if (d := _file_digest(p)) is not None
        }
        with self._locked() as data:
            data["projects"][project_key(project)] = {"files": files, "trusted_at": time.time()}
        return self.status(project)

    def revoke(self, project: Path) -> bool:
        with self._locked() as data:
            return data["projects"].pop(project_key(project), None) is not None

    def refresh_file(self, project: Path, path: Path, *, was_trusted: bool) -> None:
        """After codingcode wrote ``path`` for the user: keep it trusted if it was before.

        ``was_trusted`` is the file's state just before the write (a file that did not
        exist counts as trusted: everything in it now is the user's own answer).
        """
        if not was_trusted:
            return
        current = _file_digest(path)
        if current is None:
            return
        try:
            with self._locked() as data:
                entry = data["projects"].setdefault(project_key(project), {"files": {}})
                entry.setdefault("files", {})[_relative(project, path)] = current
        except TrustStoreError as exc:
            raise TrustStoreError(
                f"{path} was written, but its trust record was not: {exc.message} Until "
                f"`codingcode trust --project {project}` succeeds, what it grants is ignored."
            ) from None


# -- what a project would grant ------------------------------------------------------------
_LAX_MODES = {"acceptEdits", "bypass"}


def _settings_grants(data: dict[str, Any]) -> list[str]:
    grants: list[str] = []
    permissions = data.get("permissions")
    if isinstance(permissions, dict):
        for rule in permissions.get("allow", []) or []:
            grants.append(f"allow rule {json.dumps(rule) if not isinstance(rule, str) else rule}")
        mode = permissions.get("defaultMode")
        if mode in _LAX_MODES:
            grants.append(f"permission mode {mode}")
    if data.get("hooks"):
        commands = sorted(set(_find_commands(data["hooks"])))
        grants += [f"hook command `{c}`" for c in commands] or ["hooks"]
    sandbox = data.get("sandbox")
    if isinstance(sandbox, dict):
        if sandbox.get("mode") == "off":
            grants.append("sandbox off")
        if sandbox.get("backend") in ("landlock", "none"):
            grants.append(f"sandbox backend {sandbox['backend']} (fewer guarantees)")
        if sandbox.get("network") == "allow":
            grants.append("sandbox network allowed")
        for root in sandbox.get("writable_roots", []) or []:
            grants.append(f"sandbox writable root {root}")
        for name in sandbox.get("keep_env", []) or []:
            grants.append(f"sandbox passes the environment variable {name} to commands")
    grants += _mcp_grants(data.get("mcpServers"))
    return grants


def _find_commands(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "command" and isinstance(value, str):
                yield value
            else:
                yield from _find_commands(value)
    elif isinstance(node, list):
        for item in node:
            yield from _find_commands(item)


def _mcp_grants(servers: Any) -> list[str]:
    if not isinstance(servers, dict):
        return []
    grants = []
    for name, spec in servers.items():
        if isinstance(spec, dict) and spec.get("command"):
            argv = " ".join([str(spec["command"]), *map(str, spec.get("args", []) or [])])
            grants.append(f"MCP server {name!r} runs `{argv}`")
        elif isinstance(spec, dict) and spec.get("url"):
            grants.append(f"MCP server {name!r} at {spec['url']}")
        else:
            grants.append(f"MCP server {name!r}")
    return grants


def _agent_grants(path: Path, text: str) -> list[str]:
    if not text.startswith("---"):
        return []
    front = text.split("---", 2)[1] if text.count("---") >= 2 else ""
    import yaml

    try:
        meta = yaml.safe_load(front) or {}
    except yaml.YAMLError:
        return [f"sub-agent profile {path.stem} (unparsable front matter)"]
    tools = meta.get("tools") if isinstance(meta, dict) else None
    if tools:
        listed = ", ".join(map(str, tools)) if isinstance(tools, list) else str(tools)
        return [f"sub-agent {meta.get('name', path.stem)!r} may use {listed}"]
    return []


def describe_grants(path: Path) -> list[str]:
    """What one grant-bearing file would enable, in words a user can review."""
    try:
        raw = path.read_bytes()
    except OSError:
        return []
    if path.name == "SKILL.md":
        return [f"skill {path.parent.name!r} (instructions the model may load)"]
    if path.suffix == ".md" and path.parent.name != "agents":
        return [f"slash command /{path.stem} (a prompt, with any ! commands in it)"]
    if path.suffix == ".md":
        return _agent_grants(path, raw.decode("utf-8", errors="replace"))
    try:
        data = json.loads(raw)
        return _settings_grants(data) if isinstance(data, dict) else []
    except ValueError:
        return ["(not valid JSON: nothing from it applies until it is fixed)"]
    except RecursionError:
        return ["(nested too deeply to read: nothing from it applies until it is fixed)"]
