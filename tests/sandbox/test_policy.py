from __future__ import annotations

import json
from pathlib import Path

import pytest

from codingcode.config import Scope, Settings, SettingsError, SettingsFile, load_settings
from codingcode.sandbox.policy import (
    BackendChoice,
    Network,
    SandboxMode,
    load_policy_with_ignored,
    load_sandbox_policy,
    policy_from_entries,
    sandbox_entries,
    widening_entries,
)


def settings_of(project: Path, *files: tuple[Scope, dict, bool]) -> Settings:
    return Settings(
        project=project,
        files=[
            SettingsFile(scope, project / f"{scope.value}.json", {"sandbox": data}, trusted=trusted)
            for scope, data, trusted in files
        ],
    )


def test_defaults(project: Path) -> None:
    policy = load_sandbox_policy(project, Settings(project=project))
    assert policy.mode is SandboxMode.WORKSPACE_WRITE
    assert policy.backend is BackendChoice.AUTO
    assert policy.network is Network.NONE
    assert policy.writable_roots == () and policy.masked_paths == ()
    assert policy.contained


def test_later_files_override_and_lists_join(project: Path, tmp_path: Path) -> None:
    settings = settings_of(
        project,
        (Scope.USER, {"network": "allow", "writable_roots": [str(tmp_path / "a")]}, True),
        (Scope.LOCAL, {"network": "none", "writable_roots": ["b"], "masked_paths": ["~/x"]}, True),
    )
    policy = load_sandbox_policy(project, settings)
    assert policy.network is Network.NONE
    assert policy.writable_roots == (tmp_path / "a", project / "b")
    assert policy.masked_paths == (Path.home().resolve() / "x",)


def test_real_settings_files(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "config"))
    (project / ".codingcode").mkdir()
    (project / ".codingcode" / "settings.local.json").write_text(
        json.dumps({"sandbox": {"mode": "read-only"}})
    )
    assert load_sandbox_policy(project, load_settings(project)).mode is SandboxMode.READ_ONLY


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        (
            {"mode": "yolo"},
            "sandbox.mode must be one of workspace-write, read-only or off, got 'yolo'",
        ),
        ({"network": True}, "sandbox.network must be an object"),
        ({"network": "maybe"}, "sandbox.network must be one of off, limited or on"),
        (
            {"backend": "docker"},
            "sandbox.backend must be one of auto, bubblewrap, landlock or none",
        ),
        ({"writable_roots": "/x"}, "sandbox.writable_roots"),
        ({"writable_roots": [""]}, "sandbox.writable_roots holds an empty path"),
        ({"writeable_roots": []}, "unknown key sandbox.writeable_roots"),
        ("off", "`sandbox` must be an object"),
    ],
)
def test_invalid_entries_name_the_file_and_field(
    project: Path, section: object, expected: str
) -> None:
    file = SettingsFile(
        Scope.PROJECT, project / ".codingcode" / "settings.json", {"sandbox": section}
    )
    with pytest.raises(SettingsError) as info:
        sandbox_entries(Settings(project=project, files=[file]))
    assert str(file.path) in info.value.message
    assert expected in info.value.message


def test_widening_entries_name_their_file(project: Path) -> None:
    settings = settings_of(
        project,
        (Scope.USER, {"mode": "read-only", "masked_paths": ["x"]}, True),
        (
            Scope.PROJECT,
            {
                "mode": "workspace-write",
                "network": "allow",
                "writable_roots": ["/opt"],
                "backend": "none",
            },
            True,
        ),
        (Scope.LOCAL, {"mode": "read-only", "network": "none", "backend": "bubblewrap"}, True),
    )
    widening = widening_entries(sandbox_entries(settings))
    described = [(w.entry.scope, w.entry.field, w.entry.value) for w in widening]
    assert described == [
        (Scope.PROJECT, "mode", "workspace-write"),  # wider than the user's read-only
        (Scope.PROJECT, "backend", "none"),
        (Scope.PROJECT, "network", "on"),
        (Scope.PROJECT, "writable_roots", "/opt"),
    ]
    assert "project settings" in widening[0].describe()


def test_restricting_entries_never_widen(project: Path) -> None:
    settings = settings_of(
        project,
        (
            Scope.PROJECT,
            {
                "mode": "read-only",
                "network": "none",
                "masked_paths": ["a"],
                "backend": "bubblewrap",
            },
            False,
        ),
    )
    assert widening_entries(sandbox_entries(settings)) == []
    policy, ignored = load_policy_with_ignored(project, settings)
    assert policy.mode is SandboxMode.READ_ONLY and ignored == []
    assert policy.masked_paths == (project / "a",)


def test_untrusted_project_cannot_widen(project: Path) -> None:
    settings = settings_of(
        project,
        (Scope.USER, {"writable_roots": ["/srv/cache"]}, True),
        (
            Scope.PROJECT,
            {"mode": "off", "network": "allow", "writable_roots": ["/"], "masked_paths": ["m"]},
            False,
        ),
        (Scope.LOCAL, {"backend": "none", "keep_env": ["AWS_SECRET_ACCESS_KEY"]}, False),
    )
    policy, ignored = load_policy_with_ignored(project, settings)
    assert policy.mode is SandboxMode.WORKSPACE_WRITE
    assert policy.network is Network.NONE
    assert policy.backend is BackendChoice.AUTO
    assert policy.writable_roots == (Path("/srv/cache"),)  # the user's own root stays
    assert policy.masked_paths == (project / "m",)  # restricting: applies untrusted
    assert policy.keep_env == ()
    assert [w.entry.field for w in ignored] == [
        "mode",
        "network",
        "writable_roots",
        "backend",
        "keep_env",
    ]


def test_trusted_project_may_widen(project: Path) -> None:
    settings = settings_of(project, (Scope.PROJECT, {"mode": "off", "network": "allow"}, True))
    policy, ignored = load_policy_with_ignored(project, settings)
    assert policy.mode is SandboxMode.OFF and policy.network is Network.ALLOW
    assert not policy.contained and ignored == []


def test_policy_resolves_symlinked_roots(project: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    settings = settings_of(
        project, (Scope.USER, {"writable_roots": [str(tmp_path / "alias")]}, True)
    )
    policy = policy_from_entries(project, sandbox_entries(settings))
    assert policy.writable_roots == (real.resolve(),)


def test_deny_read_joins_every_file_and_applies_untrusted(project: Path) -> None:
    settings = settings_of(
        project,
        (Scope.USER, {"denyRead": ["~/.vault-token"]}, True),
        (Scope.PROJECT, {"denyRead": ["secrets/**", "**/*.pem"]}, False),
    )
    assert widening_entries(sandbox_entries(settings)) == []
    policy, ignored = load_policy_with_ignored(project, settings)
    assert ignored == []
    assert [m.pattern for m in policy.deny_read] == ["~/.vault-token", "secrets/**", "**/*.pem"]
    assert policy.deny_read[1].origin.startswith("sandbox.denyRead in project settings")


@pytest.mark.parametrize("bad", [{"denyRead": "x"}, {"denyRead": [""]}, {"denyread": ["x"]}])
def test_bad_deny_read_names_the_file_and_field(project: Path, bad: dict) -> None:
    settings = settings_of(project, (Scope.USER, bad, True))
    with pytest.raises(SettingsError) as exc:
        load_sandbox_policy(project, settings)
    assert "user.json" in str(exc.value)
    assert "denyRead" in str(exc.value) or "denyread" in str(exc.value)
