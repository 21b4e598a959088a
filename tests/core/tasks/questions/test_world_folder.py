"""End to end: a world folder with the family's task file, loaded as the benchmark loads it, run
with the question oracle (every answer right) and the blind random baseline."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.evaluation.episode_run import run_episode
from cityseeker_ros.core.worlds.folder import load_world


@pytest.fixture(scope="module")
def world(street_folder):
    return load_world(street_folder, split="test", family="questions")


def test_the_question_oracle_answers_every_question_right(world):
    records = [run_episode(world, ep, make_policy("question-oracle"), seed=0) for ep in world.episodes]
    assert records and all(r["end_reason"] == "answered" for r in records)
    assert [r["metrics"]["accuracy"] for r in records] == [100.0] * len(records)
    assert all(r["metrics"]["steps"] <= 49 and r["metrics"]["solvable"] == 100.0 for r in records)
    # It answers where the target's board is legible: the end of the reference path.
    assert all(r["final_node"] == r["target"] for r in records)


def test_random_walks_and_guesses_within_the_budget(world):
    records = [run_episode(world, ep, make_policy("question-random"), seed=s) for ep in world.episodes
               for s in range(3)]
    assert all("error" not in r for r in records)
    assert all(r["steps"] <= 50 for r in records)
    assert all(r["end_reason"] == "answered" and r["answer"] for r in records)
    assert sum(r["metrics"]["accuracy"] for r in records) / len(records) < 100.0
    again = [run_episode(world, ep, make_policy("question-random"), seed=0) for ep in world.episodes]
    assert [r["answer"] for r in again] == [r["answer"] for r in records[::3]]
