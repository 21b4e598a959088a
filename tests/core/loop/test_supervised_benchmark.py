"""Supervised benchmark runs: rounds, lockstep and workers agree, oracle runs are labelled, and
a killed multi-round run resumes with its memory and results intact."""
from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from cityseeker_ros.cli import main
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError
from tests.core.evaluation.test_benchmark import REPO, _cli, kill_after, lines

STRATEGIES = [{"name": "B1"}, {"name": "R1"}, {"name": "R2"}, {"name": "R3"}, {"name": "C1"}]


def run(data, out, **kw) -> dict:
    cfg = BenchmarkConfig(data=str(data), policy="random", **kw)
    return Benchmark(cfg).run(out, progress=False)


def test_rounds_are_recorded_and_the_final_round_is_scored(hk6, tmp_path):
    summary = run(hk6, tmp_path / "r", seeds=[0], limit=6, rounds=3, strategies=STRATEGIES)
    records = [json.loads(x) for x in lines(tmp_path / "r" / "episodes.jsonl")]
    assert len(records) == 6 and all(len(r["rounds"]) == 2 for r in records)
    assert [r["round"] for r in records[0]["rounds"]] == [0, 1] and records[0]["supervisor"]["round"] == 2
    assert summary["overall"]["episodes"] == 6 and summary["config"]["rounds"] == 3
    with sqlite3.connect(tmp_path / "r" / "memory.sqlite") as db:
        assert db.execute("select count(*) from rounds where finished").fetchone()[0] == 18


def test_lockstep_and_workers_give_the_same_supervised_results(hk6, tmp_path):
    kw = dict(seeds=[0, 1], limit=8, rounds=2, strategies=STRATEGIES)
    run(hk6, tmp_path / "serial", **kw)
    run(hk6, tmp_path / "both", batch_size=3, workers=2, **kw)
    assert lines(tmp_path / "both" / "episodes.jsonl") == lines(tmp_path / "serial" / "episodes.jsonl")


def test_oracle_strategies_label_the_run_and_must_be_asked_for(hk6, tmp_path):
    with pytest.raises(ConfigError, match="enable it explicitly as oracle:B2"):
        run(hk6, tmp_path / "x", limit=2, strategies=[{"name": "B2"}])
    summary = run(hk6, tmp_path / "o", limit=2, strategies=[{"name": "B2", "oracle": True}])
    assert summary["config"]["privileged"] is True and summary["config"]["oracle_strategies"] == ["B2"]
    plain = run(hk6, tmp_path / "p", limit=2, strategies=[{"name": "B1"}])
    assert plain["config"]["privileged"] is False


def test_cli_strategy_flags(hk6, tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["benchmark", "--data", str(hk6), "--policy", "random", "--limit", "2", "--no-progress",
                 "--strategy", "oracle:B2:k=2", "--strategy", "R3:n=5", "--rounds", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "strategies oracle:B2+R3, 2 rounds" in printed and "[ORACLE: privileged information]" in printed
    config = json.loads((out / "config.json").read_text())
    assert config["strategies"] == [{"name": "B2", "oracle": True, "k": 2}, {"name": "R3", "n": 5}]
    assert main(["benchmark", "--data", str(hk6), "--policy", "random", "--strategy", "R3:5",
                 "--out", str(tmp_path / "bad")]) == 2
    assert "--strategy 'R3:5': expected key=value" in capsys.readouterr().err


def _memory_rows(path: Path) -> dict[str, list]:
    with sqlite3.connect(path) as db:
        return {t: sorted(db.execute(f"select * from {t}").fetchall(), key=repr)
                for t in ("rounds", "visits", "decisions", "edges")}


def test_kill_a_multi_round_run_and_resume_it(hk6, tmp_path):
    """SIGKILL a real 3-round run mid-way and rerun the command: results and memory equal a clean run's."""
    args = ["benchmark", "--data", str(hk6), "--policy", "random", "--limit", "60", "--rounds", "3", "--no-progress",
            "--strategy", "B1", "--strategy", "R1", "--strategy", "R3", "--strategy", "C2"]
    killed = tmp_path / "killed"
    assert 20 <= kill_after(args, killed, 20, 180) < 60 and not (killed / "summary.json").exists()

    subprocess.run(_cli(*args, "--out", str(killed)), cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    clean = tmp_path / "clean"
    subprocess.run(_cli(*args, "--out", str(clean)), cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    assert lines(killed / "episodes.jsonl") == lines(clean / "episodes.jsonl")
    a, b = (json.loads((d / "summary.json").read_text()) for d in (killed, clean))
    assert a["overall"] == b["overall"]
    assert _memory_rows(killed / "memory.sqlite") == _memory_rows(clean / "memory.sqlite")
