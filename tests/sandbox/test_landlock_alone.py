"""The Landlock backend where the kernel refuses namespaces: Landlock and seccomp alone.

What that layer gives is checked by escaping; what it cannot give is pinned down, so the
docs/sandbox.md's and `sandbox status`'s account of it stays true.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from codingcode.sandbox.policy import BackendChoice, SandboxPolicy
from codingcode.sandbox.probes import check_guarantees
from codingcode.sandbox.service import SandboxService

from .conftest import Box, needs_landlock, out

pytestmark = needs_landlock
PY = sys.executable


@pytest.fixture
def box(project: Path) -> Iterator[Box]:
    policy = SandboxPolicy(project, backend=BackendChoice.LANDLOCK)
    service = SandboxService.from_policy(policy)
    service.landlock_namespaces = False
    yield Box(service, project)
    service.close()


def test_what_landlock_alone_gives(box: Box) -> None:
    report = anyio.run(check_guarantees, box.service)
    assert {c.key: c.enforced for c in report.checks} == {
        "writes": True,
        "protected": False,  # no read-only hole in a writable tree
        "network": True,
        "privileges": True,
        "secrets": False,  # /etc/passwd stays the host's
        "tree": False,  # only the process group is killed
    }, [c.details for c in report.checks]


def test_writes_outside_fail(box: Box, outside: Path) -> None:
    target = outside / "t.txt"
    target.write_text("original")
    (box.project / "link").symlink_to(target)
    result = box.run(f"echo x > {target}; echo x > link; {PY} -c \"open('{target}', 'w')\"")
    assert result.exit_code != 0
    assert target.read_text() == "original"
    ok = box.run("echo fine > inside.txt && echo tmp > $TMPDIR/x && cat $TMPDIR/x")
    assert ok.exit_code == 0, out(ok)


def test_tcp_udp_and_unix_are_refused(box: Box, outside: Path) -> None:
    with (
        socket.socket() as tcp,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
        socket.socket(socket.AF_UNIX) as unix,
    ):
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        tcp.setblocking(False)
        udp.bind(("127.0.0.1", 0))
        udp.setblocking(False)
        unix.bind(str(outside / "s.sock"))
        unix.listen()
        unix.setblocking(False)
        result = box.run(
            f"echo x > /dev/tcp/127.0.0.1/{tcp.getsockname()[1]};"
            f"echo x > /dev/udp/127.0.0.1/{udp.getsockname()[1]};"
            f"{PY} -c \"import socket; socket.socket(socket.AF_UNIX).connect('{outside}/s.sock')\""
        )
        assert result.exit_code != 0
        for sock in (tcp, unix):
            with pytest.raises(BlockingIOError):
                sock.accept()
        with pytest.raises(BlockingIOError):
            udp.recv(8)


def test_planted_key_and_shadow_are_unreadable(box: Box, outside: Path) -> None:
    home = outside / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    result = box.run("cat ~/.ssh/id_rsa /etc/shadow", env={"HOME": str(home)})
    assert "PRIVATE KEY" not in result.stdout.text() and "root:" not in result.stdout.text()


def test_masks_without_a_mount_namespace(box: Box, outside: Path) -> None:
    """Landlock alone hides masked paths outside writable directories; inside them (the
    project's .env) it cannot, and `sandbox status` says so plainly."""
    home = outside / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("aws-marker")
    (home / ".npmrc").write_text("npm-marker")
    (box.project / ".env").write_text("env-marker")
    result = box.run(
        f"cat {home}/.aws/credentials {home}/.npmrc; cat .env", env={"HOME": str(home)}
    )
    text = out(result)
    assert "aws-marker" not in text and "npm-marker" not in text
    assert "env-marker" in text  # pinned down: the limit the status reports
    report = anyio.run(check_guarantees, box.service)
    env = next(m for m in report.masks if m.pattern == "**/.env")
    assert env.enforced is False
    assert any("NOT masked here" in line for line in report.limits)
    ssh = next(m for m in report.masks if m.pattern == "~/.ssh")
    assert ssh.enforced is True
