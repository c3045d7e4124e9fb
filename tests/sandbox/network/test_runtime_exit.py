"""The proxy's thread never keeps codingcode alive: a session that used the limited network
and never closed its sandbox (the app did not, a sub-agent does not) still exits at once.
It hung before: anyio's portal thread is joined at exit, and its context manager, left to the
garbage collector, waited on a loop that had already stopped."""

from __future__ import annotations

import subprocess
import sys
import time

SCRIPT = """
import gc, sys
from codingcode.sandbox.network.domains import DomainPolicy
from codingcode.sandbox.network.runtime import ProxyRuntime

runtime = ProxyRuntime()
call = runtime.open_call(DomainPolicy(allowed=("example.test",)), "c1")
if sys.argv[1] == "collected":
    del runtime, call
    gc.collect()
print("done", flush=True)
"""


def _exits(mode: str) -> None:
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=60
    )
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
    assert took < 20, took


def test_an_unclosed_proxy_does_not_hold_the_exit() -> None:
    _exits("kept")


def test_a_collected_proxy_does_not_hold_the_exit() -> None:
    _exits("collected")


def test_close_ends_the_thread_and_is_idempotent() -> None:
    import threading

    from codingcode.sandbox.network.domains import DomainPolicy
    from codingcode.sandbox.network.runtime import ProxyRuntime

    def proxy_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "codingcode-network-proxy"}

    before = proxy_threads()  # (another test's runtime on this worker may still be ending)
    runtime = ProxyRuntime()
    call = runtime.open_call(DomainPolicy(), "c1")
    assert runtime.running()
    ours = proxy_threads() - before
    assert len(ours) == 1
    call.finish()
    runtime.close()
    runtime.close()
    assert not runtime.running()
    assert not any(t.is_alive() for t in ours)
