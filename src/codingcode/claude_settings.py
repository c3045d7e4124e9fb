"""Claude Code's settings files read as they are, beside codingcode's own.

``~/.claude/settings.json``, ``.claude/settings.json`` and ``.claude/settings.local.json``
are read at the same levels as ours (user, project, local). What codingcode acts on from
them is their ``permissions`` (allow/ask/deny rules in Claude Code's syntax and the
``defaultMode``), their ``hooks`` and ``allowedHttpHookUrls``; every other key Claude Code documents is recognised
and shown by ``codingcode config`` as not used here; a key neither knows is a warning that
names the closest valid key.

This module turns such a file's JSON into the part codingcode reads (:func:`normalize`),
and keeps the list of the keys each dialect knows (for the warnings of both).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

#: The top-level keys of codingcode's own settings files.
CODINGCODE_KEYS = frozenset(
    {
        "$schema",
        "permissions",
        "hooks",
        "sandbox",
        "approvals",
        "web",
        "audit",
        "model",
        "modelAliases",
        "model_client",
        "appendSystemPrompt",
        "contextWindow",
        "compactThreshold",
        "toolOutputLimit",
        "checkpoints",
        "code_search",
        "background",
        "mcpServers",
    }
)

#: Keys of Claude Code's settings that codingcode reads from a Claude Code file.
CLAUDE_KEYS_USED = frozenset({"permissions", "hooks", "$schema", "allowedHttpHookUrls"})

#: Every other top-level key Claude Code's settings reference documents: recognised, not
#: used (``codingcode config`` lists them).
CLAUDE_KEYS_KNOWN = frozenset(
    {
        "apiKeyHelper",
        "attribution",
        "autoUpdates",
        "awsAuthRefresh",
        "awsCredentialExport",
        "alwaysThinkingEnabled",
        "allowManagedHooksOnly",
        "allowManagedPermissionRulesOnly",
        "allowedMcpServers",
        "cleanupPeriodDays",
        "companyAnnouncements",
        "deniedMcpServers",
        "disableAllHooks",
        "enableAllProjectMcpServers",
        "enabledMcpjsonServers",
        "disabledMcpjsonServers",
        "enabledPlugins",
        "env",
        "extraKnownMarketplaces",
        "fileSuggestion",
        "forceLoginMethod",
        "forceLoginOrgUUID",
        "includeCoAuthoredBy",
        "language",
        "model",
        "otelHeadersHelper",
        "outputStyle",
        "plansDirectory",
        "respectGitignore",
        "sandbox",
        "showTurnDuration",
        "spinnerTipsEnabled",
        "statusLine",
        "strictKnownMarketplaces",
        "subagentStatusLine",
        "teammateMode",
        "theme",
        "verbose",
        "maxThinkingTokens",
        "feedbackSurveyState",
        "skipWebFetchPreflight",
        # Read from `.mcp.json` and `~/.claude.json` by Claude Code; recognised here.
        "mcpServers",
        "httpHookAllowedEnvVars",
    }
)

#: Claude Code's ``permissions`` keys we read, and its ``defaultMode`` values in our terms.
_PERMISSION_LISTS = ("allow", "ask", "deny")
CLAUDE_MODES: dict[str, str] = {
    "default": "default",
    "acceptEdits": "acceptEdits",
    "plan": "plan",
    "bypassPermissions": "bypass",
}


def closest_key(key: str, known: frozenset[str]) -> str | None:
    """The valid key ``key`` was most likely meant to be (``permisions`` → ``permissions``)."""
    found = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)
    if not found:
        lowered = {k.lower(): k for k in known}
        return lowered.get(key.lower())
    return found[0]


def unknown_key_note(path: object, key: str, known: frozenset[str]) -> str:
    near = closest_key(key, known)
    hint = f" (did you mean {near!r}?)" if near else ""
    return f"codingcode: {path}: unknown settings key {key!r}{hint}; it is ignored."


def unknown_keys_note(path: object, keys: list[str], known: frozenset[str]) -> list[str]:
    """One line for a file's unknown keys, however many (each with the closest valid key
    when there is one)."""
    if len(keys) <= 1:
        return [unknown_key_note(path, k, known) for k in keys]
    shown = []
    for key in keys[:8]:
        near = closest_key(key, known)
        shown.append(f"{key!r} (did you mean {near!r}?)" if near else repr(key))
    more = f" and {len(keys) - 8} more" if len(keys) > 8 else ""
    return [
        f"codingcode: {path}: unknown settings keys {', '.join(shown)}{more}; they are ignored."
    ]


@dataclass
class Normalized:
    """A Claude Code file's JSON as codingcode reads it."""

    data: dict[str, Any]
    #: Keys Claude Code knows that codingcode does not act on (``codingcode config``).
    unused: list[str] = field(default_factory=list)
    #: One line each: an unknown key, a value codingcode cannot honour.
    notes: list[str] = field(default_factory=list)


def normalize(raw: dict[str, Any], path: object) -> Normalized:
    """The ``permissions`` and ``hooks`` of a Claude Code settings file, in the form our
    readers take (rules stay as written: the rule reader understands Claude Code's
    syntax), the other keys sorted into unused and unknown."""
    out = Normalized({})
    unknown: list[str] = []
    for key, value in raw.items():
        if key == "permissions":
            out.data["permissions"] = _permissions(value, path, out)
        elif key in CLAUDE_KEYS_USED:
            out.data[key] = value
        elif key in CLAUDE_KEYS_KNOWN:
            out.unused.append(key)
        else:
            unknown.append(key)
    out.notes += unknown_keys_note(path, unknown, CLAUDE_KEYS_USED | CLAUDE_KEYS_KNOWN)
    return out


def _permissions(value: Any, path: object, out: Normalized) -> Any:
    if not isinstance(value, dict):
        return value  # the permissions reader names the problem
    kept: dict[str, Any] = {}
    for key, entry in value.items():
        if key in _PERMISSION_LISTS:
            kept[key] = entry
        elif key == "defaultMode":
            mode = CLAUDE_MODES.get(entry) if isinstance(entry, str) else None
            if mode is None:
                out.notes.append(
                    f"codingcode: {path}: permissions.defaultMode {entry!r} has no equivalent "
                    f"here (one of {', '.join(CLAUDE_MODES)}); it is ignored."
                )
            else:
                kept["defaultMode"] = mode
        else:
            out.unused.append(f"permissions.{key}")
    return kept
