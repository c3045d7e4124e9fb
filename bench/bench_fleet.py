"""What a fleet costs over running the same sessions by hand, and what a second node buys.

The same scripted task (the fake model server of the tests: two edits and a command in the
sandbox, then an answer) is run N times:

- bare: `codingcode run` in a clone made beforehand (the reference, measured in the same
  run, interleaved with the fleet);
- local: `codingcode fleet run --concurrency 1` of the N tasks; per-task overhead = the
  median time a task took in the fleet (its clone, baseline, session and patch: its
  `duration_s`) / the median bare run (target <= 1.2). The fleet command's own start-up,
  paid once per run however many tasks, is shown apart (whole run / N);
- ray (when the ray extra is installed): the same on a local Ray cluster of one node,
  bound to 127.0.0.1 alone (reported), then throughput (tasks per minute) of 2N tasks on
  one node against two (both on this machine: a second node adds no cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fleet.helpers import (
    fleet_env,
    make_repos,
    scripted_server,
    task_lines,
    write_tasks,
)

from _common import verdict

TARGET_LOCAL = 1.2


def bare_batch(tasks: list[dict[str, object]], env: dict[str, str], root: Path) -> list[float]:
    """Seconds of each plain `codingcode run` (clones made before the clock starts)."""
    clones = []
    for t in tasks:
        clone = Path(tempfile.mkdtemp(dir=root))
        shutil.rmtree(clone)
        subprocess.run(["git", "clone", "-q", str(t["repo"]), str(clone)], check=True)
        clones.append(clone)
    times = []
    for t, clone in zip(tasks, clones, strict=True):
        start = time.perf_counter()
        argv = [sys.executable, "-m", "codingcode", "run", "-", "--output-format",
                "stream-json", "--project", str(clone), "--mode", "acceptEdits",
                "--allowed-tools", "execute_command(printf *)"]  # fmt: skip
        subprocess.run(
            argv, input=str(t["prompt"]), text=True, env=env, check=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        times.append(time.perf_counter() - start)
    for clone in clones:
        shutil.rmtree(clone, ignore_errors=True)
    return times


def fleet_batch(
    tasks_file: Path, count: int, env: dict[str, str], extra: list[str]
) -> tuple[float, list[float]]:
    """One `codingcode fleet run` of the task file: seconds per task of the whole run, and
    each task's own time (its `duration_s`)."""
    out = Path(tempfile.mkdtemp(dir=tasks_file.parent))
    shutil.rmtree(out)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "codingcode", "fleet", "run", str(tasks_file), "--out", str(out),
         "--json", *extra],
        env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    durations = [
        json.loads(line)["duration_s"] for line in (out / "results.jsonl").read_text().splitlines()
    ]
    shutil.rmtree(out, ignore_errors=True)
    return elapsed / count, durations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-ray", action="store_true")
    opts = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    server = scripted_server()
    try:
        env = fleet_env(server, root / "home")
        env["CODINGCODE_FLEET_WORKDIR"] = str(root / "work")
        repos = make_repos(root / "repos", 2)
        tasks = task_lines(repos, opts.tasks)
        tasks_file = write_tasks(root / "tasks.jsonl", tasks)
        bare: list[float] = []
        local: list[float] = []
        whole: list[float] = []
        for _ in range(opts.rounds):  # interleaved: load affects both alike
            bare += bare_batch(tasks, env, root)
            per_run, durations = fleet_batch(tasks_file, len(tasks), env, ["--concurrency", "1"])
            local += durations
            whole.append(per_run)
        b, loc = statistics.median(bare), statistics.median(local)
        ratio = loc / b
        print(f"bare codingcode run:        {b:6.2f} s per task")
        print(f"fleet, local engine (-j 1): {loc:6.2f} s per task  ratio {ratio:.2f} "
              f"(target <= {TARGET_LOCAL}) {verdict(ratio, TARGET_LOCAL)}")  # fmt: skip
        print(f"  whole fleet run / tasks:  {statistics.median(whole):6.2f} s (its start-up "
              f"shared by {len(tasks)} tasks)")  # fmt: skip
        if opts.no_ray:
            return
        try:
            import ray  # noqa: F401
        except ImportError:
            print("ray: not installed (uv sync --extra ray); skipped")
            return
        from tests.fleet.ray_cluster import LoopbackCluster

        node_env = {"CODINGCODE_FLEET_WORKDIR": str(root / "work")}
        cluster = LoopbackCluster()  # bound to 127.0.0.1 alone, one process group per node
        try:
            cluster.add_node(2, node_env)
            ray_args = ["--engine", "ray", "--address", cluster.address]
            ray_times: list[float] = []
            ray_whole: list[float] = []
            for _ in range(opts.rounds):
                per_run, durations = fleet_batch(
                    tasks_file, len(tasks), env, [*ray_args, "-j", "1"]
                )
                ray_times += durations
                ray_whole.append(per_run)
            one = statistics.median(ray_times)
            print(f"fleet, ray engine (-j 1):   {one:6.2f} s per task  ratio {one / b:.2f} "
                  "(reported)")  # fmt: skip
            print(f"  whole fleet run / tasks:  {statistics.median(ray_whole):6.2f} s (joining "
                  f"the cluster shared by {len(tasks)} tasks)")  # fmt: skip
            more = task_lines(repos, 2 * opts.tasks)
            more_file = write_tasks(root / "more.jsonl", more)
            per_task_1 = fleet_batch(more_file, len(more), env, ray_args)[0]
            cluster.add_node(2, node_env)
            per_task_2 = fleet_batch(more_file, len(more), env, ray_args)[0]
            cores = os.cpu_count() or 1
            print(f"ray throughput, 1 node:     {60 / per_task_1:6.1f} tasks/min")
            print(f"ray throughput, 2 nodes:    {60 / per_task_2:6.1f} tasks/min  "
                  f"x{per_task_1 / per_task_2:.2f} (both nodes share this machine's "
                  f"{cores} cores)")  # fmt: skip
        finally:
            cluster.shutdown()
            left = cluster.processes()
            shutil.rmtree(cluster.temp_dir, ignore_errors=True)
            if left:
                print(f"warning: processes of the Ray cluster outlived it: {left}")
    finally:
        server.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
