"""Runs side by side: one row per run over the same episodes, refused over different ones."""
from __future__ import annotations

import json

import pytest

from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.compare import COLUMNS, comparison
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.evaluation.report.tables import fmt, fmt_mean_sd
from cityseeker_ros.core.infra.errors import ConfigError


def _run(tiny_city, out, **settings):
    Benchmark(BenchmarkConfig(data=str(tiny_city), **settings)).run(out, progress=False)
    return json.loads((out / "summary.json").read_text())


def test_one_row_per_run_with_the_summary_figures(tiny_city, tmp_path):
    oracle = _run(tiny_city, tmp_path / "oracle", policy="oracle")
    random = _run(tiny_city, tmp_path / "random", policy="random", seeds=[0, 1, 2])
    table = comparison([tmp_path / "oracle", tmp_path / "random"])
    assert [row[0] for row in table.rows] == ["oracle [ORACLE] (oracle)", "random (random)"]
    assert [row[1] for row in table.rows] == ["2 x 1", "2 x 3"]
    assert table.rows[0][2:2 + len(COLUMNS)] == tuple(fmt(oracle["overall"][k]) for k in COLUMNS)
    assert table.rows[1][2:2 + len(COLUMNS)] == tuple(fmt_mean_sd(random["overall"][k], random["overall_sd"][k])
                                                      for k in COLUMNS)
    assert table.rows[1][-1] == "6 budget_exhausted"


def test_runs_over_other_episodes_or_too_few_runs_are_refused(tiny_city, tmp_path):
    _run(tiny_city, tmp_path / "all", policy="random")
    _run(tiny_city, tmp_path / "one", policy="random", limit=1)
    with pytest.raises(ConfigError, match=r"ran different episodes \(1 in one only, e.g. tinytown-1\)"):
        comparison([tmp_path / "all", tmp_path / "one"])
    with pytest.raises(ConfigError, match="at least two run folders"):
        comparison([tmp_path / "all"])
