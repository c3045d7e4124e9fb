"""``codingcode fleet run --engine ray`` on a real local Ray cluster of three nodes, bound
to 127.0.0.1 alone (``tests/fleet/ray_cluster.py``): the head, a worker that is killed
mid-run, and a worker without bubblewrap (refused when the settings ask for bubblewrap;
otherwise it runs its tasks under Landlock, as ``codingcode run`` would there).

Ray comes with the ``ray`` extra (``./dev test`` installs it); without it these tests are
skipped, saying so. One cluster serves them all (Ray takes long to start)."""

from __future__ import annotations

import json
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer
from tests.fleet.helpers import (
    check_patch_applies,
    fleet,
    fleet_env,
    make_repos,
    result_lines,
    scripted_server,
    start_fleet,
    task_lines,
    wait_for_event,
    wait_gone,
    write_tasks,
)
from tests.fleet.ray_cluster import MARKER, LoopbackCluster

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("fleet_ray")]


def test_an_unreachable_address_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text('{"id": "a", "project": ".", "prompt": "x"}\n')
    pytest.importorskip("ray", reason="the ray extra is not installed (uv sync --extra ray)")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["run", "t.jsonl", "--out", "out", "--engine", "ray", "--address", f"127.0.0.1:{port}"]
    run = fleet(args, _plain_env(tmp_path), tmp_path, timeout=60)
    assert run.returncode == 2
    assert run.stderr.strip() == (
        f"error: cannot reach the Ray cluster at 127.0.0.1:{port}: Connection refused"
    )
    assert not (tmp_path / "out" / "results.jsonl").exists()


def _plain_env(tmp_path: Path) -> dict[str, str]:
    import os

    return {**os.environ, "CODINGCODE_STATE_DIR": str(tmp_path / "state")}


# Session-scoped: xdist may run another module's tests between these on the same worker,
# which would end a module-scoped cluster and start a second one (Ray takes long to start).
@pytest.fixture(scope="session")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ray-attempts")


@pytest.fixture(scope="session")
def cluster(workdir: Path) -> Iterator[LoopbackCluster]:
    """Three nodes on 127.0.0.1 alone: the head (two CPUs), a worker the kill test kills
    (two CPUs), and a worker without bubblewrap (one CPU; it has Landlock if the kernel
    does, so it is refused only where the settings ask for bubblewrap)."""
    pytest.importorskip("ray", reason="the ray extra is not installed (uv sync --extra ray)")
    env = {"CODINGCODE_FLEET_WORKDIR": str(workdir)}
    c = LoopbackCluster()
    try:
        c.add_node(2, env)
        c.add_node(2, env)
        c.add_node(1, env | {"CODINGCODE_BWRAP": "/nonexistent/bwrap"})
        nodes = [n for n in c.nodes_seen_by_a_driver() if n["Alive"]]
        assert len(nodes) == 3
        assert {n["NodeManagerAddress"] for n in nodes} == {"127.0.0.1"}
        bound = c.listening()
        assert any("gcs_server" in owner for owner in bound.values())
        assert any("raylet" in owner for owner in bound.values())
        assert _beyond_loopback(bound) == {}, "the cluster listens beyond 127.0.0.1"
        yield c
    finally:
        c.shutdown()
        left = c.processes()
        shutil.rmtree(c.temp_dir, ignore_errors=True)
        assert left == {}, f"processes of the Ray cluster outlived it: {left}"


def _beyond_loopback(bound: dict[str, str]) -> dict[str, str]:
    """The sockets of ``LoopbackCluster.listening`` bound to another address than 127.0.0.1."""
    return {a: o for a, o in bound.items() if a.split(" ")[1].rpartition(":")[0] != "127.0.0.1"}


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    s = scripted_server()
    yield s
    s.close()


@pytest.mark.timeout(400)
def test_a_node_killed_mid_run_loses_no_task(
    cluster: LoopbackCluster, server: FakeModelServer, tmp_path: Path, workdir: Path
) -> None:
    head, victim, _ = cluster.nodes
    victim_id = victim.node_id[:8]
    repos = make_repos(tmp_path / "repos", 5)
    tasks = task_lines(repos, 50)
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    env = fleet_env(server, tmp_path / "home")
    env["CODINGCODE_FLEET_WORKDIR"] = str(workdir)
    env[MARKER] = cluster.marker  # the driver's sockets are checked too
    args = ["run", "tasks.jsonl", "--out", "out", "--engine", "ray", "--json"]
    proc = start_fleet([*args, "--address", cluster.address], env, tmp_path)
    try:
        # Mid-run: ten tasks done, and the victim has just started another.
        events = wait_for_event(proc, "task_finished", 10)
        while not any(
            e["type"] == "task_started" and e["node"].endswith(victim_id) for e in events[-1:]
        ):
            events += wait_for_event(proc, "task_started", 1)
        time.sleep(1.0)  # its session is under way
        # Mid-run too (Ray's workers, the driver, the sessions): 127.0.0.1 alone.
        bound = cluster.listening()
        assert sum("raylet" in o for o in bound.values()) == 6, bound  # 2 per node
        assert _beyond_loopback(bound) == {}
        cluster.kill(victim)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    events += [json.loads(x) for x in out.splitlines()]
    notes = [e["message"] for e in events if e["type"] == "note"]
    assert any("lost with node" in n and victim_id in n for n in notes), notes
    results = result_lines(tmp_path / "out")
    assert sorted(r["id"] for r in results) == [t["id"] for t in tasks]  # each exactly once
    assert {r["status"] for r in results} == {"done"}
    used = {r["node"].rpartition("/")[2] for r in results}
    assert {head.node_id[:8], victim_id} <= used  # tasks ran on several nodes
    retried = [r for r in results if r["attempts"] > 1]
    assert retried and all(not r["node"].endswith(victim_id) for r in retried)
    repo_of = {t["id"]: Path(t["repo"]) for t in tasks}
    for r in results:
        check_patch_applies(tmp_path / "out", r, repo_of[r["id"]], tmp_path)
    # Nothing of the killed attempts is left: no session, no sandbox, no working copy.
    assert wait_gone(str(workdir)) == []
    assert not list(workdir.iterdir())


@pytest.mark.timeout(300)
def test_a_node_without_bubblewrap_is_refused_when_the_settings_ask_for_it(
    cluster: LoopbackCluster, server: FakeModelServer, tmp_path: Path, workdir: Path
) -> None:
    from codingcode.sandbox.service import bubblewrap_problem, find_bwrap

    head, *_, without = cluster.nodes
    bwrap = find_bwrap()  # the other nodes have what this machine has
    here = "bubblewrap (bwrap) is not installed" if bwrap is None else bubblewrap_problem(bwrap)
    repos = make_repos(tmp_path / "repos", 1)
    write_tasks(tmp_path / "tasks.jsonl", task_lines(repos, 2))
    env = fleet_env(server, tmp_path / "home")
    env["CODINGCODE_FLEET_WORKDIR"] = str(workdir)
    config = tmp_path / "home" / "config"
    config.mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps({"sandbox": {"backend": "bubblewrap"}}))
    args = ["run", "tasks.jsonl", "--out", "out", "--engine", "ray", "--json"]
    run = fleet([*args, "--address", cluster.address], env, tmp_path)
    notes = [json.loads(x)["message"] for x in run.stdout.splitlines() if '"note"' in x]
    refused = f"{without.node_id[:8]} refused: no working sandbox there (bubblewrap (bwrap) is "
    assert any(refused in n for n in notes), notes
    out = tmp_path / "out"
    results = result_lines(out) if (out / "results.jsonl").exists() else []
    if here is None:  # bubblewrap works here: the other nodes run the tasks
        assert run.returncode == 0, run.stderr[-3000:]
        assert {r["status"] for r in results} == {"done"} and len(results) == 2
        assert not any(r["node"].endswith(without.node_id[:8]) for r in results)
    else:  # every node lacks it, as this machine does: nothing runs, unsandboxed or not
        assert any(head.node_id[:8] in n and "refused" in n for n in notes), notes
        assert run.returncode == 2 and results == []
        assert "no node of the Ray cluster has a working sandbox" in run.stderr
    assert wait_gone(str(workdir)) == []


@pytest.mark.timeout(300)
def test_the_rayjob_entrypoint_runs(
    cluster: LoopbackCluster, server: FakeModelServer, tmp_path: Path, workdir: Path
) -> None:
    """deploy/rayjob.yaml's entrypoint, run as KubeRay runs it (RAY_ADDRESS set to the
    cluster), with its /data volume a folder here."""
    import shlex

    import yaml

    deploy = Path(__file__).resolve().parents[2] / "deploy"
    job = yaml.safe_load((deploy / "rayjob.yaml").read_text())
    data = tmp_path / "data"
    data.mkdir()
    repos = make_repos(data / "repos", 1)
    write_tasks(data / "tasks.jsonl", task_lines(repos, 2))
    argv = shlex.split(job["spec"]["entrypoint"].replace("/data", str(data)))
    assert argv[:3] == ["codingcode", "fleet", "run"]
    env = fleet_env(server, tmp_path / "home")
    env |= {"RAY_ADDRESS": cluster.address, "CODINGCODE_FLEET_WORKDIR": str(workdir)}
    run = fleet(argv[2:], env, tmp_path, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    results = result_lines(data / "out")
    assert sorted(r["id"] for r in results) == ["t000", "t001"]
    assert {r["status"] for r in results} == {"done"}
    assert json.loads(run.stdout.splitlines()[-1])["type"] == "end"


@pytest.mark.timeout(300)
def test_ctrl_c_cancels_the_ray_tasks(
    cluster: LoopbackCluster, server: FakeModelServer, tmp_path: Path, workdir: Path
) -> None:
    import signal

    repos = make_repos(tmp_path / "repos", 1)
    write_tasks(tmp_path / "tasks.jsonl", task_lines(repos, 3, slow=30.0))
    env = fleet_env(server, tmp_path / "home")
    env["CODINGCODE_FLEET_WORKDIR"] = str(workdir)
    args = ["run", "tasks.jsonl", "--out", "out", "--engine", "ray", "--json"]
    proc = start_fleet([*args, "--address", cluster.address], env, tmp_path)
    try:
        seen = wait_for_event(proc, "task_started", 1)
        deadline = time.monotonic() + 60
        while not server.requests and time.monotonic() < deadline:  # a session is under way
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    started = {e["id"] for e in seen if e["type"] == "task_started"}
    results = result_lines(tmp_path / "out")
    assert started <= {r["id"] for r in results}
    assert {r["status"] for r in results} == {"cancelled"}
    assert wait_gone(str(workdir)) == []


def test_ray_keeps_a_loopback_address_and_ships_no_uv_run() -> None:
    from codingcode.fleet.engines.ray_engine import ray_environment

    single = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}
    assert ray_environment("127.0.0.1:6379", {}) == single
    assert ray_environment("localhost:6379", {}) == single
    assert ray_environment("auto", {}) == single  # a Ray of this machine
    assert ray_environment("auto", {"RAY_ADDRESS": "127.0.0.1:6380"}) == single
    assert ray_environment("10.0.0.5:6379", {}) == {"RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}
    assert ray_environment("auto", {"RAY_ADDRESS": "10.0.0.5:6379"}) == {
        "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"
    }
    # What the user set is theirs.
    mine = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1", "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "1"}
    assert ray_environment("127.0.0.1:6379", mine) == {}


def test_the_node_probe_finds_the_sandbox_codingcode_run_would_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from codingcode.fleet.engines.ray_engine import probe_node
    from codingcode.sandbox.service import bubblewrap_problem, find_bwrap, landlock_problem

    bwrap = find_bwrap()
    works = bwrap is not None and bubblewrap_problem(bwrap) is None
    landlock = landlock_problem() is None
    found = probe_node({})
    assert found["backend"] == ("bubblewrap" if works else "landlock" if landlock else None)
    assert (found["problem"] is None) == (works or landlock)
    assert probe_node({"mode": "off"})["problem"] is None
    monkeypatch.setenv("CODINGCODE_BWRAP", "/nonexistent/bwrap")
    assert probe_node({"backend": "bubblewrap"}) == {
        **found,
        "backend": None,
        "problem": "bubblewrap (bwrap) is not installed",
    }
    assert probe_node({"backend": "landlock"})["backend"] == ("landlock" if landlock else None)
