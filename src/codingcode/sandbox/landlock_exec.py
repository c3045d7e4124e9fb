"""The re-exec'd helper that confines one command with Landlock and seccomp, then execs it.

Run as ``python -I -S -m codingcode.sandbox.landlock_exec [net=1] [mask=P]... [write=P]...
-- COMMAND...``. It is a fresh, single-threaded process, so nothing of the agent (threads, locks, open files) can
interfere with the restriction — unlike ``preexec_fn`` in a threaded host.

Steps:
1. new namespaces where the kernel lets us make them: a PID namespace (when its first
   process dies the kernel kills every process left in it, also daemons that changed
   their session), without network a network namespace (no TCP/UDP to the host, the
   host's abstract unix sockets out of reach), and a mount namespace in which /tmp and
   /run become private, the agent's files read-only and secrets masked by mounts;
   unprivileged users get them inside a new user namespace;
2. a small init (PID 1 of that namespace) that dies with this helper
   (``PR_SET_PDEATHSIG``) and reaps orphans;
3. in the command's process: no_new_privs, every capability dropped, a Landlock domain
   (read everything but the masked paths, write only the writable roots, no TCP without
   network, no signals or abstract sockets out of the domain), the seccomp filter of
   :mod:`codingcode.sandbox.seccomp`; then exec.

Any failure in step 3 refuses the command (exit 126): the sandbox never runs a command
less confined than it was asked to.
"""

from __future__ import annotations

import os
import sys

from codingcode.sandbox import kernel, seccomp

EXIT_CANNOT_CONFINE = 126
#: SIGKILL on every Linux architecture (``signal`` would import ``enum``: slow for a helper).
_SIGKILL = 9
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")


class Spec:
    """What to confine to, parsed from ``key=value`` arguments (cheaper than json).

    ``masked`` paths become unreadable, ``writable`` ones writable. Where a mount
    namespace can be made, ``protect`` paths are bound read-only, ``/tmp`` and ``/run``
    become private, masked directories show ``empty``, masked files ``unreadable`` and
    ``/etc/passwd`` is replaced by ``passwd``. A call's approved exposures: ``hollow``
    masked directories show only the ``expose`` (read-only) and ``expose_write`` paths
    inside them; an exposed path that was a mask itself is shown as it is.
    """

    _LISTS = ("mask", "write", "protect", "hollow", "expose", "exposew")
    _FILES = ("empty", "unreadable", "passwd")

    def __init__(
        self,
        network: bool = False,
        masked: list[str] | None = None,
        writable: list[str] | None = None,
        protect: list[str] | None = None,
        files: dict[str, str] | None = None,
    ) -> None:
        self.network = network
        #: False: do not even try namespaces (Landlock and seccomp alone), as on kernels
        #: or containers that refuse them; the tests use it to check that path.
        self.namespaces = True
        self.masked = masked or []
        self.writable = writable or []
        self.protect = protect or []
        self.files = files or {}
        self.hollow: list[str] = []
        self.expose: list[str] = []
        self.expose_write: list[str] = []

    def to_args(self) -> list[str]:
        return [
            f"net={int(self.network)}",
            *([] if self.namespaces else ["ns=0"]),
            *(f"mask={p}" for p in self.masked),
            *(f"write={p}" for p in self.writable),
            *(f"protect={p}" for p in self.protect),
            *(f"hollow={p}" for p in self.hollow),
            *(f"expose={p}" for p in self.expose),
            *(f"exposew={p}" for p in self.expose_write),
            *(f"{k}={v}" for k, v in self.files.items()),
        ]

    @classmethod
    def from_args(cls, args: list[str]) -> Spec:
        spec = cls()
        lists = {
            "mask": spec.masked,
            "write": spec.writable,
            "protect": spec.protect,
            "hollow": spec.hollow,
            "expose": spec.expose,
            "exposew": spec.expose_write,
        }
        for arg in args:
            key, _, value = arg.partition("=")
            if key == "net":
                spec.network = value == "1"
            elif key == "ns":
                spec.namespaces = value == "1"
            elif key in lists:
                lists[key].append(value)
            elif key in cls._FILES:
                spec.files[key] = value
            else:
                raise ValueError(f"unknown helper argument {arg!r}")
        return spec


def read_rules(root: str, access: int, masked: set[str]) -> list[tuple[str, int]]:
    """Grant ``access`` on ``root`` except the masked paths beneath it.

    Landlock only adds rights, so "everything but X" is spelt out: every directory on the
    way to a masked path gets only the right to list it, and each of its other entries gets
    ``access`` in full. Symlinks get nothing: Landlock checks the resolved file, so a link
    is exactly as readable as its target's own place.
    """
    rules: list[tuple[str, int]] = []

    def visit(path: str) -> None:
        if path in masked:
            return
        prefix = path.rstrip("/") + "/"
        if not any(m.startswith(prefix) for m in masked):
            rules.append((path, access))
            return
        rules.append((path, kernel.FS_READ_DIR))
        try:
            entries = list(os.scandir(path))
        except OSError:
            return
        for entry in entries:
            if not entry.is_symlink():
                visit(entry.path)

    visit(root)
    return rules


def landlock_rules(spec: Spec, abi: int) -> list[tuple[str, int]]:
    """Read everything but the masks, write the writable roots, and the exposed paths.

    A mask inside a writable root is left to the mount view: Landlock only adds rights,
    and denying one file of a writable directory would also forbid reading any file
    created there later (``sandbox status`` says so when there is no mount view).
    """
    roots = [os.path.realpath(r) for r in spec.writable]
    masked = {
        os.path.realpath(p)
        for p in [*spec.masked, *spec.hollow]
        if os.path.lexists(p) and not any(_under(os.path.realpath(p), r) for r in roots)
    }
    write_access = kernel.fs_access_for_abi(abi)
    rules = read_rules("/", kernel.FS_READ, masked)
    for root in roots:
        rules += read_rules(root, write_access, masked)
    rules += [(p, kernel.FS_READ) for p in spec.expose]
    rules += [(p, write_access) for p in spec.expose_write]
    rules += [(d, kernel.FS_READ_FILE | kernel.FS_WRITE_FILE) for d in _DEVICES]
    return rules


def confine(spec: Spec, *, private_netns: bool) -> None:
    abi = kernel.landlock_abi()
    if abi < 1:
        raise OSError("Landlock is not available in this kernel")
    network = spec.network
    kernel.set_no_new_privs()
    kernel.drop_all_capabilities()
    scoped = kernel.SCOPE_SIGNAL | (0 if network else kernel.SCOPE_ABSTRACT_UNIX_SOCKET)
    # In a private network namespace TCP reaches only the sandbox's own loopback, so a
    # test suite's local server may bind and connect; without one, Landlock refuses TCP.
    kernel.landlock_restrict(
        abi=abi,
        rules=landlock_rules(spec, abi),
        handle_tcp=not network and not private_netns,
        scoped=scoped,
    )
    families = seccomp.socket_families(network=network, private_netns=private_netns)
    kernel.install_seccomp(seccomp.build_filter(families))


def enter_namespaces(network: bool) -> tuple[bool, bool, bool]:
    """Try to unshare PID, mount (and, without network, net) namespaces.

    Returns (pid namespace, network namespace, mount namespace). An unprivileged user gets
    them inside a new user namespace; where the kernel refuses, Landlock alone remains.
    """
    uid, gid = os.getuid(), os.getgid()
    base = kernel.CLONE_NEWPID | (0 if network else kernel.CLONE_NEWNET)
    if os.geteuid() != 0:
        base |= kernel.CLONE_NEWUSER
    for flags in (base | kernel.CLONE_NEWNS, base):
        try:
            kernel.unshare(flags)
        except OSError:
            continue
        if flags & kernel.CLONE_NEWUSER:
            for name, text in (
                ("setgroups", "deny"),
                ("uid_map", f"{uid} {uid} 1"),
                ("gid_map", f"{gid} {gid} 1"),
            ):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
        return True, not network, bool(flags & kernel.CLONE_NEWNS)
    return False, False, False


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def build_view(spec: Spec) -> None:
    """In the new mount namespace: private /tmp and /run, read-only agent files, masks.

    Sources are opened first (``O_PATH``) and mounted through ``/proc/self/fd``, because
    the private /tmp hides whatever lived under the host's /tmp — the project included.
    """
    cwd = os.getcwd()
    keep = sorted(
        {
            os.path.realpath(p)
            for p in spec.writable + spec.protect
            if _under(os.path.realpath(p), "/tmp")
        }
    )
    held = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in keep if os.path.exists(p)}
    sources = {k: os.open(v, os.O_PATH | os.O_CLOEXEC) for k, v in spec.files.items()}
    exposed = {
        p: os.open(p, os.O_PATH | os.O_CLOEXEC)
        for p in [*spec.expose, *spec.expose_write]
        if os.path.lexists(p)
    }
    kernel.mount(None, "/", None, kernel.MS_REC | kernel.MS_PRIVATE)
    kernel.mount("tmpfs", "/tmp", "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, "mode=1777")
    for path, fd in held.items():  # parents first: sorted
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "a").close()
        kernel.mount(f"/proc/self/fd/{fd}", path, None, kernel.MS_BIND | kernel.MS_REC)
    if os.path.isdir("/run"):
        kernel.mount("tmpfs", "/run", "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, "mode=755")
    for path in spec.protect:
        if os.path.exists(path):
            kernel.bind_read_only(path, path)
    for path in spec.masked:
        if not os.path.exists(path):
            continue
        source = sources.get("empty" if os.path.isdir(path) else "unreadable")
        if source is not None:  # else Landlock alone keeps it unreadable
            kernel.bind_read_only(f"/proc/self/fd/{source}", path)
    _expose(spec, exposed)
    if "passwd" in sources and os.path.exists("/etc/passwd"):
        kernel.bind_read_only(f"/proc/self/fd/{sources['passwd']}", "/etc/passwd")
    for fd in (*held.values(), *sources.values(), *exposed.values()):
        os.close(fd)
    os.chdir(cwd)  # through the new mounts, not the old directory


def _expose(spec: Spec, fds: dict[str, int]) -> None:
    """The call's approved paths: a hollow directory becomes an empty tmpfs that shows only
    them (then read-only); an exposed mask keeps its own content, read-only unless written."""
    writable = set(spec.expose_write)
    hollow = [h for h in spec.hollow if os.path.isdir(h)]
    for directory in hollow:
        kernel.mount("tmpfs", directory, "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, "mode=755")
    for path, fd in fds.items():
        source = f"/proc/self/fd/{fd}"
        if any(_under(path, h) and path != h for h in hollow):
            if os.path.isdir(source):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                open(path, "a").close()
        if path in writable:
            kernel.mount(source, path, None, kernel.MS_BIND | kernel.MS_REC)
        else:
            kernel.bind_read_only(source, path)
    for directory in hollow:
        kernel.mount(
            None,
            directory,
            None,
            kernel.MS_REMOUNT | kernel.MS_RDONLY | kernel.MS_NOSUID | kernel.MS_NODEV,
        )


def bring_up_loopback() -> None:
    """A new network namespace starts with ``lo`` down; commands expect 127.0.0.1."""
    import fcntl
    import socket
    import struct

    siocsifflags, iff_up_loopback_running = 0x8914, 0x1 | 0x8 | 0x40
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(
            sock.fileno(), siocsifflags, struct.pack("16sH22x", b"lo", iff_up_loopback_running)
        )


def exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def run_init(spec: Spec, command: list[str], alive_fd: int, netns: bool) -> None:
    """PID 1 of the namespace: start the command, reap orphans, end with the command.

    ``alive_fd`` is the read end of a pipe whose write end only the helper holds: if it
    already reads EOF, the helper died before the death signal was armed.
    """
    kernel.set_parent_death_signal(_SIGKILL)
    os.set_blocking(alive_fd, False)
    try:
        helper_gone = os.read(alive_fd, 1) == b""
    except BlockingIOError:
        helper_gone = False
    os.close(alive_fd)
    if helper_gone:
        os._exit(EXIT_CANNOT_CONFINE)
    if netns:
        try:
            bring_up_loopback()
        except OSError as exc:
            _refuse(f"cannot bring up loopback: {exc}")
    child = os.fork()
    if child == 0:
        confine_and_exec(spec, command, private_netns=netns)
    while True:
        pid, status = os.wait()
        if pid == child:
            os._exit(exit_code(status))


def confine_and_exec(spec: Spec, command: list[str], *, private_netns: bool) -> None:
    try:
        confine(spec, private_netns=private_netns)
    except (OSError, seccomp.UnsupportedArchitecture) as exc:
        _refuse(str(exc))
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"{command[0]}: {exc.strerror}\n")
        os._exit(127)


def _refuse(reason: str) -> None:
    sys.stderr.write(f"codingcode sandbox: cannot confine the command ({reason}); not run.\n")
    sys.stderr.flush()
    os._exit(EXIT_CANNOT_CONFINE)


def main(argv: list[str]) -> None:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        sys.stderr.write("usage: python -m codingcode.sandbox.landlock_exec [ARG=V]... -- CMD...\n")
        os._exit(2)
    split = argv.index("--")
    spec = Spec.from_args(argv[1:split])
    command = argv[split + 1 :]
    pidns, netns, mountns = (
        enter_namespaces(spec.network) if spec.namespaces else (False, False, False)
    )
    if mountns:
        try:
            build_view(spec)
        except OSError as exc:
            _refuse(f"cannot build the file system view: {exc}")
        # /tmp is now a private tmpfs: writable, and where temporary files belong.
        spec.writable.append("/tmp")
        os.environ["TMPDIR"] = "/tmp"
    if not pidns:
        confine_and_exec(spec, command, private_netns=False)
    alive_read, alive_write = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(alive_write)
        run_init(spec, command, alive_read, netns)
    os.close(alive_read)
    _, status = os.waitpid(init, 0)
    os._exit(exit_code(status))


if __name__ == "__main__":
    main(sys.argv)
