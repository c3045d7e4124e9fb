"""docs/configuration.md documents every settings key the code reads, with the code's default.

The keys come from the code itself: the pydantic models that validate each section (found by
class name wherever they live, so a module move does not break this test) and every
top-level key a module reads from the settings files (`sources("KEY")`, `section("KEY")`,
`granting_sources(settings, "KEY")`). A key the code reads that the page does not list, a
key the page lists that the model does not have, or a default that differs fails here.
"""

from __future__ import annotations

import importlib
import json
import re
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "codingcode"
PAGE = ROOT / "docs" / "configuration.md"

#: Each documented prefix and the model(s) whose fields it lists (class names, found in src).
SECTIONS: dict[str, tuple[str, ...]] = {
    "permissions": ("PermissionsSettings",),
    "": ("RuleObject", "ActionRuleObject"),  # the rule object's fields, listed bare
    "hooks.EVENT[]": ("HookMatcherSpec",),
    "hooks.EVENT[].hooks[]": ("CommandHookSpec",),
    "sandbox": ("SandboxSettings",),
    "sandbox.network": ("NetworkSettings",),
    "sandbox.credentials": ("CredentialsSettings",),
    "credential": ("CredentialFileSetting", "CredentialEnvSetting"),
    "model_client": ("ModelClientSettings",),
    "checkpoints": ("CheckpointSettings",),
    "background": ("BackgroundSettings",),
    "code_search": ("CodeSearchSettings",),
    "web.fetch": ("FetchSettings",),
    "web.search": ("SearchSettings",),
    "mcpServers.NAME": ("StdioEntry", "HttpEntry"),
    "oauth": ("OAuthEntry",),
}


#: Keys whose model says "absent" (None: the file did not set it) while the default in
#: effect lives elsewhere; the page documents the default in effect, checked here against
#: the code that applies it.
def effective_defaults() -> dict[str, Any]:
    policy = find_class("SandboxPolicy")
    domains = find_class("DomainPolicy")()
    fields = policy.__dataclass_fields__
    return {
        "sandbox.mode": fields["mode"].default,
        "sandbox.backend": fields["backend"].default,
        "sandbox.network": fields["network"].default,
        "sandbox.network.mode": fields["network"].default,
        "sandbox.network.allowLocalAddresses": domains.allow_local,
        "sandbox.network.tlsTerminate": fields["tls_terminate"].default,
    }


def find_class(name: str) -> Any:
    pattern = re.compile(rf"^class {name}\b", re.M)
    hits = [p for p in SRC.rglob("*.py") if pattern.search(p.read_text())]
    assert len(hits) == 1, f"class {name} is defined in {len(hits)} modules: {hits}"
    module = ".".join(hits[0].relative_to(SRC.parent).with_suffix("").parts)
    return getattr(importlib.import_module(module), name)


def documented() -> dict[str, str]:
    """key -> its default cell, from every table row of the page that starts with a key."""
    rows: dict[str, str] = {}
    for line in PAGE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and re.fullmatch(r"`[^`]+`", cells[0]):
            rows[cells[0].strip("`")] = cells[2]
    return rows


def read_keys() -> set[str]:
    """Every top-level settings key a module of src reads."""
    keys: set[str] = set()
    for path in SRC.rglob("*.py"):
        text = path.read_text()
        keys |= set(re.findall(r"\bsources\(\s*\"(\w+)\"", text))
        keys |= set(re.findall(r"granting_sources\(\s*\w+,\s*\"(\w+)\"", text))
        keys |= set(re.findall(r"\.section\(\"(\w+)\"\)", text))
        keys |= set(re.findall(r"\.merged\(\s*\"(\w+)\"", text))
        keys |= set(re.findall(r"^SETTINGS_KEY = \"(\w+)\"", text, re.M))
    return keys


def as_documented(value: Any) -> str:
    if isinstance(value, Enum):
        value = value.value
    return "unset" if value is None else f"`{json.dumps(value)}`"


def same(cell: str, value: Any) -> bool:
    if cell == "unset" or value is None:
        return cell == as_documented(value)
    try:
        written = json.loads(cell.strip("`"))
    except ValueError:
        return False
    return bool(written == (value.value if isinstance(value, Enum) else value))


def model_fields() -> dict[str, tuple[str, Any]]:
    """documented key -> (model name, default), ``...`` for a required field."""
    out: dict[str, tuple[str, Any]] = {}
    for prefix, names in SECTIONS.items():
        for name in names:
            model: type[BaseModel] = find_class(name)
            for field_name, info in model.model_fields.items():
                key = f"{prefix}.{info.alias or field_name}" if prefix else field_name
                default = ... if info.is_required() else info.get_default(call_default_factory=True)
                out.setdefault(key, (name, default))  # the first model (stdio) gives the default
    return out


def test_every_key_read_is_documented() -> None:
    rows = documented()
    missing = [
        k for k in sorted(read_keys()) if not any(r == k or r.startswith(k + ".") for r in rows)
    ]
    assert not missing, f"settings keys the code reads but docs/configuration.md lacks: {missing}"


def test_every_model_field_is_documented_with_its_default() -> None:
    rows = documented()
    effective = effective_defaults()
    problems = []
    for key, (model, default) in sorted(model_fields().items()):
        if key not in rows:
            problems.append(f"{key} ({model}) is not documented")
            continue
        cell = rows[key]
        if key in effective:
            default = effective[key]
        if default is ...:
            if not cell.startswith("("):
                problems.append(f"{key} is required, documented default {cell}")
        elif not same(cell, default):
            problems.append(f"{key}: documented {cell}, the code says {as_documented(default)}")
    assert not problems, problems


def test_no_documented_key_the_models_lack() -> None:
    fields = model_fields()
    stale = []
    for key in documented():
        prefix = max((p for p in SECTIONS if p and key.startswith(p + ".")), key=len, default=None)
        if prefix is not None and key.count(".") == prefix.count(".") + 1 and key not in fields:
            stale.append(key)
    assert not stale, f"documented keys no settings model has: {stale}"


def test_hook_events_are_documented() -> None:
    events = find_class("HooksSettings").model_fields
    row = next(
        line for line in PAGE.read_text().splitlines() if line.startswith("| `hooks.EVENT` |")
    )
    assert all(f"`{event}`" in row for event in events), sorted(events)


@pytest.mark.parametrize(
    ("key", "constant"),
    [
        ("compactThreshold", "DEFAULT_COMPACT_THRESHOLD"),
        ("toolOutputLimit", "DEFAULT_TOOL_OUTPUT_LIMIT"),
    ],
)
def test_agent_defaults(key: str, constant: str) -> None:
    module = find_class("AgentSettings").__module__
    assert same(documented()[key], getattr(importlib.import_module(module), constant))


#: Variables the code sets or uses for itself, not settings a user gives.
INTERNAL_ENV = {"CODINGCODE_PROBE_API_KEY"}  # `sandbox status` plants it to see it dropped


def test_every_environment_variable_is_documented() -> None:
    names: set[str] = set()
    for path in SRC.rglob("*.py"):
        names |= set(re.findall(r"\"(CODINGCODE_[A-Z0-9_]+)\"", path.read_text()))
    text = PAGE.read_text()
    missing = sorted(n for n in names - INTERNAL_ENV if f"`{n}`" not in text)
    assert not missing, f"docs/configuration.md lacks the environment variables {missing}"
