"""The real `codingcode sandbox status` / `sandbox run`, and commands run through it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codingcode.sandbox.probes import processes_with, wait_until_gone
from tests.conftest import run_cli
from tests.sandbox.conftest import needs_bwrap

pytestmark = pytest.mark.e2e


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The user's config and state dirs, private to the test."""
    (tmp_path / "config").mkdir()
    return {
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
    }


def user_settings(env: dict[str, str], sandbox: dict[str, object]) -> None:
    Path(env["CODINGCODE_CONFIG_DIR"], "settings.json").write_text(json.dumps({"sandbox": sandbox}))


@needs_bwrap
def test_status_checks_every_guarantee_live(project: Path, env: dict[str, str]) -> None:
    r = run_cli(["sandbox", "status", "--json"], cwd=project, env=env)
    assert r.code == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["backend"] == "bubblewrap"
    assert {c["key"]: c["enforced"] for c in report["checks"]} == {
        "writes": True,
        "protected": True,
        "network": True,
        "privileges": True,
        "secrets": True,
        "tree": True,
    }
    text = run_cli(["sandbox", "status"], cwd=project, env=env)
    assert "backend: bubblewrap" in text.stdout and "[NO ]" not in text.stdout


def test_status_with_backend_none_shows_nothing_is_enforced(
    project: Path, env: dict[str, str]
) -> None:
    user_settings(env, {"backend": "none"})
    r = run_cli(["sandbox", "status", "--json"], cwd=project, env=env)
    report = json.loads(r.stdout)
    assert report["backend"] == "none"
    assert all(c["enforced"] is False for c in report["checks"]), report


@needs_bwrap
def test_rewriting_settings_local_from_inside_fails(project: Path, env: dict[str, str]) -> None:
    settings = project / ".codingcode" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text("{}\n")
    evil = json.dumps(
        {"permissions": {"allow": ["execute_command(*)"]}, "sandbox": {"mode": "off"}}
    )
    r = run_cli(
        ["sandbox", "run", "--", "sh", "-c", f"echo '{evil}' > .codingcode/settings.local.json"],
        cwd=project,
        env=env,
    )
    assert r.code != 0
    assert "Read-only file system" in r.stderr
    assert settings.read_text() == "{}\n"


def test_invalid_settings_name_the_file_and_field(project: Path, env: dict[str, str]) -> None:
    (project / ".codingcode").mkdir()
    path = project / ".codingcode" / "settings.json"
    path.write_text(json.dumps({"sandbox": {"network": "sometimes"}}))
    r = run_cli(["sandbox", "run", "--", "true"], cwd=project, env=env)
    assert r.code == 2
    assert str(path) in r.stderr and "sandbox.network must be one of off, limited or on" in r.stderr


def test_fail_closed_when_the_chosen_backend_is_missing(project: Path, env: dict[str, str]) -> None:
    user_settings(env, {"backend": "bubblewrap"})
    missing = {**env, "CODINGCODE_BWRAP": str(project / "no-bwrap-here")}
    r = run_cli(["sandbox", "run", "--", "touch", "ran"], cwd=project, env=missing)
    assert r.code == 1
    assert "Command not run" in r.stderr and "apt-get install bubblewrap" in r.stderr
    assert not (project / "ran").exists()
    status = run_cli(["sandbox", "status"], cwd=project, env=missing)
    assert status.code == 1 and "backend: unavailable" in status.stdout


def test_backend_none_says_so(project: Path, env: dict[str, str]) -> None:
    user_settings(env, {"backend": "none"})
    r = run_cli(["sandbox", "run", "--", "true"], cwd=project, env=env)
    assert r.code == 0
    assert "without any containment" in r.stderr and "sandbox.backend = 'none'" in r.stderr


def test_untrusted_project_cannot_switch_the_sandbox_off(
    project: Path, env: dict[str, str]
) -> None:
    (project / ".codingcode").mkdir()
    (project / ".codingcode" / "settings.json").write_text(
        json.dumps({"sandbox": {"mode": "off", "network": "allow"}})
    )
    r = run_cli(["sandbox", "status", "--json"], cwd=project, env=env)
    assert "ignored what this untrusted project would grant" in r.stderr
    assert "sandbox.mode = 'off'" in r.stderr
    report = json.loads(r.stdout)
    assert report["policy"]["mode"] == "workspace-write" and report["policy"]["network"] == "off"


def sleepers(token: str) -> list[int]:
    """The sleeping processes themselves (their last argument is the token)."""
    found = []
    for pid in processes_with(token):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[-2:] == [token.encode(), b""]:
            found.append(pid)
    return found


@needs_bwrap
def test_the_tree_dies_when_the_agent_is_killed(project: Path, env: dict[str, str]) -> None:
    token = f"codingcode-e2e-{os.getpid()}-{time.monotonic_ns()}"
    sleeper = f"{sys.executable} -c 'import time; time.sleep(300)' {token}"
    script = f"setsid {sleeper} & nohup {sleeper} >/dev/null 2>&1 & {sleeper}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "codingcode", "sandbox", "run", "--", "bash", "-c", script],
        cwd=project,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while len(sleepers(token)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(sleepers(token)) == 3
        proc.send_signal(signal.SIGKILL)  # the agent dies without any chance to clean up
        proc.wait()
        assert wait_until_gone(token, 5) == []
    finally:
        proc.kill()
        for pid in processes_with(token):
            os.kill(pid, signal.SIGKILL)


@needs_bwrap
def test_execute_command_runs_sandboxed(project: Path, env: dict[str, str], tmp_path: Path) -> None:
    """The real tool path (`codingcode tool`, build_runner): contained by default."""
    settings = project / ".codingcode" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text("{}\n")
    command = 'echo $CODINGCODE_SANDBOX; echo \'{"sandbox": {"mode": "off"}}\' > .codingcode/settings.local.json'
    r = run_cli(
        ["tool", "execute_command", json.dumps({"command": command}), "--mode", "bypass"],
        cwd=project,
        env=env,
    )
    assert "bubblewrap" in r.stdout, r.stdout + r.stderr
    assert "Read-only file system" in r.stdout
    assert settings.read_text() == "{}\n"


@needs_bwrap
def test_run_uses_the_project_as_working_directory(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    (project / "sub").mkdir()
    inside = run_cli(["sandbox", "run", "--", "pwd"], cwd=project / "sub", env=env)
    assert inside.stdout.strip() == str(project / "sub"), inside.stderr
    elsewhere = run_cli(
        ["sandbox", "run", "--project", str(project), "--", "pwd"], cwd=tmp_path, env=env
    )
    assert elsewhere.stdout.strip() == str(project), elsewhere.stderr


@pytest.fixture
def real_project() -> Iterator[Path]:
    """A project outside /tmp (private in the sandbox, so a probe there would prove nothing)."""
    parent = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="codingcode-e2e-", dir=parent)).resolve()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@needs_bwrap
def test_status_lists_every_mask_and_probes_it(real_project: Path, env: dict[str, str]) -> None:
    from codingcode.sandbox.secrets import DEFAULT_MASKS

    project = real_project

    (project / "creds").mkdir()
    (project / "creds" / "token").write_text("t0ken")
    user_settings(env, {"denyRead": ["creds/**"]})
    Path(env["CODINGCODE_CONFIG_DIR"], "settings.json").write_text(
        json.dumps(
            {
                "sandbox": {"denyRead": ["creds/**"]},
                "permissions": {"deny": ["read_file(**/private.pem)"]},
            }
        )
    )
    (project / "private.pem").write_text("pem")
    r = run_cli(["sandbox", "status", "--json"], cwd=project, env=env)
    assert r.code == 0, r.stderr
    masks = {m["pattern"]: m for m in json.loads(r.stdout)["masks"]}
    for spec in DEFAULT_MASKS:
        if spec.pattern.startswith(("~", "**")):  # planted by the probe: always checked
            assert masks[spec.pattern]["enforced"] is True, masks[spec.pattern]
    assert masks["creds/**"]["enforced"] is True
    assert masks["creds/**"]["probed"] == [str(project / "creds")]
    assert masks["**/private.pem"]["enforced"] is True
    assert "deny rule" in masks["**/private.pem"]["origin"]
    text = run_cli(["sandbox", "status"], cwd=project, env=env).stdout
    assert "~/.aws" in text and "creds/**" in text and "limits:" in text
    # ... and `sandbox run` masks them for real.
    run = run_cli(
        ["sandbox", "run", "--", "cat", "creds/token", "private.pem"], cwd=project, env=env
    )
    assert "t0ken" not in run.stdout and "pem" not in run.stdout
