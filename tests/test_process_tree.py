"""A process tree: listed while its launcher is stopped, signalled whole, waited for."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from codingcode.process_tree import descendants, signal_tree, wait_gone


def state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    return stat[stat.rfind(b")") + 2 :].split()[0].decode()


def test_the_tree_is_signalled_whole_and_waited_for() -> None:
    # The launcher handles USR1 and runs on; its children, in their own sessions, die of it.
    launcher = (
        "import signal, subprocess, time\n"
        "signal.signal(signal.SIGUSR1, lambda *_: None)\n"
        "kids = [subprocess.Popen(['sleep', '300'], start_new_session=True) for _ in '12']\n"
        "time.sleep(300)\n"
    )
    root = subprocess.Popen([sys.executable, "-c", launcher], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(descendants(root.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        children = set(descendants(root.pid))
        assert len(children) == 2
        tree = signal_tree(root.pid, signal.SIGUSR1, set())
        assert tree == children
        assert wait_gone(tree, 10) == set()
        # Stopped to be listed, the launcher is continued afterwards: it runs on.
        assert root.poll() is None
        assert state(root.pid) != "T"
    finally:
        signal_tree(root.pid, signal.SIGKILL, set())
        root.wait(10)


def test_known_pids_are_signalled_once_the_launcher_is_reaped() -> None:
    orphan = subprocess.Popen(["sleep", "300"], start_new_session=True)
    root = subprocess.Popen(["true"], start_new_session=True)
    root.wait(10)
    assert signal_tree(root.pid, signal.SIGKILL, {orphan.pid}, reaped=True) == {orphan.pid}
    assert orphan.wait(10) == -signal.SIGKILL
    assert wait_gone({orphan.pid}, 1) == set()
