"""Runs *inside* the sandbox for ``codingcode sandbox status``: try each escape, report JSON.

Standard library only; every attempt is caught and reported, never raised. The host side
(:mod:`codingcode.sandbox.probes`) checks the effects on the real machine as well — an
attempt that "failed" here but changed a host file still counts as an escape.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any


def attempt(fn: Any) -> str:
    """'ok' when the action succeeded, else the error text."""
    try:
        fn()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def write(path: str, text: str = "written by the sandbox probe\n") -> None:
    with open(path, "w") as f:
        f.write(text)


def connect_tcp(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def send_udp(port: int, token: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(token.encode(), ("127.0.0.1", port))


def connect_unix(address: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(2)
        s.connect(address)


def read_text(path: str) -> str:
    with open(path, errors="replace") as f:
        return f.read()


def status_fields() -> dict[str, str]:
    fields = {}
    for line in read_text("/proc/self/status").splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def secret_state(path: str) -> str:
    """'hidden' when nothing of the path can be read, else what leaked."""
    if os.path.isdir(path):
        try:
            names = os.listdir(path)
        except OSError:
            return "hidden"
        readable = [
            n for n in names if attempt(lambda n=n: read_text(os.path.join(path, n))) == "ok"
        ]
        return f"readable: {', '.join(readable)}" if readable else "hidden"
    try:
        content = read_text(path)
    except OSError:
        return "hidden"
    return "hidden" if not content else "readable"


def main() -> None:
    spec = json.loads(sys.argv[1])
    result: dict[str, Any] = {}
    result["write_outside"] = attempt(lambda: write(spec["outside_file"]))
    result["write_via_symlink"] = attempt(lambda: write(spec["symlink"]))
    result["write_project"] = attempt(lambda: write(spec["project_file"]))
    result["write_tmp"] = attempt(lambda: write(spec["tmp_file"]))
    result["protected"] = {p: attempt(lambda p=p: write(p, "{}\n")) for p in spec["protected"]}
    result["tcp"] = attempt(lambda: connect_tcp(spec["tcp_port"]))
    result["udp"] = attempt(lambda: send_udp(spec["udp_port"], spec["token"]))
    result["unix"] = attempt(lambda: connect_unix(spec["unix_path"]))
    result["abstract"] = attempt(lambda: connect_unix("\0" + spec["abstract_name"]))
    fields = status_fields()
    result["no_new_privs"] = fields.get("NoNewPrivs", "?")
    result["cap_eff"] = fields.get("CapEff", "?")
    result["secrets"] = {p: secret_state(p) for p in spec["secrets"]}
    result["readable"] = {p: secret_state(p) for p in spec.get("readable", [])}
    result["env_secret"] = spec["env_secret"] in os.environ
    try:
        entries = [line for line in read_text("/etc/passwd").splitlines() if line.strip()]
        result["passwd_uids"] = sorted({int(line.split(":")[2]) for line in entries})
    except (OSError, ValueError, IndexError) as exc:
        result["passwd_uids"] = f"unreadable: {exc}"
    print(json.dumps(result))


if __name__ == "__main__":
    main()
