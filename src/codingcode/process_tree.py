"""A process tree, found and signalled as a whole, and waited for until it is gone.

The tree of a launched command is every process below its launcher by parent links in
``/proc`` (a sandbox starts the command in a new session, and a command may ``setsid`` its
children, so its process group alone misses them). Three races make a plain "list, then
signal" lose processes:

- the launcher may be creating a child while the tree is listed: the child is missed, the
  launcher dies of the signal, the child is re-parented away and never found again. The
  launcher is therefore stopped (``SIGSTOP``) before the tree is listed: a stopped process
  creates no children, so the list is complete. It is continued after the signal.
- a bubblewrap launcher's first child is the init of the sandbox's pid namespace; an init
  ignores ``SIGTERM`` from outside its namespace, and its die-with-parent is not armed in the
  first milliseconds. Every pid ever listed is kept (``known``) and signalled again by the
  final ``SIGKILL``, which reaches an init whatever it is doing and ends its whole namespace.
- signalled one by one, a shell whose child was signalled first may see it end and start its
  next command before its own signal lands. The process group is signalled first, at once,
  and the rest parents before children.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

#: How long the launcher is given to stop before the tree is listed anyway.
STOP_WAIT_S = 1.0


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (by parent links in /proc), nearest first."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is not None:
            with contextlib.suppress(IndexError, ValueError):
                children.setdefault(int(stat[1]), []).append(int(entry.name))
    found: list[int] = []
    queue = [pid]
    while queue:
        for child in children.get(queue.pop(0), []):
            if child not in found:
                found.append(child)
                queue.append(child)
    return found


def signal_tree(root: int, sig: int, known: set[int], *, reaped: bool = False) -> set[int]:
    """Signal the launcher ``root``, its process group and every process below it; returns
    ``known`` with the pids found this time added.

    ``reaped``: the launcher has been waited for, so its pid may belong to another process
    by now: it is neither stopped nor searched below, and only its process group (whose id
    stays taken while one member lives) and ``known`` are signalled.
    """
    stopped = not reaped and _stop(root)
    found = [] if reaped else descendants(root)
    # The group at once first (the kernel signals all its members together: none of them
    # sees another end and reacts, say by starting the next command of a script), then the
    # others, each parent before its children.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(root, sig)
    for pid in [*found, *(known - set(found))]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    if stopped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(root, signal.SIGCONT)
    return known | set(found)


def wait_gone(pids: set[int], timeout_s: float) -> set[int]:
    """Wait until none of ``pids`` runs (gone, or a zombie); returns those still running."""
    deadline = time.monotonic() + timeout_s
    left = {pid for pid in pids if _running(pid)}
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = {pid for pid in left if _running(pid)}
    return left


def _stop(pid: int) -> bool:
    """Stop ``pid`` and wait until it is stopped (or gone); whether it was signalled."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except (ProcessLookupError, PermissionError):
        return False
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        stat = _stat(pid)
        if stat is None or stat[0] in (b"T", b"t", b"Z", b"X"):
            break
        time.sleep(0.001)
    return True


def _running(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] not in (b"Z", b"X")


def _stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or ``None``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: fields start after the last ")".
    return stat[stat.rfind(b")") + 2 :].split()
