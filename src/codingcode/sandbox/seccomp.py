"""A seccomp filter, assembled by hand as classic BPF (no libseccomp needed).

One filter for both backends. It refuses with ``EPERM``:

- kernel attack surface a command never needs: ``ptrace`` and ``process_vm_*`` (reading
  another process of the same user voids every other guarantee), ``bpf``,
  ``perf_event_open``, ``userfaultfd``, the key ring, module loading, ``kexec``,
  ``mount``/``pivot_root``/``swap``/``reboot``/``acct``;
- ``io_uring`` entirely (its ``IORING_OP_SOCKET`` would walk around the socket rule);
- new user namespaces (``unshare``/``clone`` with ``CLONE_NEWUSER``: a nested namespace
  hands back a full capability set); ``clone3`` answers ``ENOSYS`` because its flags sit
  behind a pointer the filter cannot read, and libc then falls back to ``clone``;
- ``socket()`` of any family outside an allow list (``AF_VSOCK`` in particular is not
  network-namespaced: it reaches the host of a VM whatever the namespace);
- setting the setuid or setgid bit (``chmod``, ``fchmod``, ``fchmodat``, ``fchmodat2``
  with ``S_ISUID``/``S_ISGID`` in the mode: preset rule R4, enforced), while every other
  mode change works; ``reboot`` and ``kexec_load``/``kexec_file_load`` (R5) are in the
  list above;
- syscalls of a foreign ABI (i386 / x32 on x86-64), which would bypass the numbers below.

``socketpair`` is never filtered, so pipes-over-sockets between a command's own
processes keep working.
"""

from __future__ import annotations

import errno
import os
import struct

AF_UNIX = 1
AF_INET = 2
AF_INET6 = 10
AF_NETLINK = 16

CLONE_NEWUSER = 0x10000000
#: S_ISUID | S_ISGID: a mode with either is refused (R4).
SET_ID_BITS = 0o6000

_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000

# classic BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

# offsets in struct seccomp_data
_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG0_LOW = 16  # little-endian: the low 32 bits of args[0]


def _arg_low(index: int) -> int:
    """Offset of the low 32 bits of ``args[index]`` (each argument is 8 bytes)."""
    return _OFF_ARG0_LOW + 8 * index


class _Arch:
    """One architecture's numbers (a plain class: the helper must import fast)."""

    def __init__(
        self,
        *,
        audit_arch: int,
        x32_bit: bool,
        socket: int,
        clone: int,
        clone3: int,
        unshare: int,
        denied: tuple[int, ...],
        chmods: tuple[tuple[int, int], ...],
    ) -> None:
        self.audit_arch = audit_arch
        self.x32_bit = x32_bit
        self.socket = socket
        self.clone = clone
        self.clone3 = clone3
        self.unshare = unshare
        self.denied = denied
        #: (syscall, index of its mode argument) for each chmod-like call.
        self.chmods = chmods


# Syscall numbers: linux/arch/x86/entry/syscalls/syscall_64.tbl and asm-generic/unistd.h.
_X86_64 = _Arch(
    audit_arch=0xC000003E,
    x32_bit=True,
    socket=41,
    clone=56,
    clone3=435,
    unshare=272,
    denied=(
        101,  # ptrace
        310,  # process_vm_readv
        311,  # process_vm_writev
        321,  # bpf
        298,  # perf_event_open
        323,  # userfaultfd
        248,  # add_key
        249,  # request_key
        250,  # keyctl
        425,  # io_uring_setup
        426,  # io_uring_enter
        427,  # io_uring_register
        246,  # kexec_load
        320,  # kexec_file_load
        175,  # init_module
        313,  # finit_module
        176,  # delete_module
        165,  # mount
        166,  # umount2
        155,  # pivot_root
        167,  # swapon
        168,  # swapoff
        169,  # reboot
        163,  # acct
        428,  # open_tree
        429,  # move_mount
        430,  # fsopen
        432,  # fsmount
    ),
    chmods=((90, 1), (91, 1), (268, 2), (452, 2)),  # chmod, fchmod, fchmodat, fchmodat2
)
_AARCH64 = _Arch(
    audit_arch=0xC00000B7,
    x32_bit=False,
    socket=198,
    clone=220,
    clone3=435,
    unshare=97,
    denied=(
        117,  # ptrace
        270,  # process_vm_readv
        271,  # process_vm_writev
        280,  # bpf
        241,  # perf_event_open
        282,  # userfaultfd
        217,  # add_key
        218,  # request_key
        219,  # keyctl
        425,  # io_uring_setup
        426,  # io_uring_enter
        427,  # io_uring_register
        104,  # kexec_load
        294,  # kexec_file_load
        105,  # init_module
        273,  # finit_module
        106,  # delete_module
        40,  # mount
        39,  # umount2
        41,  # pivot_root
        224,  # swapon
        225,  # swapoff
        142,  # reboot
        89,  # acct
        428,  # open_tree
        429,  # move_mount
        430,  # fsopen
        432,  # fsmount
    ),
    chmods=((52, 1), (53, 2), (452, 2)),  # fchmod, fchmodat, fchmodat2 (no chmod here)
)

_ARCHES = {"x86_64": _X86_64, "amd64": _X86_64, "aarch64": _AARCH64, "arm64": _AARCH64}


class UnsupportedArchitecture(RuntimeError):
    pass


def native_arch() -> _Arch:
    arch = _ARCHES.get(os.uname().machine.lower())
    if arch is None:
        raise UnsupportedArchitecture(
            f"no seccomp filter for the {os.uname().machine} architecture"
        )
    return arch


class _Program:
    """A tiny assembler: jumps name a label and are resolved to BPF's relative offsets."""

    def __init__(self) -> None:
        self._ops: list[tuple[int, str | int, str | int, int]] = []
        self._labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self._labels[name] = len(self._ops)

    def load(self, offset: int) -> None:
        self._ops.append((_LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, k: int, true: str | int = 0, false: str | int = 0) -> None:
        self._ops.append((op, true, false, k))

    def ret(self, value: int) -> None:
        self._ops.append((_RET_K, 0, 0, value))

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (code, jt, jf, k) in enumerate(self._ops):
            out += struct.pack("<HBBI", code, self._offset(index, jt), self._offset(index, jf), k)
        return bytes(out)

    def _offset(self, index: int, target: str | int) -> int:
        if isinstance(target, int):
            return target
        delta = self._labels[target] - index - 1
        if not 0 <= delta <= 255:
            raise ValueError(f"BPF jump to {target} out of range")
        return delta


def build_filter(allowed_socket_families: frozenset[int], arch: _Arch | None = None) -> bytes:
    """The filter program as bytes (``struct sock_filter[]``), ready for bwrap or prctl."""
    arch = arch or native_arch()
    eperm = _RET_ERRNO | errno.EPERM
    p = _Program()
    p.load(_OFF_ARCH)
    p.jump(_JEQ_K, arch.audit_arch, 0, "deny")
    p.load(_OFF_NR)
    if arch.x32_bit:
        p.jump(_JGE_K, 0x40000000, "deny", 0)
    for nr in arch.denied:
        p.jump(_JEQ_K, nr, "deny", 0)
    p.jump(_JEQ_K, arch.clone3, "nosys", 0)
    p.jump(_JEQ_K, arch.socket, "socket", 0)
    p.jump(_JEQ_K, arch.clone, "newuser", 0)
    p.jump(_JEQ_K, arch.unshare, "newuser", 0)
    for nr, index in arch.chmods:
        p.jump(_JEQ_K, nr, f"chmod{index}", 0)
    p.ret(_RET_ALLOW)

    for index in sorted({i for _, i in arch.chmods}):
        p.label(f"chmod{index}")
        p.load(_arg_low(index))
        p.jump(_JSET_K, SET_ID_BITS, "deny", "allow")

    p.label("socket")
    p.load(_OFF_ARG0_LOW)
    for family in sorted(allowed_socket_families):
        p.jump(_JEQ_K, family, "allow", 0)
    p.ret(eperm)

    p.label("newuser")
    p.load(_OFF_ARG0_LOW)
    p.jump(_JSET_K, CLONE_NEWUSER, "deny", "allow")

    p.label("allow")
    p.ret(_RET_ALLOW)
    p.label("nosys")
    p.ret(_RET_ERRNO | errno.ENOSYS)
    p.label("deny")
    p.ret(eperm)
    return p.assemble()


def socket_families(*, network: bool, private_netns: bool) -> frozenset[int]:
    """Which ``socket()`` families a command may open.

    With network: unix, IPv4/6 and netlink. Without: IPv4/6 only inside a private network
    namespace (where they reach nothing but the sandbox's own loopback), and never unix
    sockets — a read-only mount does not stop ``connect()`` to a host service's socket
    file, so the only sure way is not to create one (``socketpair`` still works).
    """
    families = {AF_NETLINK}
    if network:
        families |= {AF_UNIX, AF_INET, AF_INET6}
    elif private_netns:
        families |= {AF_INET, AF_INET6}
    return frozenset(families)
