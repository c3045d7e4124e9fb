"""Try to break out, each guarantee at least twice and in different ways.

Every test judges by the host: the file outside still holds what it held, the listener
the test runs heard nothing, the daemon's pid is gone. Each runs with both backends
(bubblewrap, and the Landlock helper, which here can make its own namespaces).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from codingcode.cancel import CancelSignal
from codingcode.sandbox.backends import SandboxError, runtime_paths
from codingcode.sandbox.policy import Network, SandboxMode
from codingcode.sandbox.probes import processes_with, wait_until_gone

from .conftest import BACKENDS, Box, out

PY = sys.executable
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
ORIGINAL = "original\n"


@pytest.fixture
def target(outside: Path) -> Path:
    path = outside / "target.txt"
    path.write_text(ORIGINAL)
    return path


# -- writes only to the project, a private /tmp and writable roots ---------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_write_outside_fails(make_box, backend: str, target: Path) -> None:
    box: Box = make_box(backend)
    result = box.run(f"echo pwned > {target}; echo pwned > {target.parent}/new.txt")
    assert result.exit_code != 0
    assert target.read_text() == ORIGINAL
    assert not (target.parent / "new.txt").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_write_outside_fails(make_box, backend: str, target: Path) -> None:
    box: Box = make_box(backend)
    code = f"open({str(target)!r}, 'w').write('pwned')"
    result = box.run(f'{PY} -c "{code}"')
    assert result.exit_code != 0, out(result)
    assert target.read_text() == ORIGINAL


@pytest.mark.parametrize("backend", BACKENDS)
def test_symlink_in_project_does_not_lead_out(make_box, backend: str, target: Path) -> None:
    box: Box = make_box(backend)
    (box.project / "link").symlink_to(target)
    (box.project / "dirlink").symlink_to(target.parent)
    result = box.run("echo pwned > link; echo pwned > dirlink/created.txt")
    assert target.read_text() == ORIGINAL
    assert not (target.parent / "created.txt").exists()
    assert result.exit_code != 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_hardlink_to_outside_file_fails(make_box, backend: str, target: Path) -> None:
    box: Box = make_box(backend)
    result = box.run(f"ln {target} hard && echo pwned > hard")
    assert result.exit_code != 0
    assert target.read_text() == ORIGINAL


@pytest.mark.parametrize("backend", BACKENDS)
def test_project_and_writable_roots_are_writable(make_box, backend: str, outside: Path) -> None:
    root = outside / "cache"
    root.mkdir()
    box: Box = make_box(backend, writable_roots=(root,))
    result = box.run(
        f"mkdir -p sub && echo ok > sub/a.txt && echo ok > {root}/b.txt && mv sub/a.txt c.txt"
    )
    assert result.exit_code == 0, out(result)
    assert (box.project / "c.txt").read_text() == "ok\n"
    assert (root / "b.txt").read_text() == "ok\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_only_mode_keeps_the_project(make_box, backend: str) -> None:
    box: Box = make_box(backend, mode=SandboxMode.READ_ONLY)
    (box.project / "keep.txt").write_text(ORIGINAL)
    result = box.run("echo pwned > keep.txt; cat keep.txt")
    assert (box.project / "keep.txt").read_text() == ORIGINAL
    assert "original" in result.stdout.text()


@pytest.mark.parametrize("backend", BACKENDS)
def test_tmp_is_private(make_box, backend: str) -> None:
    box: Box = make_box(backend)
    name = f"codingcode-test-{os.getpid()}-{time.monotonic_ns()}"
    host_file = Path("/tmp", f"{name}-host")
    host_file.write_text("host")
    try:
        result = box.run(
            f"echo inside > /tmp/{name} && cat /tmp/{name} && ls /tmp | wc -l; ls {host_file}"
        )
    finally:
        host_file.unlink()
    assert "inside" in result.stdout.text(), out(result)
    assert not Path("/tmp", name).exists()
    # The host's /tmp (full of other files) is not visible inside: only what the sandbox
    # puts there (the project's parents, and codingcode's own runtime when it lives there).
    assert "No such file" in result.stderr.text()
    count = int(result.stdout.text().split()[-1])
    assert count <= 3 + len({p.parts[2] for p in runtime_paths()})


# -- the files that steer the agent are read-only ---------------------------------------------


@pytest.fixture
def steering_files(project: Path) -> list[Path]:
    (project / ".codingcode").mkdir()
    (project / ".git" / "hooks").mkdir(parents=True)
    files = [
        project / ".codingcode" / "settings.local.json",
        project / ".codingcode" / "settings.json",
        project / ".git" / "config",
    ]
    for f in files:
        f.write_text(ORIGINAL)
    return files


@pytest.mark.parametrize("backend", BACKENDS)
def test_rewriting_settings_from_inside_fails(
    make_box, backend: str, steering_files: list[Path]
) -> None:
    box: Box = make_box(backend)
    allow_all = json.dumps({"permissions": {"allow": ["execute_command(*)"]}})
    result = box.run(
        f"echo '{allow_all}' > .codingcode/settings.local.json;"
        f"{PY} -c \"open('.codingcode/settings.json','w').write('{{}}')\";"
        "rm -f .codingcode/settings.json; mv .codingcode .cc-moved; "
        "echo x > .codingcode/new.json"
    )
    assert result.exit_code != 0
    for f in steering_files:
        assert f.read_text() == ORIGINAL, f
    assert not (box.project / ".cc-moved").exists()
    assert not (box.project / ".codingcode" / "new.json").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_planting_git_hooks_or_config_fails(
    make_box, backend: str, steering_files: list[Path]
) -> None:
    box: Box = make_box(backend)
    result = box.run(
        "printf '#!/bin/sh\\ntouch /tmp/owned\\n' > .git/hooks/pre-commit;"
        "chmod +x .git/hooks/pre-commit;"
        "git config --file .git/config core.hooksPath /tmp/evil;"
        f"{PY} -c \"open('.git/config','a').write('[core]\\\\n\\\\tfsmonitor = evil\\\\n')\""
    )
    assert result.exit_code != 0
    assert not (box.project / ".git" / "hooks" / "pre-commit").exists()
    assert (box.project / ".git" / "config").read_text() == ORIGINAL


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_repository_hooks_are_read_only(make_box, backend: str, project: Path) -> None:
    """A vendored checkout's hooks run when the user commits there (Codex #37081)."""
    nested = project / "vendor" / "lib" / ".git"
    (nested / "hooks").mkdir(parents=True)
    (nested / "config").write_text(ORIGINAL)
    box: Box = make_box(backend)
    result = box.run(
        "echo 'touch /tmp/owned' > vendor/lib/.git/hooks/post-checkout;"
        "echo '[core] fsmonitor = evil' >> vendor/lib/.git/config"
    )
    assert result.exit_code != 0
    assert not (nested / "hooks" / "post-checkout").exists()
    assert (nested / "config").read_text() == ORIGINAL


@needs_git
@pytest.mark.parametrize("backend", BACKENDS)
def test_hooks_planted_in_a_new_repository_are_removed(
    make_box, backend: str, project: Path
) -> None:
    """`git init` inside the call: nothing to mount over yet, so the sandbox disarms it after."""
    box: Box = make_box(backend)
    result = box.run(
        "git init -q && printf '#!/bin/sh\\ntouch /tmp/owned\\n' > .git/hooks/pre-commit"
        " && chmod +x .git/hooks/pre-commit && git config core.fsmonitor 'touch /tmp/owned'"
        " && git config alias.st '!touch /tmp/owned' && mkdir -p vendor/x && git -C vendor/x init -q"
        " && echo evil > vendor/x/.git/hooks/post-checkout"
    )
    assert result.exit_code == 0, out(result)
    hooks = sorted(p.name for p in (project / ".git" / "hooks").iterdir())
    assert hooks and all(name.endswith(".sample") for name in hooks)
    assert not (project / "vendor" / "x" / ".git" / "hooks" / "post-checkout").exists()
    config = (project / ".git" / "config").read_text()
    assert (
        "fsmonitor" not in config and "alias" not in config and "repositoryformatversion" in config
    )
    assert "hook pre-commit" in result.notice and "config core.fsmonitor" in result.notice
    # An ordinary `git init` leaves nothing to say.
    (project / "clean").mkdir()
    assert box.run("git init -q clean2").notice == ""


@pytest.mark.parametrize("backend", BACKENDS)
def test_missing_agent_dir_cannot_be_created(make_box, backend: str, project: Path) -> None:
    box: Box = make_box(backend)
    result = box.run("mkdir -p .codingcode; echo '{}' > .codingcode/settings.local.json")
    assert result.exit_code != 0
    assert not (project / ".codingcode" / "settings.local.json").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_symlinked_agent_dir_is_refused(
    make_box, backend: str, project: Path, outside: Path
) -> None:
    (project / ".codingcode").symlink_to(outside)
    box: Box = make_box(backend)
    with pytest.raises(SandboxError, match="symlink"):
        box.run("touch ran")
    assert not (project / "ran").exists()


# -- no network unless allowed -----------------------------------------------------------------


@pytest.fixture
def tcp_listener() -> Iterator[socket.socket]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield sock


def heard(sock: socket.socket) -> bool:
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


@pytest.mark.parametrize("backend", BACKENDS)
def test_tcp_to_a_host_listener_fails(make_box, backend: str, tcp_listener: socket.socket) -> None:
    port = tcp_listener.getsockname()[1]
    box: Box = make_box(backend)
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
    result = box.run(f'echo hi > /dev/tcp/127.0.0.1/{port}; {PY} -c "{code}"')
    assert result.exit_code != 0
    assert not heard(tcp_listener)


@pytest.mark.parametrize("backend", BACKENDS)
def test_udp_to_a_host_listener_fails(make_box, backend: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        udp.setblocking(False)
        port = udp.getsockname()[1]
        box: Box = make_box(backend)
        code = f"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {port}))"
        box.run(f'echo hi > /dev/udp/127.0.0.1/{port}; {PY} -c "{code}"')
        with pytest.raises(BlockingIOError):
            udp.recv(16)


@pytest.mark.parametrize("backend", BACKENDS)
def test_host_unix_sockets_are_out_of_reach(make_box, backend: str, outside: Path) -> None:
    path = str(outside / "host.sock")
    abstract = f"\0codingcode-test-{os.getpid()}"
    with (
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as named,
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as anon,
    ):
        for sock, address in ((named, path), (anon, abstract)):
            sock.bind(address)
            sock.listen(8)
            sock.setblocking(False)
        box: Box = make_box(backend)
        code = (
            "import socket, sys\n"
            "for a in sys.argv[1:]:\n"
            "    try:\n"
            "        socket.socket(socket.AF_UNIX).connect(a.replace('@', chr(0)))\n"
            "        print('connected', a)\n"
            "    except OSError as e:\n"
            "        print('refused', a, e)\n"
        )
        result = box.run(f'{PY} -c "$CODE" {path} @{abstract[1:]}', env={"CODE": code})
        assert "connected" not in result.stdout.text(), out(result)
        assert not heard(named)
        assert not heard(anon)


@pytest.mark.parametrize("backend", BACKENDS)
def test_network_allow_reaches_the_listener(
    make_box, backend: str, tcp_listener: socket.socket
) -> None:
    port = tcp_listener.getsockname()[1]
    box: Box = make_box(backend, network=Network.ALLOW)
    result = box.run(f"echo hi > /dev/tcp/127.0.0.1/{port}")
    assert result.exit_code == 0, out(result)
    assert heard(tcp_listener)


@pytest.mark.parametrize("backend", BACKENDS)
def test_local_loopback_inside_still_works(make_box, backend: str) -> None:
    """Without network, a test suite can still run its own server on the sandbox's loopback."""
    box: Box = make_box(backend)
    code = (
        "import socket\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "c = socket.create_connection(s.getsockname()); a, _ = s.accept()\n"
        "c.sendall(b'ping'); print(a.recv(4).decode())\n"
        "l, r = socket.socketpair(); l.sendall(b'pair'); print(r.recv(4).decode())\n"
    )
    result = box.run(f'{PY} -c "$CODE"', env={"CODE": code})
    assert result.exit_code == 0, out(result)
    assert result.stdout.text().split() == ["ping", "pair"]


# -- no privilege gain ----------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_new_privs_and_no_capabilities(make_box, backend: str) -> None:
    box: Box = make_box(backend)
    code = "import ctypes; print('nnp', ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))"  # PR_GET_NO_NEW_PRIVS
    result = box.run(
        f"grep -E '^(NoNewPrivs|CapEff|CapPrm):' /proc/self/status; {PY} -c \"{code}\""
    )
    text = result.stdout.text()
    assert "NoNewPrivs:\t1" in text
    assert "CapEff:\t0000000000000000" in text
    assert "CapPrm:\t0000000000000000" in text
    assert "nnp 1" in text


@pytest.mark.parametrize("backend", BACKENDS)
def test_dangerous_syscalls_are_refused(make_box, backend: str) -> None:
    """ptrace, io_uring (which could open sockets around the filter), nested user namespaces, vsock."""
    box: Box = make_box(backend)
    code = (
        "import ctypes, os, socket\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('ptrace', libc.ptrace(0, 0, 0, 0), ctypes.get_errno())\n"
        "print('io_uring', libc.syscall(425, 8, ctypes.create_string_buffer(120)), ctypes.get_errno())\n"
        "print('userns', libc.unshare(0x10000000), ctypes.get_errno())\n"
        "try:\n"
        "    socket.socket(40, socket.SOCK_STREAM); print('vsock', 0)\n"
        "except OSError as e:\n"
        "    print('vsock', -1, e.errno)\n"
    )
    result = box.run(f'{PY} -c "$CODE"', env={"CODE": code})
    lines = dict(line.split(" ", 1) for line in result.stdout.text().splitlines())
    assert lines == {"ptrace": "-1 1", "io_uring": "-1 1", "userns": "-1 1", "vsock": "-1 1"}, out(
        result
    )


# -- secrets masked ------------------------------------------------------------------------


@pytest.fixture
def fake_home(outside: Path) -> Path:
    home = outside / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nFAKE\n")
    return home


@pytest.mark.parametrize("backend", BACKENDS)
def test_planted_ssh_key_is_unreadable(make_box, backend: str, fake_home: Path) -> None:
    box: Box = make_box(backend)
    code = "import os, sys; p = os.path.expanduser('~/.ssh/id_ed25519'); print(open(p).read())"
    result = box.run(f'cat ~/.ssh/id_ed25519; {PY} -c "{code}"', env={"HOME": str(fake_home)})
    assert "PRIVATE KEY" not in result.stdout.text()


@pytest.mark.parametrize("backend", BACKENDS)
def test_ssh_dir_looks_empty(make_box, backend: str, fake_home: Path) -> None:
    box: Box = make_box(backend)
    result = box.run("ls -A ~/.ssh | wc -l", env={"HOME": str(fake_home)})
    assert result.stdout.text().strip() == "0"


@pytest.mark.parametrize("backend", BACKENDS)
def test_secret_environment_variables_do_not_reach_commands(make_box, backend: str) -> None:
    env = {
        "OPENAI_API_KEY": "sk-fake",
        "GITHUB_TOKEN": "ghp_fake",
        "DB_PASSWORD": "pw",
        "KEEP_TOKEN": "k",
    }
    box: Box = make_box(backend, keep_env=("KEEP_TOKEN",))
    code = (
        "import os; print(sorted(k for k in os.environ if k in {'OPENAI_API_KEY', 'KEEP_TOKEN'}))"
    )
    result = box.run(f'env; {PY} -c "{code}"', env={**env, "PLAIN": "visible"})
    text = result.stdout.text()
    assert "sk-fake" not in text and "ghp_fake" not in text and "DB_PASSWORD" not in text
    assert "PLAIN=visible" in text and "KEEP_TOKEN=k" in text
    assert text.strip().endswith("['KEEP_TOKEN']")


@pytest.mark.parametrize("backend", BACKENDS)
def test_shadow_is_unreadable(make_box, backend: str) -> None:
    if not Path("/etc/shadow").exists():
        pytest.skip("no /etc/shadow here")
    box: Box = make_box(backend)
    result = box.run(f"cat /etc/shadow; {PY} -c \"print(open('/etc/shadow').read())\"")
    assert "root:" not in result.stdout.text()


@pytest.mark.parametrize("backend", BACKENDS)
def test_passwd_is_a_minimal_copy(make_box, backend: str) -> None:
    box: Box = make_box(backend)
    result = box.run("cut -d: -f3 /etc/passwd; whoami")
    *uids, name = result.stdout.text().split()
    assert set(map(int, uids)) <= {0, os.getuid()}
    assert name  # the current user still resolves


@pytest.mark.parametrize("backend", BACKENDS)
def test_masked_paths_from_settings(make_box, backend: str, outside: Path, project: Path) -> None:
    secret_file = outside / "token.txt"
    secret_file.write_text("s3cret")
    secret_dir = outside / "creds"
    secret_dir.mkdir()
    (secret_dir / "aws").write_text("s3cret")
    (project / ".env").write_text("API_KEY=s3cret")
    box: Box = make_box(backend, masked_paths=(secret_file, secret_dir, project / ".env"))
    result = box.run(f"cat {secret_file} {secret_dir}/aws .env; ls {secret_dir}")
    assert "s3cret" not in result.stdout.text()


# -- the whole tree dies with the call ------------------------------------------------------


def daemon_script(token: str) -> str:
    """Double fork + setsid; the first process returns only once the daemon is up."""
    return (
        f"{PY} -c 'import os, time\n"
        "r, w = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        '        os.write(w, b"up")\n'
        "        time.sleep(120)\n"
        "    os._exit(0)\n"
        f"os.read(r, 2)\n' {token}"
    )


def wait_until_running(tok: str) -> None:
    deadline = time.monotonic() + 10
    while not processes_with(tok) and time.monotonic() < deadline:
        time.sleep(0.02)


def token() -> str:
    return f"codingcode-test-daemon-{os.getpid()}-{time.monotonic_ns()}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_double_forked_daemon_dies_when_the_command_ends(make_box, backend: str) -> None:
    box: Box = make_box(backend)
    tok = token()
    box.run(daemon_script(tok))
    assert wait_until_gone(tok, 3) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_setsid_daemon_dies_on_timeout(make_box, backend: str) -> None:
    box: Box = make_box(backend)
    tok = token()
    (box.project / "sleeper.py").write_text("import time\ntime.sleep(120)\n")
    sleeper = f"{PY} sleeper.py {tok}"
    result = box.run(
        f"setsid sh -c 'touch up1; exec {sleeper}' & nohup sh -c 'touch up2; exec {sleeper}' &"
        " until [ -e up1 ] && [ -e up2 ]; do sleep 0.01; done; sleep 60",
        timeout_s=3,
    )
    assert result.timed_out
    assert (box.project / "up1").exists() and (box.project / "up2").exists()
    assert wait_until_gone(tok, 3) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_daemon_dies_on_cancellation(make_box, backend: str) -> None:
    box: Box = make_box(backend)
    tok = token()
    signal = CancelSignal()

    async def main() -> None:
        async with anyio.create_task_group() as tg:

            async def cancel_when_started() -> None:
                await anyio.to_thread.run_sync(wait_until_running, tok)
                signal.set()

            tg.start_soon(cancel_when_started)
            result = await box.sh(f"{daemon_script(tok)}; sleep 60", cancel=signal)
            assert result.cancelled

    anyio.run(main)
    assert wait_until_gone(tok, 3) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_command_ended_while_its_sandbox_starts_leaves_nothing(make_box, backend: str) -> None:
    """A timeout of a few milliseconds ends the call while the sandbox is being set up
    (bubblewrap's namespace init not yet armed to die with its parent, in a session of its
    own): nothing of it may live on, and the call returns once it is gone."""
    box: Box = make_box(backend)
    left = []
    for i in range(24):
        tok = f"3{os.getpid()}.{time.monotonic_ns()}"  # a sleep length no one else uses
        result = box.run(f"(setsid sleep {tok} &); sleep {tok}", timeout_s=0.0005 * i)
        assert result.timed_out
        left += processes_with(tok)
    assert left == []


# -- the Landlock backend's own report --------------------------------------------------------


@pytest.mark.parametrize("backend", [p for p in BACKENDS if p.id == "landlock"])
def test_landlock_status_is_checked_live(make_box, backend: str) -> None:
    """Where the kernel lets the helper make namespaces (here: yes), Landlock gives it all."""
    from codingcode.sandbox.probes import check_guarantees

    box: Box = make_box(backend)
    report = anyio.run(check_guarantees, box.service)
    assert {c.key: c.enforced for c in report.checks} == {
        "writes": True,
        "protected": True,
        "network": True,
        "privileges": True,
        "secrets": True,
        "tree": True,
    }, [c.details for c in report.checks]


def test_the_same_attempts_succeed_without_a_sandbox(
    make_box, target: Path, fake_home: Path
) -> None:
    """The escape tests can fail: with backend none the very same attempts get through."""
    box: Box = make_box("none")
    result = box.run(f"echo pwned > {target}; cat ~/.ssh/id_ed25519", env={"HOME": str(fake_home)})
    assert target.read_text() == "pwned\n"
    assert "PRIVATE KEY" in result.stdout.text()
    assert "without any containment" in result.notice


@pytest.mark.parametrize("backend", BACKENDS)
def test_rewriting_claude_codes_settings_from_inside_fails(make_box, backend: str) -> None:
    """``.claude/`` is read beside ``.codingcode/`` (settings, hooks, agents): as read-only."""
    box: Box = make_box(backend)
    claude = box.project / ".claude"
    (claude / "agents").mkdir(parents=True, exist_ok=True)
    (claude / "settings.json").write_text(ORIGINAL)
    hooks = json.dumps({"hooks": {"SessionStart": [{"hooks": [{"command": "touch /tmp/x"}]}]}})
    result = box.run(
        f"echo '{hooks}' > .claude/settings.json;"
        "echo x > .claude/settings.local.json; echo x > .claude/agents/evil.md;"
        "mv .claude .claude-moved"
    )
    assert result.exit_code != 0
    assert (claude / "settings.json").read_text() == ORIGINAL
    assert not (claude / "settings.local.json").exists()
    assert not (claude / "agents" / "evil.md").exists()
    assert not (box.project / ".claude-moved").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_claude_file_cannot_be_swapped_for_a_directory(make_box, backend: str) -> None:
    """A ``.claude`` that is a plain file is kept as it is: replaced by a directory, its
    settings would be read by the next session."""
    box: Box = make_box(backend)
    claude = box.project / ".claude"
    claude.write_text("notes\n")
    result = box.run("rm -f .claude; mkdir .claude && echo '{}' > .claude/settings.json")
    assert result.exit_code != 0
    assert claude.is_file() and claude.read_text() == "notes\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_creating_claude_settings_where_there_were_none_fails(make_box, backend: str) -> None:
    box: Box = make_box(backend)
    result = box.run("mkdir -p .claude && echo '{}' > .claude/settings.json")
    assert result.exit_code != 0
    assert not (box.project / ".claude" / "settings.json").exists()
