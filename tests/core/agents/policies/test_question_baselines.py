"""The questions family's blind random baseline and its privileged oracle, on the hand-made high
street (tests/core/tasks/questions/conftest.py)."""
from __future__ import annotations

import numpy as np
import pytest

from cityseeker_ros.core.agents.policies import POLICIES, make_policy
from cityseeker_ros.core.agents.policies.question_baselines import GUESSES
from cityseeker_ros.core.evaluation.episode_run import run_episode
from cityseeker_ros.core.tasks.family import get_family
from tests.core.tasks.questions.conftest import street_world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return street_world(tmp_path_factory.mktemp("w") / "highstreet")


def test_the_familys_baselines_are_registered_policies():
    family = get_family("questions")
    assert all(name in POLICIES for name in family.baselines)
    assert POLICIES.get("question-oracle").privileged and not POLICIES.get("question-random").privileged


def test_random_guesses_from_the_kind_of_answer_asked(world):
    for ep in world.episodes:
        said = {run_episode(world, ep, make_policy("question-random"), seed=s)["answer"] for s in range(4)}
        assert said <= set(GUESSES[ep.details["kind"]])


def test_the_oracle_answers_the_scenes_fact_at_the_end_of_the_reference_path(world):
    for ep in world.episodes:
        r = run_episode(world, ep, make_policy("question-oracle"), seed=0)
        assert r["path"] == list(ep.reference_path)
        assert r["answer"] == ep.details["answer"] and r["metrics"]["accuracy"] == 100.0


def test_the_oracle_refuses_to_run_without_the_world(world):
    with pytest.raises(ValueError, match="needs the world"):
        make_policy("question-oracle").reset(world.episodes[0], np.random.default_rng(0), None)
