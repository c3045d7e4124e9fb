"""Secrets found by format, placeholders of the same shape, and the settings' bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codingcode.config import SettingsError
from codingcode.sandbox.credentials.broker import CredentialBroker
from codingcode.sandbox.credentials.formats import find_secrets
from codingcode.sandbox.credentials.placeholders import Placeholders, same_shape
from codingcode.sandbox.credentials.settings import PRESETS, CredentialSpec
from codingcode.sandbox.policy import policy_from_entries, widening_entries

CASES = {
    "git-credentials": ("https://alice:ghp_abcdefABCDEF0123456789abcdefABCDEF01@github.com\n"
                        "https://tok3nAsUser1234@gitlab.com\n",
                        ["ghp_abcdefABCDEF0123456789abcdefABCDEF01", "tok3nAsUser1234"]),
    "npmrc": ("registry=https://registry.npmjs.org/\n"
              "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789\n"
              "//other.example/:_authToken=${NPM_TOKEN}\n",
              ["npm_abcdefghijklmnopqrstuvwxyz0123456789"]),
    "pypirc": ("[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6\n",
               ["pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6"]),
    "gh-hosts": ("github.com:\n    user: alice\n    oauth_token: gho_16C7e42F292c6912E7710c838347Ae178B4a\n"
                 "    git_protocol: https\n", ["gho_16C7e42F292c6912E7710c838347Ae178B4a"]),
    "docker": (json.dumps({"auths": {"ghcr.io": {"auth": "YWxpY2U6c2VjcmV0cGFzc3dvcmQ="}}}),
               ["YWxpY2U6c2VjcmV0cGFzc3dvcmQ="]),
    "aws": ("[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nregion = eu-west-1\n",
            ["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"]),
    "env": ('export API_KEY="k-1234567890abcdef"\nDEBUG=1\n', ["k-1234567890abcdef"]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_secrets_are_found_by_format(name: str) -> None:
    text, expected = CASES[name]
    found = [text[f.start : f.end] for f in find_secrets(text)]
    assert found == expected


def test_no_secret_in_plain_config() -> None:
    assert find_secrets("[core]\n\teditor = vim\nuser = alice\n") == []


def test_placeholders_keep_the_shape_and_prefix_and_are_stable_per_session() -> None:
    real = "ghp_abcdefABCDEF0123456789abcdefABCDEF01"
    made = same_shape(real)
    assert made != real and len(made) == len(real) and made.startswith("ghp_")
    for a, b in zip(real, made, strict=True):
        assert (a.isdigit(), a.islower(), a.isupper()) == (b.isdigit(), b.islower(), b.isupper())
    session = Placeholders()
    assert session.for_value(real) == session.for_value(real)
    assert Placeholders().for_value(real) != session.for_value(real)  # unique per session
    key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    assert same_shape(key).count("/") == 2


def _entries(raw: dict[str, object], tmp_path: Path) -> object:
    from codingcode.config import Scope, SettingsFile
    from codingcode.sandbox.policy import parse_file

    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"sandbox": raw}))
    return parse_file(SettingsFile(Scope.USER, path, {"sandbox": raw}))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"credentials": {"files": [{"path": "~/.npmrc", "mode": "mask",
                                     "injectHosts": ["https://registry.npmjs.org/"]}]}},
         "sandbox.credentials.files[0].injectHosts holds 'https://registry.npmjs.org/', which is not a host pattern"),
        ({"credentials": {"envVars": [{"name": "X", "mode": "hide"}]}},
         "must be 'deny' or 'mask', got 'hide'"),
        ({"credentials": {"envVars": [{"name": "A B", "mode": "mask"}]}},
         "must be an environment variable's name"),
        ({"credentials": {"presets": ["vault"]}}, "not a ready-made entry"),
        ({"credentials": {"files": [{"path": "~/.npmrc", "mode": "deny",
                                     "injectHosts": ["registry.npmjs.org"]}]}},
         "has injectHosts but mode 'deny'"),
        ({"network": {"tlsTerminate": "sometimes"}}, "sandbox.network.tlsTerminate"),
    ],
)  # fmt: skip
def test_bad_settings_are_one_clear_line(
    raw: dict[str, object], message: str, tmp_path: Path
) -> None:
    with pytest.raises(SettingsError) as info:
        _entries(raw, tmp_path)
    text = str(info.value)
    assert message in text and "\n" not in text


def test_claude_code_settings_copy_as_they_are(tmp_path: Path) -> None:
    raw = {
        "credentials": {
            "files": [
                {"path": "~/.git-credentials", "mode": "mask", "injectHosts": ["github.com"]}
            ],
            "envVars": [{"name": "GITHUB_TOKEN", "mode": "deny"}],
            "allowPlaintextInject": False,
        },
        "network": {"allowedDomains": ["github.com"], "tlsTerminate": True},
    }
    entries = _entries(raw, tmp_path)
    policy = policy_from_entries(tmp_path, entries)  # type: ignore[arg-type]
    assert policy.tls_terminate
    assert [(c.kind, c.source, c.mode) for c in policy.credentials] == [
        ("file", "~/.git-credentials", "mask"),
        ("env", "GITHUB_TOKEN", "deny"),
    ]
    widening = [w.reason for w in widening_entries(entries)]  # type: ignore[arg-type]
    assert "sends ~/.git-credentials's real value to github.com" in widening


def test_presets_are_off_by_default_and_expand_when_named(tmp_path: Path) -> None:
    assert policy_from_entries(tmp_path, []).credentials == ()
    entries = _entries({"credentials": {"presets": ["gh"]}}, tmp_path)
    policy = policy_from_entries(tmp_path, entries)  # type: ignore[arg-type]
    assert {c.source for c in policy.credentials} == {
        "~/.config/gh/hosts.yml",
        "GH_TOKEN",
        "GITHUB_TOKEN",
    }
    assert set(PRESETS) == {"git", "gh", "npm", "pypi", "docker", "aws"}


def test_missing_sources_and_unsearchable_files_are_one_line_and_never_shown(
    tmp_path: Path,
) -> None:
    (tmp_path / "plain.conf").write_text("[core]\neditor = vim\n")
    (tmp_path / "bin.dat").write_bytes(b"\xff\xfe password=\x00")
    broker = CredentialBroker(
        [
            CredentialSpec("file", "~/missing", "mask", ("github.com",)),
            CredentialSpec("file", "~/plain.conf", "mask", ("github.com",)),
            CredentialSpec("file", "~/bin.dat", "mask", ("github.com",)),
            CredentialSpec("env", "NOT_SET_ANYWHERE", "mask", ("github.com",)),
        ],
        tls_terminate=True,
    )
    call = broker.for_call({"HOME": str(tmp_path)})
    assert call.files == {} and call.secrets == [] and call.env == {}
    assert set(call.deny_files) == {tmp_path / "plain.conf", tmp_path / "bin.dat"}
    assert "NOT_SET_ANYWHERE" in call.deny_env
    assert len(call.notes) == 4 and all("\n" not in n for n in call.notes)
    assert any("~/missing" in n and "does not exist" in n for n in call.notes)
    assert any("~/plain.conf" in n and "no secret could be found" in n for n in call.notes)
