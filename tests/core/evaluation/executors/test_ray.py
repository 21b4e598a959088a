"""`--executor ray` on a local Ray instance: the same bytes as a serial run, memory written by the
driver alone, a driver killed mid-run resumed without loss, and a worker that keeps dying."""
from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError
from tests.core.evaluation.executors import crashing
from tests.core.evaluation.test_benchmark import REPO, _cli, kill_after, lines

B1_R3 = [{"name": "B1"}, {"name": "R3"}]


def run(data: Path, out: Path, policy: str = "random", **kw) -> bytes:
    summary = Benchmark(BenchmarkConfig(data=str(data), policy=policy, **kw)).run(out, progress=False)
    run.summary = summary
    return (out / "episodes.jsonl").read_bytes()


def memory_rows(path: Path) -> dict[str, list]:
    with sqlite3.connect(path) as db:
        return {t: sorted(db.execute(f"select * from {t}").fetchall(), key=repr)
                for t in ("rounds", "visits", "decisions", "edges")}


def test_random_over_three_seeds_writes_the_serial_bytes_on_hongkong(hk6, tmp_path):
    kw = dict(seeds=[0, 1, 2], limit=12)
    serial = run(hk6, tmp_path / "serial", **kw)
    distributed = run(hk6, tmp_path / "ray", executor="ray", batch_size=2, **kw)
    assert distributed == serial and serial.count(b"\n") == 36
    execution = run.summary["execution"]
    assert execution["executor"] == "ray" and execution["failed_episodes"] == 0
    assert sum(a["episodes"] for a in execution["actors"].values()) == 36
    assert sum(a["decisions"] for a in execution["actors"].values()) == sum(
        json.loads(x)["steps"] for x in serial.decode().splitlines())


def test_random_over_three_seeds_writes_the_serial_bytes_on_a_built_world(monaco_dir, tmp_path):
    kw = dict(seeds=[0, 1, 2], limit=5)
    serial = run(monaco_dir, tmp_path / "serial", **kw)
    assert run(monaco_dir, tmp_path / "ray", executor="ray", **kw) == serial and serial.count(b"\n") == 15


@pytest.mark.parametrize("data", ["hk6", "monaco_dir"])
def test_supervised_rounds_write_the_serial_bytes_and_memory(data, request, tmp_path):
    """B1 and R3 over 2 rounds: the actors remember in private stores, the driver writes the file."""
    folder = request.getfixturevalue(data)
    kw = dict(seeds=[0, 1], limit=4, rounds=2, strategies=B1_R3)
    serial = run(folder, tmp_path / "serial", **kw)
    assert run(folder, tmp_path / "ray", executor="ray", batch_size=3, **kw) == serial
    rows = memory_rows(tmp_path / "serial" / "memory.sqlite")
    assert rows == memory_rows(tmp_path / "ray" / "memory.sqlite")
    assert sum(r[4] for r in rows["rounds"]) == 16 and len(rows["visits"]) > 16  # every round finished


def test_a_driver_killed_mid_run_resumes_to_the_serial_bytes(hk6, tmp_path):
    """SIGKILL the driver of a supervised Ray run, rerun the command, compare with a serial run."""
    args = ["benchmark", "--data", str(hk6), "--policy", "random", "--seeds", "2", "--limit", "40", "--rounds", "2",
            "--strategy", "R3", "--no-progress"]
    killed = tmp_path / "killed"
    assert 10 <= kill_after([*args, "--executor", "ray"], killed, 10, 180) < 80
    assert not (killed / "summary.json").exists()
    subprocess.run(_cli(*args, "--executor", "ray", "--out", str(killed)), cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    serial = tmp_path / "serial"
    subprocess.run(_cli(*args, "--out", str(serial)), cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    assert lines(killed / "episodes.jsonl") == lines(serial / "episodes.jsonl")
    assert memory_rows(killed / "memory.sqlite") == memory_rows(serial / "memory.sqlite")


def test_worker_processes_killed_at_random_instants_lose_nothing(hk6, tmp_path):
    """Trials: SIGKILL a running actor's process twice, each at a random number of written
    records; every trial must still write the serial bytes. Counts failed trials (must be 0)."""
    serial = run(hk6, tmp_path / "serial", seeds=[0])
    total, rng, failures, kills, killed = serial.count(b"\n"), random.Random(15), 0, 0, set()
    for trial in range(4):
        out = tmp_path / f"trial{trial}"
        bench = Benchmark(BenchmarkConfig(data=str(hk6), policy="random", seeds=[0], executor="ray"))
        instants = sorted(rng.sample(range(5, total - 20), 2))

        def killer(bench: Benchmark, out: Path, instants: list[int]) -> None:
            nonlocal kills
            for at in instants:
                deadline = time.time() + 120
                while time.time() < deadline:
                    log = out / "episodes.jsonl"
                    written = log.read_bytes().count(b"\n") if log.exists() else 0
                    pids = [int(w.rsplit("pid ", 1)[1]) for w in list(bench.execution.get("actors", {}))]
                    pids = [p for p in pids if p not in killed]
                    if written >= at and pids:
                        break
                    time.sleep(0.005)
                try:
                    pid = rng.choice(pids)
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                    kills += 1
                except (ProcessLookupError, IndexError):  # the run ended first
                    pass

        thread = threading.Thread(target=killer, args=(bench, out, instants))
        thread.start()
        try:
            bench.run(out, progress=False)
        finally:
            thread.join()
        failures += (out / "episodes.jsonl").read_bytes() != serial
    assert failures == 0 and kills >= 6


def test_an_episode_that_keeps_killing_its_worker_ends_with_an_error_record(hk6, tmp_path, monkeypatch):
    """The other episodes (even those queued on the dying actors) keep the serial bytes."""
    serial = lines_of(run(hk6, tmp_path / "serial", seeds=[0], limit=6))
    bad = json.loads(serial[2])["episode_id"]
    got = lines_of(run(hk6, tmp_path / "ray", policy=crashing.registered(monkeypatch), policy_params={"episode": bad},
                       seeds=[0], limit=6, executor="ray", batch_size=2))
    assert got[:2] + got[3:] == serial[:2] + serial[3:]
    failed = json.loads(got[2])
    assert failed["episode_id"] == bad and failed["end_reason"] == "error" and failed["path"] == [failed["start"]]
    assert failed["error"].startswith("ray: failed 3 times; last: ")
    execution = run.summary["execution"]
    assert execution["failed_episodes"] == 1 and execution["actors_replaced"] >= 3


def test_a_model_folder_missing_on_the_workers_fails_at_start_up(hk6, tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match=r"could not start: ConfigError: transformers backend: model folder "
                                          rf"'{missing}' does not exist.*same path on every Ray node"):
        run(hk6, tmp_path / "out", policy="vlm", policy_params={"backend": "transformers", "model": str(missing)},
            limit=2, executor="ray")
    assert not (tmp_path / "out" / "episodes.jsonl").read_bytes()


def test_an_unknown_executor_is_refused_listing_the_known_ones(hk6, tmp_path):
    with pytest.raises(ConfigError, match=r"unknown executor 'dask'; known: local, ray"):
        run(hk6, tmp_path / "out", executor="dask")


def lines_of(data: bytes) -> list[str]:
    return data.decode().splitlines()


def test_an_ablation_grid_on_ray_gives_the_local_tables(hk6, tmp_path):
    """2 policies x 4 cells, 2 rounds: the same metric tables and the same bytes in every cell."""
    from cityseeker_ros.core.evaluation.ablation import (
        AblationConfig,
        ablation_tables,
        cells_from,
        policies_from,
        run_ablation,
    )

    def grid(out: Path, **kw) -> dict:
        return run_ablation(AblationConfig(data=str(hk6), policies=policies_from(["random", "forward"]),
                                           cells=cells_from("baseline,B1,R3,oracle:B2"), limit=4, rounds=2, **kw),
                            out, progress=False)

    local, distributed = grid(tmp_path / "local"), grid(tmp_path / "ray", executor="ray")
    assert ablation_tables(distributed)[:2] == ablation_tables(local)[:2]
    cells = [p.relative_to(tmp_path / "local") for p in (tmp_path / "local").glob("*/*/episodes.jsonl")]
    assert len(cells) == 8
    assert all((tmp_path / "ray" / c).read_bytes() == (tmp_path / "local" / c).read_bytes() for c in cells)


def test_no_address_starts_a_local_instance_even_beside_a_dead_cluster_file(hk6, tmp_path):
    """Ray's `init()` without an address joins the cluster named in /tmp/ray/ray_current_cluster,
    which a killed run leaves behind: it then waits forever on a dead GCS. `--executor ray` with
    no --ray-address must start its own instance instead."""
    import ray._private.utils as ray_utils

    marker = Path(ray_utils.get_ray_address_file(None))
    saved = marker.read_bytes() if marker.exists() else None
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("127.0.0.1:9")  # nothing listens on the discard port
    try:
        code = ("from cityseeker_ros.core.evaluation.executors.ray import connect; "
                "ray = connect(None); print(ray.is_initialized()); ray.shutdown()")
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip().endswith("True"), done.stderr[-2000:]
    finally:
        if saved is None:
            marker.unlink(missing_ok=True)
        else:
            marker.write_bytes(saved)
