"""Writing rules to settings files: ``rules add`` / ``rules remove``, always / never."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codingcode.approval import presets
from codingcode.approval.rules.matching import _compile
from codingcode.approval.rules.syntax import Rule, RuleAction, check_rule, rule_texts
from codingcode.config import Scope, SettingsError

if TYPE_CHECKING:
    from codingcode.trust import TrustStore


def local_settings_path(project: Path) -> Path:
    return project / ".codingcode" / "settings.local.json"


def settings_path_for(scope: Scope, project: Path) -> Path:
    from codingcode.config import settings_paths

    return dict(settings_paths(project))[scope]


def read_settings_object(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"Settings file {path} is not valid JSON: {exc}.") from None
    if not isinstance(data, dict):
        raise SettingsError(f"Settings file {path} must hold a JSON object.")
    return data


def write_settings_object(
    path: Path,
    data: dict[str, Any],
    *,
    project: Path | None = None,
    trust: TrustStore | None = None,
) -> None:
    """Write a settings file atomically. With ``project`` and ``trust`` (the caller's trust
    records): a project file the user trusted stays trusted."""
    from codingcode.atomic import atomic_write_bytes

    store = trust if project is not None else None
    was_trusted = True
    if store is not None and project is not None and path.exists():
        was_trusted = store.is_trusted(project, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
    if store is not None and project is not None:
        # What the user's own command or answer wrote is theirs (issue 7).
        store.refresh_file(project, path, was_trusted=was_trusted)


def add_rule(
    path: Path,
    action: RuleAction,
    text: str,
    priority: int = 0,
    *,
    project: Path | None = None,
    trust: TrustStore | None = None,
) -> bool:
    """Append a rule to a settings file (atomically); False if it is already there. A rule
    in Claude Code's syntax is kept as written (the reader translates it); one in neither
    syntax raises RuleSyntaxError with the reason."""
    text = text.strip()
    for ours in rule_texts(text, path.parent.parent):
        check_rule(ours, action)
        _compile(Rule(ours, action, priority), 0, Path("/"))
    data = read_settings_object(path)
    perms = data.setdefault("permissions", {})
    if not isinstance(perms, dict):
        raise SettingsError(f"Invalid settings in {path}: permissions must be an object.")
    if priority:
        lst = perms.setdefault("rules", [])
        entry: Any = {"rule": text, "action": action, "priority": priority}
    else:
        lst = perms.setdefault(action, [])
        entry = text
    if entry in lst:
        return False
    lst.append(entry)
    write_settings_object(path, data, project=project, trust=trust)
    return True


def remove_rule(
    path: Path, text: str, *, project: Path | None = None, trust: TrustStore | None = None
) -> int:
    """Remove every entry with this rule text from a settings file; how many were removed."""
    data = read_settings_object(path)
    perms = data.get("permissions")
    if not isinstance(perms, dict):
        return 0
    removed = 0
    for key in ("allow", "ask", "deny", "rules"):
        lst = perms.get(key)
        if not isinstance(lst, list):
            continue
        keep = [
            e for e in lst if not ((e == text) or (isinstance(e, dict) and e.get("rule") == text))
        ]
        removed += len(lst) - len(keep)
        perms[key] = keep
    if removed:
        write_settings_object(path, data, project=project, trust=trust)
    return removed


def presets_match(text: str) -> presets.PresetRule | None:
    """The preset rule a user names by id (``R2``) or text (``sudo``), if any."""
    t = text.strip()
    for r in presets.PRESET_RULES:
        if t.upper() == r.id or t == r.text:
            return r
    return None
