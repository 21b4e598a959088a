"""Every family honours the run's settings and refuses what does not fit, before anything runs:
`max_steps` caps each episode's own budget (PReP's, CityEQA's) and records and the report show
the budget used; a policy of another family is refused naming the family's policies; a world
without the family's task file says why. Worlds: the landmark grid and the questions' high
street, both hand-made and small."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cityseeker_ros.core.agents.policies.families import policies_for
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.evaluation.report.page import write_report
from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.tasks.family import get_family
from tests.core.tasks.questions.conftest import high_street
from tests.core.tasks.questions.conftest import write_world_folder as write_question_world


@pytest.fixture(scope="module")
def question_dir(tmp_path_factory) -> Path:
    graph, scene = high_street()
    doc = get_family("questions").generate(graph.name, graph, scene, seed=0).document
    return write_question_world(tmp_path_factory.mktemp("worlds") / "highstreet", graph, scene, doc)


def _run(data: Path, out: Path, family: str, policy: str, **kw) -> list[dict]:
    Benchmark(BenchmarkConfig(data=str(data), family=family, policy=policy, **kw)).run(out, progress=False)
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


def _budget_line(out: Path) -> str:
    _, md = write_report(out)
    (line,) = [x for x in md.read_text().splitlines() if x.startswith("| Step budget |")]
    return line


@pytest.mark.parametrize("family, policy", [("landmarks", "oracle"), ("questions", "question-oracle")])
def test_max_steps_caps_every_family_and_the_report_shows_the_budget_used(grid_dir, question_dir, tmp_path,
                                                                         family, policy):
    data = grid_dir if family == "landmarks" else question_dir
    records = _run(data, tmp_path / "capped", family, policy, max_steps=5, limit=4)
    assert records and all(r["budget"] == 5 and r["steps"] <= 5 for r in records)
    assert json.loads((tmp_path / "capped" / "config.json").read_text())["max_steps"] == 5
    assert _budget_line(tmp_path / "capped") == "| Step budget | 5 |"
    # Without a cap each episode keeps its own budget (PReP's 2.5 x route, CityEQA's 50), the report says so.
    records = _run(data, tmp_path / "own", family, policy, limit=4)
    own = sorted({r["budget"] for r in records})
    assert own[0] > 5 and (own == [50] if family == "questions" else len(own) > 1)
    expected = "50" if family == "questions" else f"{own[0]}-{own[-1]} (each episode's own, capped at 150)"
    assert _budget_line(tmp_path / "own") == f"| Step budget | {expected} |"


@pytest.mark.parametrize("family, policy, oracle", [
    ("landmarks", "question-oracle", "'oracle'"), ("questions", "oracle", "'question-oracle'"),
    ("questions", "random", None), ("landmarks", "ocr-embed", None)])
def test_a_policy_of_another_family_is_refused_before_anything_runs(grid_dir, question_dir, tmp_path, family,
                                                                    policy, oracle):
    data = grid_dir if family == "landmarks" else question_dir
    config = BenchmarkConfig(data=str(data), family=family, policy=policy)
    with pytest.raises(ConfigError) as caught:
        Benchmark(config)
    line = str(caught.value)
    assert line.startswith(f"--policy {policy} does not serve the {family} task family") and "\n" not in line
    assert line.endswith(", ".join(policies_for(family))) and get_family(family).oracle in line
    assert (f"its oracle is {oracle}" in line) if oracle else "its oracle is" not in line
    assert not (tmp_path / "out").exists()


def test_a_world_without_the_family_s_tasks_says_why_from_world_json(grid_dir, tmp_path):
    world = tmp_path / "gridtown"
    world.mkdir()
    for name in ("graph.json", "scene.json", "tasks.json"):
        (world / name).write_bytes((grid_dir / name).read_bytes())
    meta = json.loads((grid_dir / "world.json").read_text())
    meta["warnings"] = ["no landmark goals: 2 landmarks in the extract; a goal needs 3"]
    (world / "world.json").write_text(json.dumps(meta))
    with pytest.raises(DataError) as caught:
        Benchmark(BenchmarkConfig(data=str(world), family="landmarks", policy="landmark-oracle"))
    assert str(caught.value) == (f"{world / 'tasks.landmarks.json'}: missing: the world has no landmark goals: "
                                 "2 landmarks in the extract; a goal needs 3 (world.json's warnings)")


def test_facts_map_runs_only_the_questions_whose_every_fact_is_the_maps(question_dir, tmp_path):
    tasks = json.loads((question_dir / "tasks.questions.json").read_text())["tasks"]
    made = {t["id"] for t in tasks if t["split"] == "test" and t["details"]["kind"] in ("colour", "floors")}
    assert made, "the high street must have renderer-made questions for this test to mean anything"
    every = _run(question_dir, tmp_path / "all", "questions", "question-oracle")
    kept = _run(question_dir, tmp_path / "map", "questions", "question-oracle", facts="map")
    assert {r["episode_id"] for r in kept} == {r["episode_id"] for r in every} - made
    assert json.loads((tmp_path / "map" / "config.json").read_text())["facts"] == "map"
    with pytest.raises(ConfigError, match="use a new --out or the same settings"):  # a resume must match
        _run(question_dir, tmp_path / "map", "questions", "question-oracle")


@pytest.mark.parametrize("family, facts, words", [
    ("landmarks", "map", "--facts map applies to the questions family"),
    ("questions", "maps", "--facts 'maps': choose one of all, map")])
def test_facts_that_cannot_apply_are_refused_in_one_line(grid_dir, tmp_path, family, facts, words):
    with pytest.raises(ConfigError, match=words):
        BenchmarkConfig(data=str(grid_dir), family=family, policy="oracle", facts=facts).validate()
