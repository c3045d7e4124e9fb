"""How a call's credentials enter its bubblewrap sandbox: placeholders in the environment,
sentinel copies and the trust store mounted from memory (``--ro-bind-data``: no file on
disk holds them), the real files hidden underneath."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from codingcode.sandbox.credentials.broker import CallCredentials
from codingcode.sandbox.credentials.settings import CredentialSpec
from codingcode.sandbox.masks import MaskSpec


def credential_masks(specs: Iterable[CredentialSpec]) -> list[MaskSpec]:
    """Every credential file is masked (a masked one is then shown as its sentinel copy)."""
    return [
        MaskSpec(spec.source, f"sandbox.credentials ({spec.mode})", what="a credential")
        for spec in specs
        if spec.kind == "file"
    ]


def apply_env(env: Mapping[str, str], call: CallCredentials | None) -> dict[str, str]:
    """The command's environment with denied variables removed and masked ones replaced."""
    out = dict(env)
    if call is None:
        return out
    for name in call.deny_env:
        out.pop(name, None)
    out.update(call.env)
    return out


def memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, os.MFD_CLOEXEC)  # pass_fds lets bwrap inherit it
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def bwrap_args(
    call: CallCredentials,
    masked_dirs: Iterable[Path],
    *,
    bundle: bytes | None,
    bundle_paths: list[str],
) -> tuple[list[str], list[int], dict[str, str]]:
    """(bwrap arguments, descriptors to pass, variables to set) for one call.

    A sentinel inside a masked directory (``~/.config/gh/hosts.yml``) gets a fresh
    read-only tmpfs for that directory holding only the sentinel copies."""
    args: list[str] = []
    fds: list[int] = []
    env: dict[str, str] = {}
    dirs = [d for d in masked_dirs]
    by_dir: dict[Path | None, list[Path]] = {}
    for path in call.files:
        parent = next((d for d in dirs if d in path.parents), None)
        by_dir.setdefault(parent, []).append(path)
    for parent, paths in by_dir.items():
        if parent is not None:
            args += ["--tmpfs", str(parent)]
        for path in paths:
            fd = memfd("codingcode-sentinel", call.files[path])
            fds.append(fd)
            args += ["--perms", "0444", "--ro-bind-data", str(fd), str(path)]
        if parent is not None:
            args += ["--remount-ro", str(parent)]
    if bundle is not None:
        for target in bundle_paths:
            fd = memfd("codingcode-ca-bundle", bundle)
            fds.append(fd)
            args += ["--perms", "0444", "--ro-bind-data", str(fd), target]
        from codingcode.sandbox.network.tls import TRUST_ENV

        for name in TRUST_ENV:
            env[name] = bundle_paths[0]
    return args, fds, env


def describe(specs: Iterable[CredentialSpec], *, tls_terminate: bool) -> list[str]:
    """One line per credential a call gets (for `check`, the approval question, status);
    read from the settings alone, never from the values."""
    lines = []
    for spec in specs:
        what = spec.source
        if spec.mode == "deny":
            lines.append(f"{what}: denied (hidden from commands)")
            continue
        if not spec.inject_hosts:
            where = "never sent (no injectHosts)"
        elif not tls_terminate:
            where = "not injected (sandbox.network.tlsTerminate is off)"
        else:
            where = "the real value only on requests to " + ", ".join(spec.inject_hosts)
        lines.append(f"{what}: a placeholder; {where}")
    return lines
