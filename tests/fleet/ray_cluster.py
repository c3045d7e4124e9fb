"""A real Ray cluster of several nodes on this machine, bound to 127.0.0.1 alone.

Each node is its own process group (``tests/fleet/ray_node.py``), so a test can kill one
node at once, as a machine dies. Every process of the cluster carries a marker in its
environment (Ray renames its workers' command lines, not their environment), which is how
the tests find them: to check what they listen on, and that none is left at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NODE_SCRIPT = Path(__file__).with_name("ray_node.py")
MARKER = "CODINGCODE_TEST_RAY_CLUSTER"
#: What ray.init needs to join a loopback-only cluster (what the fleet's engine sets).
DRIVER_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}


@dataclass
class Node:
    proc: subprocess.Popen[str]
    node_id: str
    cpus: int


class LoopbackCluster:
    def __init__(self) -> None:
        # Short: Ray's Unix sockets live under it (a socket path has at most 107 bytes).
        self.temp_dir = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
        self.marker = uuid.uuid4().hex
        self.address = ""
        self.nodes: list[Node] = []

    def add_node(self, cpus: int, env: dict[str, str] | None = None) -> Node:
        args = [str(self.temp_dir), str(cpus)] + ([self.address] if self.address else [])
        node_env = {**os.environ, **(env or {}), MARKER: self.marker}
        with open(self.temp_dir / f"node{len(self.nodes)}.err", "w") as err:
            proc = subprocess.Popen(
                [sys.executable, str(NODE_SCRIPT), *args],
                env=node_env, stdout=subprocess.PIPE, stderr=err, text=True,
                start_new_session=True,
            )  # fmt: skip
        assert proc.stdout is not None
        line = proc.stdout.readline()  # once the node runs (Ray waits for it)
        if not line:
            raise RuntimeError(f"a Ray node did not start: see {self.temp_dir}")
        started = json.loads(line)
        self.address = self.address or started["gcs_address"]
        node = Node(proc, started["node_id"], cpus)
        self.nodes.append(node)
        return node

    def kill(self, node: Node) -> None:
        """The node dies at once: every process of its group, no clean-up."""
        os.killpg(node.proc.pid, signal.SIGKILL)
        node.proc.wait()

    def processes(self) -> dict[int, str]:
        """pid → name of every live process of this cluster (its marker in the environment)."""
        found = {}
        needle = f"{MARKER}={self.marker}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    if state != "Z":
                        found[int(entry.name)] = (entry / "comm").read_text().strip()
            except OSError:
                continue  # gone meanwhile, or not ours to read
        return found

    def listening(self) -> dict[str, str]:
        """Every TCP socket the cluster listens on and UDP socket it bound: address → name."""
        names = self.processes()
        inode_owner: dict[str, str] = {}
        for pid, name in names.items():
            try:
                for fd in Path(f"/proc/{pid}/fd").iterdir():
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inode_owner[target[8:-1]] = f"{name}[{pid}]"
            except OSError:
                continue
        bound = {}
        for table in ("tcp", "tcp6", "udp", "udp6"):
            for row in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
                cols = row.split()
                local, state, inode = cols[1], cols[3], cols[9]
                listens = state == "0A" if table.startswith("tcp") else True
                if listens and inode in inode_owner:
                    bound[f"{table} {_address(local)}"] = inode_owner[inode]
        return bound

    def nodes_seen_by_a_driver(self) -> list[dict[str, Any]]:
        """``ray.nodes()`` as a driver process joining at the cluster's address sees them."""
        code = (
            "import json, ray\n"
            f"ray.init(address={self.address!r}, logging_level='ERROR', log_to_driver=False)\n"
            "print(json.dumps(ray.nodes()))\n"
            "ray.shutdown()\n"
        )
        env = {**os.environ, **DRIVER_ENV, MARKER: self.marker}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr[-2000:]
        return list(json.loads(out.stdout.splitlines()[-1]))

    def shutdown(self, timeout: float = 20) -> None:
        """Stop every node (gracefully first), then kill what is left of the cluster."""
        for node in self.nodes:
            if node.proc.poll() is None:
                node.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            try:
                node.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(node.proc.pid, signal.SIGKILL)
                node.proc.wait()
        # Ray starts its workers in process groups of their own; they leave when their
        # node's raylet has gone, which we wait for, and then kill what is left.
        while self.processes() and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _address(hex_address: str) -> str:
    """``0100007F:1F90`` (``/proc/net/tcp``) → ``127.0.0.1:8080``; IPv6 likewise."""
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    # The kernel prints the address as 32-bit words in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    if len(words) == 4:
        ip = ".".join(str(b) for b in words)
    elif words[:12] == b"\0" * 10 + b"\xff\xff":
        ip = ".".join(str(b) for b in words[12:])  # an IPv4-mapped IPv6 address
    else:
        import ipaddress

        ip = f"[{ipaddress.IPv6Address(words)}]"
    return f"{ip}:{int(port, 16)}"
