"""The landmarks family: registered, its prompts and rules, its task file read with every error
named, and a world folder built on the fly run end to end."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.tasks.family import family_names, get_family


def test_the_family_is_registered_and_an_unknown_one_is_refused_listing_the_known():
    family = get_family("landmarks")
    assert family.name == "landmarks" and "landmarks" in family_names()
    assert family.tasks_file == "tasks.landmarks.json"
    assert family.metric_keys == ("sr", "spl", "osr", "final_m", "steps") and family.success_metric == "sr"
    assert set(family.headline) <= set(family.metric_keys) and set(family.breakdown) <= set(family.metric_keys)
    with pytest.raises(ConfigError, match=r"unknown task family 'landmark'; known: .*landmarks.*needs"):
        get_family("landmark")


def test_prompt_forms_for_the_vlm_policy():
    prompts = get_family("landmarks").prompts
    assert prompts.goal_label == "Goal" and not prompts.answers
    assert "landmarks" in prompts.system and "direction and distance" in prompts.system
    assert prompts.stop_question.endswith("are you at the goal?")


def test_the_budget_is_the_episodes_own_under_the_run_s_cap(grid_folder):
    from cityseeker_ros.core.datasets import load_dataset

    (world,) = load_dataset(grid_folder, family="landmarks")
    family = get_family("landmarks")
    assert family.default_max_steps() == 150  # PReP's 2.5 x the generator's longest route, 60 steps
    for e in world.episodes:
        assert e.family == "landmarks" and family.budget(e, family.default_max_steps()) == e.budget
        assert e.budget == int(np.ceil(2.5 * (len(e.reference_path) - 1)))
        assert family.budget(e, 5) == 5  # --max-steps caps every family


def test_describe_gives_the_world_block(grid_folder, generated):
    assert get_family("landmarks").describe(grid_folder) == generated.document["world"]


def _broken(folder, change):
    path = folder / "tasks.landmarks.json"
    doc = json.loads(path.read_text())
    change(doc["tasks"][0])
    path.write_text(json.dumps(doc))
    return doc["tasks"][0]["id"]


@pytest.mark.parametrize("change, field", [
    (lambda t: t.pop("budget"), "budget"),
    (lambda t: t["details"].pop("goal_relations"), "details.goal_relations"),
    (lambda t: t["details"].update(goal_relations=[]), "details.goal_relations"),
    (lambda t: t["details"]["goal_relations"][0].update(direction="up"), "details.goal_relations[0]"),
    (lambda t: t["details"]["goal_relations"][0].update(landmark="way/99"), "details.goal_relations[0]"),
    (lambda t: t["details"]["landmark_relations"][0].update(subject="goal"), "details.landmark_relations[0]"),
    (lambda t: t["details"]["landmarks"].append({"name": "x"}), "details.landmarks[4]"),
    (lambda t: t.update(category="Basic POI"), "category"),
])
def test_a_bad_task_fails_naming_the_file_record_and_field(grid_folder, change, field):
    from cityseeker_ros.core.worlds.folder import load_world

    task_id = _broken(grid_folder, change)
    with pytest.raises(DataError) as err:
        load_world(grid_folder, split="test", family="landmarks")
    text = str(err.value)
    assert "tasks.landmarks.json" in text and field in text, text
    assert task_id in text or "tasks[0]" in text, text


def test_a_task_file_of_another_family_is_refused(grid_folder):
    from cityseeker_ros.core.worlds.folder import load_world

    path = grid_folder / "tasks.landmarks.json"
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "family": "questions"}))
    with pytest.raises(DataError, match="holds 'questions' tasks"):
        load_world(grid_folder, family="landmarks")


def test_a_world_folder_runs_end_to_end_with_the_baselines(grid_folder):
    from cityseeker_ros.core.agents.policies import make_policy
    from cityseeker_ros.core.datasets import load_dataset
    from cityseeker_ros.core.evaluation.episode_run import run_episode
    from cityseeker_ros.core.evaluation.metrics import summarize

    (world,) = load_dataset(grid_folder, family="landmarks")
    episodes = world.episodes  # the 30 test tasks
    results = {}
    for name in ("oracle", "random", "landmark-oracle"):
        policy = make_policy(name)
        records = [run_episode(world, e, policy, seed=0) for e in episodes]
        assert all("error" not in r for r in records), [r["error"] for r in records if "error" in r]
        assert all(r["family"] == "landmarks" and r["budget"] == e.budget for r, e in zip(records, episodes))
        assert all(r["steps"] <= e.budget for r, e in zip(records, episodes))
        results[name] = {k: np.mean([r["metrics"][k] for r in records]) for k in records[0]["metrics"]}
        summary = summarize(copy.deepcopy(records))
        assert json.dumps(summary)  # summarised by the family's measures, JSON all through
    assert results["oracle"]["sr"] == 100.0 and results["oracle"]["spl"] == 100.0  # the ceiling
    assert results["random"]["sr"] <= 10.0  # PReP: random gets almost nothing
    assert results["random"]["sr"] < results["landmark-oracle"]["sr"] <= 100.0
