"""Masked credentials through the real ``codingcode run`` (the fake model drives it): a
foreground and a background command reach a loopback HTTPS server standing for
``localhost`` with the placeholder, the server receives the real value, and the real
value's bytes are nowhere — not in any file under the state dir (audit, sessions, spilled
outputs), the project, the model's requests (the tool results), or the output."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step
from tests.e2e.test_agent_run import env_for, run
from tests.sandbox.conftest import needs_bwrap
from tests.sandbox.network.tls_server import TLSServer, UpstreamCA

pytestmark = [pytest.mark.e2e, needs_bwrap]

TOKEN = "ghp_" + "E2eRealTokenValue" * 2 + "Zz09"
NPM = "npm_" + "E2eNpmRealToken" * 2 + "0123456"


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def _scan(root: Path) -> list[Path]:
    found = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if TOKEN.encode() in data or NPM.encode() in data:
                found.append(path)
    return found


def test_run_injects_for_its_host_only_and_records_no_value(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="codingcode-e2e-creds-", dir="/var/tmp")).resolve()
    try:
        home = scratch / "home"
        home.mkdir()
        ca = UpstreamCA(scratch / "ca", ("localhost",))
        with TLSServer(ca) as srv:
            port = srv.port
            (home / ".npmrc").write_text(f"//localhost:{port}/:_authToken={NPM}\n")
            env = env_for(fake, "openai", tmp_path)
            env |= {
                "HOME": str(home),
                "GITHUB_TOKEN": TOKEN,
                # The proxy checks the real server with the system's trust: here, the test CA.
                "SSL_CERT_FILE": str(ca.ca_pem),
            }
            config = Path(env["CODINGCODE_CONFIG_DIR"])
            config.mkdir(parents=True, exist_ok=True)
            (config / "settings.json").write_text(
                json.dumps(
                    {
                        "sandbox": {
                            "credentials": {
                                "envVars": [
                                    {"name": "GITHUB_TOKEN", "mode": "mask",
                                     "injectHosts": ["localhost"]}
                                ],
                                "files": [
                                    {"path": "~/.npmrc", "mode": "mask",
                                     "injectHosts": ["localhost"]}
                                ],
                            },
                            "network": {"mode": "limited", "allowedDomains": ["localhost"],
                                        "tlsTerminate": True},
                        }
                    }
                )
            )  # fmt: skip
            url = f"https://localhost:{port}"
            fake.script = [
                Step(
                    tool_calls=[
                        (
                            "execute_command",
                            {
                                "command": f'curl -sS -m 20 -H "Authorization: Bearer '
                                f'$GITHUB_TOKEN" {url}/echo; echo; printenv GITHUB_TOKEN; '
                                "cat ~/.npmrc; "
                                f'curl -sS -m 20 -H "Authorization: Bearer $(sed -n '
                                f"'s/.*_authToken=//p' ~/.npmrc)\" {url}/npm",
                                "run_in_background": False,
                            },
                        )
                    ]
                ),
                Step(
                    tool_calls=[
                        (
                            "execute_command",
                            {
                                "command": f'curl -sS -m 20 -H "Authorization: Bearer '
                                f'$GITHUB_TOKEN" {url}/background',
                                "run_in_background": True,
                            },
                        )
                    ]
                ),
                Step(tool_calls=[("execute_command", {"command": "sleep 3; echo waited"})]),
                Step(text="done"),
            ]
            result = run(["run", "use the token", "--mode", "bypass"], project, env, timeout=120)
            assert result.returncode == 0, result.stderr
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not any(
                r.path == "/background" for r in srv.received
            ):
                time.sleep(0.2)
        seen = {r.path: r.authorization for r in srv.received}
        assert seen["/echo"] == f"Bearer {TOKEN}"
        assert seen["/npm"] == f"Bearer {NPM}"
        assert seen["/background"] == f"Bearer {TOKEN}"  # a background command too
        bodies = json.dumps(fake.bodies())
        assert "Bearer ghp_" in bodies  # the echo came back, as the placeholder
        for text in (bodies, result.stdout, result.stderr):
            assert TOKEN not in text and NPM not in text
        assert _scan(Path(env["CODINGCODE_STATE_DIR"])) == []
        assert _scan(project) == []
        # The audit says which credential was injected for which host.
        import sqlite3

        dbs = list(Path(env["CODINGCODE_STATE_DIR"]).rglob("*.db"))
        reasons = []
        for db in dbs:
            with sqlite3.connect(db) as conn:
                try:
                    rows = conn.execute("SELECT reason FROM network_audit").fetchall()
                except sqlite3.OperationalError:
                    continue
            reasons += [r[0] for r in rows if r[0]]
        assert "GITHUB_TOKEN injected for localhost" in reasons
        assert "~/.npmrc injected for localhost" in reasons
        shown = run(["audit", "--network"], project, env)
        assert "GITHUB_TOKEN injected for localhost" in shown.stdout, shown.stdout + shown.stderr
        assert TOKEN not in shown.stdout + shown.stderr
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
