"""The client side of the conformance suite: run as ``python THIS URL`` by
``conformance client --command``. It drives our real MCP client through the real
``codingcode`` command: a user-level ``mcpServers`` entry for URL, ``codingcode mcp list``
(connect, initialize, list tools), then ``codingcode tool conformance:TOOL`` for each tool
the scenario's server offers (``add_numbers`` with numbers, the others with no arguments);
for the scenarios whose tool is known, only ``codingcode tool`` (one process, quicker).

The ``auth/*`` scenarios are run as a user would: the entry's ``oauth`` object is what an
admin would write for that server (the pre-registered client or the client credentials the
scenario hands out in ``MCP_CONFORMANCE_CONTEXT``; our client-ID metadata document URL),
then ``codingcode mcp login conformance`` with ``$BROWSER`` set to this script's
``--browse URL``, which plays the person at the browser: it loads the authorization URL and
follows its redirects, the last of which reaches our loopback callback. A session told
"needs a login" (a step-up) logs in again, once, and retries.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CODINGCODE = str(Path(sys.executable).parent / "codingcode")
#: The client-ID metadata document URL the suite's basic-cimd scenario expects.
CIMD_URL = "https://conformance-test.local/client-metadata.json"


def browse(url: str) -> int:
    """The person at the browser: load ``url`` and follow its redirects (no proxy)."""
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=30) as page:
            page.read()
    except urllib.error.HTTPError as exc:  # the callback's "login failed" page is a 400
        print(f"browser: {exc}", file=sys.stderr)
    return 0


def authorization_server(url: str) -> str:
    """What the admin looks up once: the server's authorization server (its protected-
    resource metadata). Our client never takes it from the server for this grant."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    prm = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(prm, timeout=30) as page:
        return str(json.loads(page.read())["authorization_servers"][0])


def oauth_entry(scenario: str, context: dict[str, str], url: str) -> dict[str, str]:
    """What a user would write in the entry's ``oauth`` object for this scenario."""
    entry: dict[str, str] = {"client_metadata_url": CIMD_URL}
    if scenario == "auth/cross-app-access-complete-flow":
        return {
            "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
            "issuer": authorization_server(url),
            **{k: v for k, v in context.items() if k != "name"},  # client_id ... idp_*
        }
    if scenario.startswith("auth/client-credentials-"):
        entry |= {"grant_type": "client_credentials", "client_id": context["client_id"]}
        if "private_key_pem" in context:
            entry |= {
                "private_key_pem": context["private_key_pem"],
                "signing_algorithm": context["signing_algorithm"],
            }
        else:
            entry["client_secret"] = context["client_secret"]
    elif "client_id" in context:  # a pre-registered client
        entry |= {"client_id": context["client_id"], "client_secret": context["client_secret"]}
    return entry


def main() -> int:
    if sys.argv[1:2] == ["--browse"]:
        return browse(sys.argv[2])
    url = sys.argv[-1]
    with tempfile.TemporaryDirectory() as tmp:
        config, project = Path(tmp) / "config", Path(tmp) / "project"
        config.mkdir()
        project.mkdir()
        scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
        entry: dict[str, object] = {"type": "http", "url": url, "elicitation": "accept-defaults"}
        oauth = oauth_entry(scenario, context, url) if scenario.startswith("auth/") else {}
        if oauth:
            entry["oauth"] = oauth
        settings = {
            "mcpServers": {"conformance": entry},
            "permissions": {"allow": ["conformance:*"]},
        }
        (config / "settings.json").write_text(json.dumps(settings))
        env = {
            **os.environ,
            "CODINGCODE_CONFIG_DIR": str(config),
            "CODINGCODE_STATE_DIR": str(Path(tmp) / "state"),
            "BROWSER": f"{sys.executable} {Path(__file__).resolve()} --browse %s",
        }
        if oauth and oauth.get("grant_type", "authorization_code") == "authorization_code":
            login(project, env)  # (the grants without a person need no login)
        known = {"tools_call": ["add_numbers"], "sse-retry": ["test_reconnection"]}
        if scenario in known:  # one process: `codingcode tool` connects, lists and calls
            return call_tools(known[scenario], project, env)
        listed = subprocess.run(
            [CODINGCODE, "mcp", "list", "--json", "--project", str(project)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        print(listed.stdout[-2000:], listed.stderr[-2000:], file=sys.stderr)
        try:
            servers = json.loads(listed.stdout)
        except ValueError:
            return 1
        tools: list[str] = []
        for server in servers if isinstance(servers, list) else servers.get("servers", []):
            tools += [
                t if isinstance(t, str) else t.get("name", "") for t in server.get("tools", [])
            ]
        return call_tools([name.split(":", 1)[-1] for name in tools], project, env)


def login(project: Path, env: dict[str, str]) -> bool:
    done = subprocess.run(
        [CODINGCODE, "mcp", "login", "conformance", "--timeout", "60", "--project", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
    return done.returncode == 0


def call_tools(names: list[str], project: Path, env: dict[str, str]) -> int:
    for short in names:
        args = {"a": 5, "b": 3} if short == "add_numbers" else {}
        for attempt in range(2):
            called = subprocess.run(
                [
                    CODINGCODE,
                    "tool",
                    f"conformance:{short}",
                    json.dumps(args),
                    "--project",
                    str(project),
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
            print(called.stdout[-2000:], called.stderr[-2000:], file=sys.stderr)
            # A step-up: the session asked for a new login (with more permissions).
            if attempt or "codingcode mcp login" not in called.stderr + called.stdout:
                break
            if not login(project, env):
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
