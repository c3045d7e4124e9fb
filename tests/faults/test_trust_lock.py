"""The trust records' lock when another process holds it and hangs (issue 19, failure 15's
kin): the wait is bounded and ends in one clear line; nothing is changed meanwhile. The
old wait was a blocking ``flock`` with no end (`codingcode trust` hung for ever)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codingcode import trust as trust_module
from codingcode.trust import TrustStore, TrustStoreError

HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


@pytest.fixture
def store(tmp_path: Path) -> TrustStore:
    return TrustStore(tmp_path / "state" / "trust.json")


def _hold(store: TrustStore, seconds: float) -> subprocess.Popen[str]:
    store.path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store.path.with_suffix(".lock")), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


@pytest.fixture
def held(store: TrustStore) -> Iterator[subprocess.Popen[str]]:
    proc = _hold(store, 60)
    yield proc
    proc.kill()
    proc.wait()


def test_a_hung_holder_costs_a_bounded_wait_and_one_line(
    store: TrustStore, held: subprocess.Popen[str], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trust_module, "LOCK_TIMEOUT_S", 1.0)
    start = time.monotonic()
    with pytest.raises(TrustStoreError) as err:
        store.trust(project)
    assert time.monotonic() - start < 10
    message = err.value.message
    assert "locked" in message and "nothing was changed" in message and "\n" not in message
    assert not store.path.exists()  # nothing written


def test_the_lock_is_taken_once_the_holder_lets_go(store: TrustStore, project: Path) -> None:
    proc = _hold(store, 1.0)
    try:
        (project / ".codingcode").mkdir(exist_ok=True)
        (project / ".codingcode" / "settings.json").write_text("{}")
        store.trust(project)  # waits the second out, then writes
        assert store.path.exists()
    finally:
        proc.kill()
        proc.wait()
