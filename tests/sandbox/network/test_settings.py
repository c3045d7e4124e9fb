"""``sandbox.network`` in the settings: the object, the old strings, trust."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codingcode.config import Scope, Settings, SettingsError, SettingsFile
from codingcode.sandbox.policy import (
    Network,
    policy_from_entries,
    sandbox_entries,
    split_untrusted_widening,
)


def settings(project: Path, *files: tuple[Scope, Any, bool]) -> Settings:
    return Settings(
        project=project,
        files=[
            SettingsFile(scope, project / f"{scope.value}.json", {"sandbox": data}, trusted=ok)
            for scope, data, ok in files
        ],
    )


def policy_of(project: Path, *files: tuple[Scope, Any, bool]) -> Any:
    kept, _ = split_untrusted_widening(sandbox_entries(settings(project, *files)))
    return policy_from_entries(project, kept)


@pytest.mark.parametrize(
    ("value", "mode"),
    [("none", Network.OFF), ("allow", Network.ON), ("off", Network.OFF), ("on", Network.ON)],
)
def test_old_and_new_strings(tmp_path: Path, value: str, mode: Network) -> None:
    assert policy_of(tmp_path, (Scope.USER, {"network": value}, True)).network is mode


def test_default_is_off(tmp_path: Path) -> None:
    assert policy_of(tmp_path).network is Network.OFF


def test_allowed_domains_without_mode_mean_limited(tmp_path: Path) -> None:
    policy = policy_of(
        tmp_path,
        (Scope.USER, {"network": {"allowedDomains": ["pypi.org", "*.pythonhosted.org"]}}, True),
        (Scope.PROJECT, {"network": {"deniedDomains": ["evil.org"]}}, False),
    )
    assert policy.network is Network.LIMITED
    assert policy.domains.allowed == ("pypi.org", "*.pythonhosted.org")
    assert policy.domains.denied == ("evil.org",)  # a restriction applies untrusted too


def test_untrusted_project_cannot_widen_the_network(tmp_path: Path) -> None:
    policy = policy_of(
        tmp_path,
        (
            Scope.PROJECT,
            {"network": {"mode": "on", "allowedDomains": ["x.org"], "allowLocalAddresses": True}},
            False,
        ),
    )
    assert policy.network is Network.OFF
    assert policy.domains.allowed == () and not policy.domains.allow_local
    trusted = policy_of(
        tmp_path,
        (
            Scope.PROJECT,
            {"network": {"allowedDomains": ["x.org"], "allowLocalAddresses": True}},
            True,
        ),
    )
    assert trusted.network is Network.LIMITED and trusted.domains.allow_local


@pytest.mark.parametrize(
    ("network", "expected"),
    [
        ({"mode": "sometimes"}, "sandbox.network.mode must be one of off, limited or on"),
        ({"allowedDomains": ["https://x.org/"]}, "sandbox.network.allowedDomains holds"),
        ({"deniedDomains": ["*"]}, "wildcard"),
        ({"allowed": ["x.org"]}, "unknown key sandbox.network.allowed"),
        ({"allowLocalAddresses": "yes please"}, "sandbox.network.allowLocalAddresses"),
        (3, "sandbox.network must be an object"),
    ],
)
def test_bad_network_settings_name_the_file(tmp_path: Path, network: Any, expected: str) -> None:
    with pytest.raises(SettingsError) as info:
        sandbox_entries(settings(tmp_path, (Scope.USER, {"network": network}, True)))
    assert expected in info.value.message and "user.json" in info.value.message
