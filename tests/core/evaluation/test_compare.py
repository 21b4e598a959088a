"""Runs side by side: one row per run over the same episodes, refused over different ones."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.compare import Run, comparison, load_runs, reading
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.evaluation.report.tables import fmt, fmt_mean_sd
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks.family import get_family

COLUMNS = get_family("needs").headline


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


def run(policy: str, tcp50: float, sd: float | None = None, episodes: int = 14) -> Run:
    summary = {"config": {"policy": policy}, "overall": {"tcp50": tcp50},
               "overall_sd": {"tcp50": sd} if sd is not None else None}
    return Run(Path(policy), summary, frozenset(f"e{i}" for i in range(episodes)))


def test_the_reading_places_the_agent_between_chance_and_ceiling_and_blames_seeing():
    line = reading([run("ocr-embed", 7.1), run("random", 7.1, 5.1), run("sign-oracle", 28.6), run("oracle", 100.0)])
    assert line == ("Reading: ocr-embed reaches TCP50 7.1, at chance (random 7.1 ± 5.1), 0% of the way to the "
                    "ceiling (oracle 100.0); perfect reading lifts the same decisions to 28.6: seeing fails first.")


def test_the_reading_blames_deciding_when_perfect_reading_does_not_help():
    line = reading([run("vlm", 35.7), run("random", 7.1, 1.0), run("sign-oracle", 35.7), run("oracle", 100.0)])
    assert line.startswith("Reading: vlm reaches TCP50 35.7, above chance (random 7.1 ± 1.0), 31% of the way")
    assert line.endswith("perfect reading (sign-oracle) reaches 35.7: deciding fails, not seeing.")


def test_a_difference_under_one_episode_is_chance_and_no_fixed_points_is_no_reading():
    assert ", at chance (random 7.1)," in reading([run("forward", 10.0), run("random", 7.1), run("oracle", 100.0)])
    assert reading([run("forward", 10.0), run("random", 7.1), run("oracle", 100.0)]).endswith("(oracle 100.0).")
    assert reading([run("ocr-embed", 7.1), run("random", 7.1)]) is None  # no ceiling
    assert reading([run("random", 7.1), run("oracle", 100.0)]) is None  # no agent


def test_load_runs_reads_what_comparison_shows(tiny_city, tmp_path):
    _run(tiny_city, tmp_path / "oracle", policy="oracle")
    _run(tiny_city, tmp_path / "random", policy="random", seeds=[0, 1])
    _run(tiny_city, tmp_path / "forward", policy="forward")
    runs = load_runs([tmp_path / "forward", tmp_path / "random", tmp_path / "oracle"])
    assert [r.policy for r in runs] == ["forward", "random", "oracle"]
    assert reading(runs).startswith("Reading: forward reaches TCP50 ")


def question_run(policy: str, accuracy: float, sd: float | None = None, episodes: int = 10) -> Run:
    summary = {"config": {"policy": policy, "family": "questions"}, "overall": {"accuracy": accuracy},
               "overall_sd": {"accuracy": sd} if sd is not None else None}
    return Run(Path(policy), summary, frozenset(f"q{i}" for i in range(episodes)))


def test_a_question_comparison_reads_between_the_family_s_own_chance_and_ceiling():
    """docs/tasks.md's compare of question runs (question-ocr, question-random, question-oracle):
    chance is question-random, as `compare --help` promises a reading for; it once printed none."""
    line = reading([question_run("question-ocr", 30.0), question_run("question-random", 10.0, 2.0),
                    question_run("question-oracle", 90.0)])
    label = get_family("questions").spec("accuracy").label
    assert line == (f"Reading: question-ocr reaches {label} 30.0, above chance (question-random 10.0 ± 2.0), 25% of "
                    "the way to the ceiling (question-oracle 90.0).")
    with_perfect = reading([question_run("question-ocr", 30.0), question_run("question-random", 10.0),
                            question_run("question-sign-oracle", 60.0), question_run("question-oracle", 90.0)])
    assert with_perfect.endswith("perfect reading lifts the same decisions to 60.0: seeing fails first.")
