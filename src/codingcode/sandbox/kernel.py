"""Raw Linux syscalls the sandbox needs, through ctypes (no extension module, no binary).

Imported by the re-exec'd helper, so it keeps to cheap imports (no pathlib, no typing).

Landlock (``landlock_create_ruleset`` / ``add_rule`` / ``restrict_self``), ``prctl`` for
no_new_privs, seccomp and capability bounding, ``capset``, ``unshare``. Every function
raises :class:`OSError` with the kernel's errno on failure. Linux only; x86-64 and arm64.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long

# Landlock's numbers are the same on every architecture (they came after the unification).
_NR_LANDLOCK_CREATE_RULESET = 444
_NR_LANDLOCK_ADD_RULE = 445
_NR_LANDLOCK_RESTRICT_SELF = 446
_NR_CAPSET = {"x86_64": 126, "aarch64": 91}.get(os.uname().machine.lower(), -1)

LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

FS_READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR


def fs_access_for_abi(abi: int) -> int:
    """Every filesystem right this ABI knows (device ioctls stay unhandled on purpose:
    terminals and /dev/null need them and they grant no file access)."""
    access = (1 << 13) - 1
    if abi >= 2:
        access |= FS_REFER
    if abi >= 3:
        access |= FS_TRUNCATE
    return access


def _check(result: int) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers (0: none, or disabled at boot)."""
    try:
        return int(
            _syscall(
                ctypes.c_long(_NR_LANDLOCK_CREATE_RULESET),
                None,
                ctypes.c_size_t(0),
                ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
            )
        )
    except OSError:  # pragma: no cover - ctypes itself failing
        return 0


def landlock_restrict(
    *,
    abi: int,
    rules: Iterable[tuple[str, int]],
    handle_tcp: bool,
    scoped: int,
) -> None:
    """Restrict this thread (and what it execs) to ``rules``; needs no_new_privs first.

    ``rules`` are (path, allowed access) pairs; paths that vanished meanwhile are skipped.
    With ``handle_tcp`` and no port rule, TCP bind and connect are refused (ABI >= 4).
    """
    handled_fs = fs_access_for_abi(abi)
    attr = _RulesetAttr(handled_fs, 0, 0)
    size = 8
    if abi >= 4:
        size = 16
        if handle_tcp:
            attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
    if abi >= 6:
        size = 24
        attr.scoped = scoped
    ruleset = _check(
        _syscall(
            ctypes.c_long(_NR_LANDLOCK_CREATE_RULESET),
            ctypes.byref(attr),
            ctypes.c_size_t(size),
            ctypes.c_uint32(0),
        )
    )
    try:
        for path, access in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
                allowed = access & handled_fs
                if not is_dir:  # rights that only make sense on directories are refused
                    allowed &= FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE
                rule = _PathBeneathAttr(allowed, fd)
                _check(
                    _syscall(
                        ctypes.c_long(_NR_LANDLOCK_ADD_RULE),
                        ctypes.c_int(ruleset),
                        ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                        ctypes.byref(rule),
                        ctypes.c_uint32(0),
                    )
                )
            finally:
                os.close(fd)
        _check(
            _syscall(
                ctypes.c_long(_NR_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)
            )
        )
    finally:
        os.close(ruleset)


# prctl
PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
# NOROOT, NO_SETUID_FIXUP, KEEP_CAPS off, NO_CAP_AMBIENT_RAISE, each with its lock bit.
SECURE_BITS_LOCKED_DOWN = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    return _check(
        _libc.prctl(
            ctypes.c_int(option),
            ctypes.c_ulong(arg2),
            ctypes.c_ulong(arg3),
            ctypes.c_ulong(arg4),
            ctypes.c_ulong(arg5),
        )
    )


def set_no_new_privs() -> None:
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def set_parent_death_signal(sig: int) -> None:
    prctl(PR_SET_PDEATHSIG, sig)


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def drop_all_capabilities() -> None:
    """Empty the bounding, ambient, effective, permitted and inheritable sets.

    For root (or a namespace's root) also lock the secure bits so that exec does not hand
    the capabilities back; an unprivileged process has none to drop and skips those steps.
    """
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last_cap = int(f.read())
    for cap in range(last_cap + 1):
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError:
            break  # no CAP_SETPCAP: we are unprivileged, nothing to drop
    else:
        prctl(PR_SET_SECUREBITS, SECURE_BITS_LOCKED_DOWN)
    with _suppress_einval():
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _check(_syscall(ctypes.c_long(_NR_CAPSET), ctypes.byref(header), ctypes.byref(data)))


class _suppress_einval:
    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool:
        return isinstance(exc, OSError) and exc.errno == 22


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def install_seccomp(program: bytes) -> None:
    """Load a classic-BPF seccomp filter for this thread and its children (needs NNP)."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog))


CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)))


MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_SYNCHRONOUS = 16
MS_REMOUNT = 32
MS_MANDLOCK = 64
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21

# statvfs f_flag bits (ST_*) that a remount inside a user namespace must keep: the kernel
# locks them on mounts inherited from the parent namespace.
_ST_TO_MS = (
    (1, MS_RDONLY),
    (2, MS_NOSUID),
    (4, MS_NODEV),
    (8, MS_NOEXEC),
    (16, MS_SYNCHRONOUS),
    (64, MS_MANDLOCK),
    (1024, MS_NOATIME),
    (2048, MS_NODIRATIME),
    (4096, MS_RELATIME),
)


def mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    def enc(value: str | None) -> bytes | None:
        return None if value is None else os.fsencode(value)

    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)))


def bind_read_only(source: str, target: str) -> None:
    """Bind ``source`` on ``target`` and make that mount read-only (keeping locked flags)."""
    mount(source, target, None, MS_BIND | MS_REC)
    kept = 0
    st_flags = os.statvfs(target).f_flag
    for st, ms in _ST_TO_MS:
        if st_flags & st:
            kept |= ms
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)
