"""`--executor ray` against a three-node cluster simulated on this machine (`ray.cluster_utils`):
the same bytes, a node removed mid-run, and Ctrl-C on the driver."""
from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import ray
from ray.cluster_utils import Cluster

from cityseeker_ros.core.evaluation.executors.ray import connect
from tests.core.evaluation.executors import gathering
from tests.core.evaluation.executors.test_ray import run
from tests.core.evaluation.test_benchmark import REPO, _cli

NODE = {"num_cpus": 1, "object_store_memory": 100 * 1024 ** 2}


def three_nodes() -> Cluster:
    cluster = Cluster(initialize_head=True, head_node_args=NODE)
    for _ in range(2):
        cluster.add_node(**NODE)
    cluster.wait_for_nodes()
    return cluster


@pytest.fixture
def cluster():
    cluster = three_nodes()
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_three_nodes_write_the_serial_bytes_with_an_actor_on_each(hk6, cluster, tmp_path, monkeypatch):
    """The actors wait for one another before their first episode (`gathering`), so an actor that
    starts late (a loaded machine, a worker Ray restarts) still takes part: the check is placement,
    not start-up speed."""
    kw = dict(seeds=[0, 1, 2], limit=60)
    serial = run(hk6, tmp_path / "serial", **kw)
    marks = tmp_path / "nodes"
    marks.mkdir()
    gather = dict(policy=gathering.registered(monkeypatch), policy_params={"folder": str(marks), "nodes": 3})
    assert run(hk6, tmp_path / "ray", executor="ray", ray_address=cluster.address, **gather, **kw) == serial
    assert len(list(marks.iterdir())) == 3
    actors = run.summary["execution"]["actors"]
    assert len({where.split(" on ")[0] for where in actors}) == 3, actors  # one actor per node
    assert sum(a["episodes"] for a in actors.values()) == 180


def test_removing_a_node_mid_run_keeps_the_serial_bytes(hk6, cluster, tmp_path):
    """A watcher removes a worker node once 20 records are written; its actor's work is redone."""
    kw = dict(seeds=[0])
    serial = run(hk6, tmp_path / "serial", **kw)
    total = serial.count(b"\n")
    log = tmp_path / "ray" / "episodes.jsonl"
    removed_at: list[int] = []

    def remove_a_node() -> None:
        deadline = time.time() + 120
        while count_lines(log) < 20 and time.time() < deadline:
            time.sleep(0.01)
        removed_at.append(count_lines(log))
        cluster.remove_node(list(cluster.worker_nodes)[0])

    watcher = threading.Thread(target=remove_a_node)
    watcher.start()
    try:
        got = run(hk6, tmp_path / "ray", executor="ray", ray_address=cluster.address, **kw)
    finally:
        watcher.join()
    assert got == serial
    assert 20 <= removed_at[0] < total  # it was removed mid-run
    execution = run.summary["execution"]
    assert execution["actors_replaced"] >= 1 and execution["failed_episodes"] == 0


def test_ctrl_c_on_the_driver_stops_the_actors_it_started(hk6, cluster, tmp_path):
    """SIGINT a CLI driver joined to the cluster mid-run; every CPU it held comes back."""
    connect(cluster.address)
    assert ray.cluster_resources()["CPU"] == 3
    out = tmp_path / "out"
    proc = subprocess.Popen(_cli("benchmark", "--data", str(hk6), "--policy", "random", "--seeds", "3",
                                 "--no-progress", "--executor", "ray", "--ray-address", cluster.address,
                                 "--out", str(out)), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while count_lines(out / "episodes.jsonl") < 10 and time.time() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None and ray.available_resources().get("CPU", 0) < 3  # its actors hold CPUs
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and b"interrupted" in err
    assert count_lines(out / "episodes.jsonl") < 531
    deadline = time.time() + 30
    while ray.available_resources().get("CPU", 0) < 3 and time.time() < deadline:
        time.sleep(0.1)
    assert ray.available_resources().get("CPU", 0) == 3
