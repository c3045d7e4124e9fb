"""`codingcode sandbox status` lists the masked credentials and the ready-made entries (off
until named); `codingcode check` shows which credentials a command gets as placeholders;
`sandbox run` gives the command the placeholder, never the value (the real command)."""

from __future__ import annotations

import json
from pathlib import Path

from codingcode.config import user_config_dir
from tests.conftest import run_cli

SECRET = "tok_RealValueNeverShown0123456789"


def _settings(raw: dict[str, object]) -> None:
    path = user_config_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(raw))


def test_status_and_check_show_credentials_and_presets(project: Path) -> None:
    _settings(
        {
            "sandbox": {
                "credentials": {
                    "presets": ["npm"],
                    "envVars": [
                        {"name": "MY_TOKEN", "mode": "mask", "injectHosts": ["api.example.com"]}
                    ],
                },
                "network": {"allowedDomains": ["api.example.com"], "tlsTerminate": True},
            }
        }
    )
    status = run_cli(["sandbox", "status", "--json"], cwd=project, timeout=120)
    data = json.loads(status.stdout)["credentials"]
    assert data["tlsTerminate"] is True
    assert (
        "MY_TOKEN: a placeholder; the real value only on requests to api.example.com"
        in (data["in_effect"])
    )
    presets = {p["name"]: p["on"] for p in data["presets"]}
    assert presets == {"git": False, "gh": False, "npm": True, "pypi": False,
                       "docker": False, "aws": False}  # fmt: skip
    check = run_cli(
        ["check", "execute_command", json.dumps({"command": "curl https://api.example.com"})],
        cwd=project,
    )
    lines = json.loads(check.stdout)["capabilities"]["credentials"]
    assert any(line.startswith("NPM_TOKEN: a placeholder") for line in lines)
    run = run_cli(
        ["sandbox", "run", "--", "sh", "-c", 'printf "%s" "$MY_TOKEN"'],
        cwd=project,
        env={"MY_TOKEN": SECRET},
    )
    assert SECRET not in run.stdout + run.stderr
    assert run.stdout[3] == "_" and len(run.stdout) == len(SECRET)  # the same shape


def test_a_bad_inject_host_is_one_clear_line(project: Path) -> None:
    _settings(
        {"sandbox": {"credentials": {"envVars": [
            {"name": "MY_TOKEN", "mode": "mask", "injectHosts": ["https://x.org/path"]}]}}}
    )  # fmt: skip
    r = run_cli(["sandbox", "status"], cwd=project)
    assert r.code != 0
    assert "injectHosts holds 'https://x.org/path', which is not a host pattern" in r.stderr
    assert "Traceback" not in r.stderr
