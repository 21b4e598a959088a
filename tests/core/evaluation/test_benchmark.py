"""The benchmark runner: output format, determinism across workers, and crash-safe resume."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from cityseeker_ros.core.agents.policies.base import Policy
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.evaluation.episode_run import EpisodeRun, run_together
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks.environment import move

REPO = Path(__file__).resolve().parents[3]
METRICS = ["tce", "tcp40", "tcp50", "tcp60", "tcc", "spl", "spd", "dtw_per_ref_m", "ndtw", "osr", "as", "solvable"]


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_output_files_have_the_documented_shape(tiny_city, tmp_path):
    out = tmp_path / "out"
    summary = Benchmark(BenchmarkConfig(data=str(tiny_city), policy="random", seeds=[0, 1])).run(out, progress=False)
    recs = [json.loads(x) for x in lines(out / "episodes.jsonl")]
    assert len(recs) == 4
    for key in ("episode_id", "city", "category", "difficulty", "seed", "path", "final_node", "end_reason",
                "steps", "metrics"):
        assert key in recs[0]
    assert list(recs[0]["metrics"]) == METRICS
    assert recs[0]["path"][-1] == recs[0]["final_node"]
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(summary))
    assert {"overall", "overall_sd", "by_category", "by_city", "by_difficulty", "config"} <= set(on_disk)
    assert set(METRICS) <= set(on_disk["overall"]) and on_disk["overall"]["episodes"] == 2
    cfg = on_disk["config"]
    assert cfg["seeds"] == [0, 1] and cfg["policy"] == "random" and cfg["package_version"]
    assert all(len(h) == 64 for h in cfg["data_files"].values()) and len(cfg["data_files"]) == 2
    assert json.loads((out / "config.json").read_text())["data_files"] == cfg["data_files"]


def test_serial_and_two_workers_write_identical_results(hk6, tmp_path):
    def run(workers, out):
        cfg = BenchmarkConfig(data=str(hk6), policy="random", seeds=[0, 1], limit=30, workers=workers)
        Benchmark(cfg).run(out, progress=False)
        return (out / "episodes.jsonl").read_bytes()

    serial, parallel = run(1, tmp_path / "serial"), run(2, tmp_path / "parallel")
    assert serial == parallel and serial.count(b"\n") == 60


def test_lockstep_batches_write_the_same_results(hk6, tmp_path):
    def run(out, **kw):
        cfg = BenchmarkConfig(data=str(hk6), policy="random", seeds=[0, 1], limit=20, **kw)
        Benchmark(cfg).run(out, progress=False)
        return (out / "episodes.jsonl").read_bytes()

    serial = run(tmp_path / "serial")
    assert run(tmp_path / "batched", batch_size=3) == serial
    assert run(tmp_path / "both", batch_size=4, workers=2) == serial


class Fragile(Policy):
    """Decides in batches, and breaks on one episode: only that episode may end with `error`."""

    uses_images = False
    calls: list[int] = []

    def act(self, observation):
        if self.episode.episode_id.endswith("-1"):
            raise RuntimeError("backend fell over")
        return move(0)

    @classmethod
    def act_together(cls, policies, observations):
        cls.calls.append(len(policies))
        return [p.act(o) for p, o in zip(policies, observations)]


def test_a_failing_decision_in_a_batch_ends_only_its_episode(hk6):
    world = load_dataset(hk6)[0]
    episodes = list(world.episodes[:4])
    episodes[1] = replace(episodes[1], episode_id="x-1")
    runs = [EpisodeRun(world, e, Fragile(), 0, max_steps=5) for e in episodes]
    records = run_together(runs)
    assert [r["end_reason"] == "error" for r in records] == [False, True, False, False]
    assert "backend fell over" in records[1]["error"] and Fragile.calls[0] == 4
    assert all(r["steps"] == 5 for i, r in enumerate(records) if i != 1)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "cityseeker_ros", *args]


def kill_after(args: list[str], out: Path, records: int, timeout_s: float) -> int:
    """Run `cityseeker ARGS --out OUT` and SIGKILL it once episodes.jsonl holds `records` lines;
    the number of lines it left."""
    proc = subprocess.Popen(_cli(*args, "--out", str(out)), cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    log = out / "episodes.jsonl"
    deadline = time.time() + timeout_s
    while time.time() < deadline and (not log.exists() or log.read_bytes().count(b"\n") < records):
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return log.read_bytes().count(b"\n")


def test_kill_and_resume_loses_and_duplicates_nothing(hk6, tmp_path):
    """SIGKILL a real run mid-way, rerun the same command, and compare with a clean run."""
    args = ["benchmark", "--data", str(hk6), "--policy", "random", "--seeds", "3", "--no-progress",
            "--workers", "2"]
    killed = tmp_path / "killed"
    partial = kill_after(args, killed, 60, 120)
    assert 60 <= partial < 531
    assert not (killed / "summary.json").exists()

    subprocess.run(_cli(*args, "--out", str(killed)), cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    clean = tmp_path / "clean"
    subprocess.run(_cli(*args, "--out", str(clean)), cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    resumed = lines(killed / "episodes.jsonl")
    keys = [(json.loads(x)["episode_id"], json.loads(x)["seed"]) for x in resumed]
    assert len(keys) == len(set(keys)) == 531
    assert resumed == lines(clean / "episodes.jsonl")
    a, b = (json.loads((d / "summary.json").read_text()) for d in (killed, clean))
    assert a["overall"] == b["overall"] and a["by_category"] == b["by_category"]


def test_torn_last_line_is_cut_and_redone(tiny_city, tmp_path):
    out = tmp_path / "out"
    cfg = BenchmarkConfig(data=str(tiny_city), policy="random", seeds=[0, 1])
    Benchmark(cfg).run(out, progress=False)
    full = (out / "episodes.jsonl").read_bytes()
    first_two = b"".join(full.splitlines(keepends=True)[:2])
    (out / "episodes.jsonl").write_bytes(first_two + full.splitlines(keepends=True)[2][:40])
    Benchmark(cfg).run(out, progress=False)
    assert (out / "episodes.jsonl").read_bytes() == full


def test_resume_refuses_different_settings_but_accepts_more_seeds(tiny_city, tmp_path):
    out = tmp_path / "out"
    Benchmark(BenchmarkConfig(data=str(tiny_city), policy="random", seeds=[0])).run(out, progress=False)
    with pytest.raises(ConfigError, match=r"different settings \(policy: 'random' -> 'forward'"):
        Benchmark(BenchmarkConfig(data=str(tiny_city), policy="forward", seeds=[0])).run(out, progress=False)
    with pytest.raises(ConfigError, match="max_steps"):
        Benchmark(BenchmarkConfig(data=str(tiny_city), policy="random", max_steps=5)).run(out, progress=False)
    summary = Benchmark(BenchmarkConfig(data=str(tiny_city), policy="random", seeds=[0, 1])).run(out, progress=False)
    assert len(lines(out / "episodes.jsonl")) == 4 and summary["overall"]["seeds"] == 2


def test_limit_and_bad_options(tiny_city, tmp_path):
    config = BenchmarkConfig(data=str(tiny_city), policy="oracle", limit=1)
    summary = Benchmark(config).run(tmp_path / "o", progress=False)
    assert summary["overall"]["episodes"] == 1 and summary["overall"]["tce"] == 100.0
    assert summary["config"]["privileged"] is True
    for bad, match in [(dict(seeds=[]), "--seeds"), (dict(max_steps=0), "--max-steps"), (dict(limit=0), "--limit"),
                       (dict(workers=0), "--workers"), (dict(policy="nope"), "unknown policy 'nope'")]:
        with pytest.raises(ConfigError, match=match):
            Benchmark(BenchmarkConfig(**{"data": str(tiny_city), "policy": "random", **bad}))
