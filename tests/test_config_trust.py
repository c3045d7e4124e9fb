"""Trust filtering is written once (issue 19): every granting settings section's reader asks
``config.grants_apply``. For each section of ``GRANTING_SECTIONS``, the same file grants when
it is trusted, and grants nothing — while its restrictions stand — when it is not, or when
the session distrusts the project (its workspace marks the project's files untrusted)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codingcode.config import (
    GRANTING_SECTIONS,
    Scope,
    Settings,
    SettingsFile,
    granting_sources,
    grants_apply,
)

#: A section's value that grants something and restricts something.
VALUES: dict[str, Any] = {
    "permissions": {
        "allow": ["execute_command(make *)"],
        "deny": ["read_file(secret/**)"],
        "defaultMode": "bypass",
    },
    "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"command": "true"}]}]},
    "approvals": {"autoAllowSandboxed": True},
    "sandbox": {"writable_roots": ["/opt/cache"], "masked_paths": ["~/private"]},
    "web": {"fetch": {"allow_private_hosts": ["127.0.0.1"], "timeout_s": 7}},
}


def _settings(project: Path, section: str, trusted: bool, scope: Scope = Scope.PROJECT) -> Settings:
    path = project / ".codingcode" / "settings.json"
    return Settings(
        project, [SettingsFile(scope, path, {section: VALUES[section]}, trusted=trusted)]
    )


def _session(settings: Settings, distrust: bool) -> Settings:
    """The settings as a session's workspace hands them down (``trust_project_grants=False``: the
    session distrusts the project)."""
    from codingcode.trust import TrustStore
    from codingcode.workspace import Workspace

    return Workspace(settings.project, settings, TrustStore(), not distrust).settings


def _permissions(settings: Settings) -> tuple[bool, bool]:
    from codingcode.approval.rules import load_policy

    policy = load_policy(settings).without_untrusted_grants()
    actions = {r.action for r in policy.rules}
    return "allow" in actions and policy.default_mode == "bypass", "deny" in actions


def _hooks(settings: Settings) -> tuple[bool, bool]:
    from codingcode.hooks.settings import load_command_hooks, runnable_hooks

    hooks = load_command_hooks(settings)
    return bool(runnable_hooks(hooks)), True  # hooks only grant


def _approvals(settings: Settings) -> tuple[bool, bool]:
    from codingcode.approval.setup import approvals_settings

    return approvals_settings(settings).get("autoAllowSandboxed") is True, True


def _sandbox(settings: Settings) -> tuple[bool, bool]:
    from codingcode.sandbox.policy import load_sandbox_policy

    policy = load_sandbox_policy(settings.project, settings)
    home_private = Path("~/private").expanduser()
    return Path("/opt/cache") in policy.writable_roots, home_private in policy.masked_paths


def _web(settings: Settings) -> tuple[bool, bool]:
    from codingcode.tools.builtin.web.settings import load_web_settings
    from codingcode.trust import TrustStore
    from codingcode.workspace import Workspace

    loaded = load_web_settings(Workspace(settings.project, settings, TrustStore()))
    fetch = loaded.settings.fetch
    return "127.0.0.1" in fetch.allow_private_hosts, fetch.timeout_s == 7


READERS: dict[str, Callable[[Settings], tuple[bool, bool]]] = {
    "permissions": _permissions,
    "hooks": _hooks,
    "approvals": _approvals,
    "sandbox": _sandbox,
    "web": _web,
}


def test_every_granting_section_has_a_reader_checked_here() -> None:
    assert set(READERS) == set(GRANTING_SECTIONS)


@pytest.mark.parametrize("section", sorted(GRANTING_SECTIONS))
def test_an_untrusted_file_restricts_but_never_grants(section: str, project: Path) -> None:
    def read(trusted: bool, distrust: bool, scope: Scope = Scope.PROJECT) -> tuple[bool, bool]:
        return READERS[section](_session(_settings(project, section, trusted, scope), distrust))

    # trusted: it grants (and restricts)
    assert read(trusted=True, distrust=False) == (True, True)
    # untrusted, or a session that distrusts the project: no grant; restrictions stand
    assert read(trusted=False, distrust=False) == (False, True)
    assert read(trusted=True, distrust=True) == (False, True)
    # the user's own file always grants
    assert read(trusted=True, distrust=True, scope=Scope.USER) == (True, True)


def test_the_rule_itself() -> None:
    assert grants_apply(Scope.USER, False)
    assert grants_apply(None, False)  # made in code (--allowed-tools)
    for scope in (Scope.PROJECT, Scope.LOCAL):
        assert grants_apply(scope, True)
        assert not grants_apply(scope, False)
    with pytest.raises(ValueError, match="not a granting"):
        granting_sources(Settings(Path("/")), "model")
