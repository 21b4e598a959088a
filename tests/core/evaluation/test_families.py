"""Every layer that runs needs runs the other task families with nothing of their own: the
benchmark and its summary, the Ray executor (the serial bytes), supervised rounds, ablation,
compare's reading, the report and its step viewer. The world is the hand-made landmark grid of
tests/core/tasks/landmarks/gridtown.py, with its landmark-goal tasks."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cityseeker_ros.core.evaluation import ablation
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.compare import comparison_table, load_runs, reading
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.evaluation.report.page import write_report
from cityseeker_ros.core.infra.errors import ConfigError


def run(data: Path, out: Path, policy: str, **kw) -> dict:
    config = BenchmarkConfig(data=str(data), policy=policy, family="landmarks", per_category=3, **kw)
    return Benchmark(config).run(out, progress=False)


def test_a_landmark_run_is_summarised_by_its_measures_with_the_world_s_facts(grid_dir, tmp_path):
    summary = run(grid_dir, tmp_path / "oracle", "oracle")
    assert [k for k in summary["overall"] if k not in ("episodes", "seeds")] == ["sr", "spl", "osr", "final_m",
                                                                                "steps"]
    assert summary["overall"]["sr"] == 100.0
    facts = summary["config"]["task_family"]
    assert facts["name"] == "landmarks" and facts["world"]["gridtown"]["landmarks"] == 4
    records = [json.loads(x) for x in (tmp_path / "oracle" / "episodes.jsonl").read_text().splitlines()]
    assert {r["family"] for r in records} == {"landmarks"} and all(r["budget"] >= r["steps"] for r in records)


def test_the_ray_executor_writes_the_serial_bytes_of_a_landmark_run(grid_dir, tmp_path):
    kw = dict(seeds=[0, 1], strategies=[{"name": "B1"}], rounds=2)
    run(grid_dir, tmp_path / "serial", "random", **kw)
    run(grid_dir, tmp_path / "ray", "random", executor="ray", batch_size=2, **kw)
    serial = (tmp_path / "serial" / "episodes.jsonl").read_bytes()
    assert serial and (tmp_path / "ray" / "episodes.jsonl").read_bytes() == serial


def test_compare_reads_a_landmark_run_between_chance_and_the_ceiling_and_refuses_mixed_families(grid_dir, tiny_city,
                                                                                               tmp_path):
    for policy in ("random", "forward", "landmark-oracle", "oracle"):
        run(grid_dir, tmp_path / policy, policy)
    runs = load_runs([tmp_path / p for p in ("forward", "random", "landmark-oracle", "oracle")])
    table = comparison_table(runs)
    assert table.header[2:7] == ("SR (%)", "SPL (%)", "OSR (%)", "Final distance (m)", "Steps (steps)")
    line = reading(runs)
    assert line.startswith("Reading: forward reaches SR ") and "(oracle 100.0)" in line
    assert "perfect reading" in line  # landmark-oracle: PReP's ground-truth perception
    # A needs run beside them is refused before its episodes are compared.
    Benchmark(BenchmarkConfig(data=str(tiny_city), policy="random")).run(tmp_path / "needs", progress=False)
    with pytest.raises(ConfigError, match="compare runs of one task family"):
        load_runs([tmp_path / "random", tmp_path / "needs"])


def test_the_report_shows_the_family_s_measures_paper_rows_and_facts(grid_dir, tmp_path):
    run(grid_dir, tmp_path / "run", "landmark-oracle")
    html_path, md_path = write_report(tmp_path / "run")
    md = md_path.read_text()
    assert "Overall: Landmark goals" in md and "| SR | % |" in md
    assert "Comparison with the paper" in md and "PReP, oracle perception" in md
    assert "The world's task facts" in md and "Solvable ceiling" not in md
    assert "Success (SR)" in md and "Success (TCP50)" not in md
    assert "Task family | landmarks" in md


def test_an_ablation_of_a_landmark_run_tables_sr_and_spl(grid_dir, tmp_path):
    config = ablation.AblationConfig(data=str(grid_dir), family="landmarks", limit=4,
                                     policies=ablation.policies_from(["random"]),
                                     cells=ablation.cells_from("baseline,B1"))
    doc = ablation.run_ablation(config, tmp_path / "ablate", progress=False)
    first = ablation.ablation_tables(doc)[0]
    assert [row[1] for row in first.rows] == ["SR (%)", "SPL (%)"]
    assert "SR higher is better, SPL higher is better" in first.note
