"""One node of a loopback-only Ray cluster, for the tests (run as a subprocess):

    python tests/fleet/ray_node.py TEMP_DIR CPUS [GCS_ADDRESS]

Without GCS_ADDRESS it starts a head node; with it, a worker node joining that head. It
prints one JSON line (``gcs_address``, ``node_id``) once the node runs, then keeps it up
until SIGTERM or SIGINT, or until the process that started it is gone, and stops it. The tests start it in its own session, so killing
its process group kills the node at once (a node lost mid-run).

Why not ``ray start``: every node must be bound to 127.0.0.1 alone. Ray turns a loopback
address into the host's own (``services.resolve_ip_for_localhost``) unless
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, its single-machine mode, which binds every
component to 127.0.0.1 — but in that mode ``ray start --address`` refuses to start a
worker node. Ray's own test cluster (``ray.cluster_utils.Cluster.add_node``) starts its
nodes as done here, with ``ray._private.node.Node``; one process per node lets a test kill
one node alone.
"""

from __future__ import annotations

import json
import os
import signal
import sys

# Before Ray is imported: its constants are read at import. Its child processes inherit it.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"

LOOPBACK = "127.0.0.1"


def main(argv: list[str]) -> None:
    from ray._private.node import Node
    from ray._private.parameter import RayParams

    temp_dir, cpus = argv[0], int(argv[1])
    gcs_address = argv[2] if len(argv) > 2 else None
    head = gcs_address is None
    params = RayParams(
        node_ip_address=LOOPBACK,
        gcs_address=gcs_address,
        num_cpus=cpus,
        num_gpus=0,
        object_store_memory=80 * 1024 * 1024,
        min_worker_port=0,
        max_worker_port=0,
        node_manager_port=0,
        temp_dir=temp_dir,
        include_dashboard=False,
        dashboard_host=LOOPBACK,
        include_log_monitor=head,
        # Ports picked free (never Ray's defaults: another cluster may run here).
        dashboard_agent_listen_port=None,
    )
    # The node's processes must not inherit our stdout (a pipe nobody reads once started).
    report = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    node = Node(params, head=head, shutdown_at_exit=False, spawn_reaper=False)
    wanted = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, wanted)  # after: its processes must not inherit it
    report.write(json.dumps({"gcs_address": node.gcs_address, "node_id": node.node_id}) + "\n")
    report.close()
    parent = os.getppid()
    while signal.sigtimedwait(wanted, 1.0) is None:
        if os.getppid() != parent:
            break  # the test run that started it died: the node goes with it
    node.kill_all_processes(check_alive=False, allow_graceful=True, wait=True)


if __name__ == "__main__":
    main(sys.argv[1:])
