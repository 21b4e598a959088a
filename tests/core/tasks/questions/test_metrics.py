"""The family's measures on finished trajectories: accuracy by normalised exact match, invalid
answers counted and never raised, navigation accuracy to the target object, steps."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.evaluation.episode_run import episode_record
from cityseeker_ros.core.streets.geodesy import geodesic_m
from cityseeker_ros.core.tasks.environment import Environment, answer, move
from cityseeker_ros.core.tasks.family import get_family
from cityseeker_ros.core.tasks.questions.answers import MAX_ANSWER_CHARS
from cityseeker_ros.core.tasks.trajectory import EndReason
from cityseeker_ros.core.worlds.folder import load_world


@pytest.fixture(scope="module")
def world(street_folder):
    return load_world(street_folder, split="test", family="questions")


def run(world, episode, moves, said):
    env = Environment(world)
    env.reset(episode)
    for index in moves:
        env.step(move(index))
    if said is not None:
        result = env.step(answer(said))
        assert result.done and result.end_reason is EndReason.ANSWERED
    return env.trajectory


def test_a_right_answer_scores_100_and_the_record_says_what_was_asked_and_said(world):
    ep = world.episodes[0]
    traj = run(world, ep, [], ep.details["answer"].upper())
    rec = episode_record(world, ep, 0, traj, [], max_steps=35, dtw_threshold_m=3.0)
    assert rec["metrics"]["accuracy"] == 100.0 and rec["metrics"]["answered"] == 100.0
    assert rec["metrics"]["answer_invalid"] == 0.0 and rec["metrics"]["steps"] == 0.0
    assert list(rec["metrics"]) == list(get_family("questions").metric_keys)
    assert rec["family"] == "questions" and rec["question"] == ep.details["question"]
    assert rec["answer"] == ep.details["answer"].upper() and rec["expected"] == ep.details["answer"]
    assert rec["answer_correct"] is True and rec["end_reason"] == "answered"
    start = world.graph.nodes[ep.start]
    assert rec["metrics"]["na_m"] == pytest.approx(geodesic_m(start.lat, start.lon, *ep.details["target_latlon"]),
                                                   abs=1e-3)


@pytest.mark.parametrize("said", ["", "   ", "y" * (MAX_ANSWER_CHARS + 1)])
def test_an_invalid_answer_is_counted_and_scored_wrong_without_raising(world, said):
    ep = world.episodes[0]
    traj = run(world, ep, [0], said)
    m = get_family("questions").score(world, ep, traj, True, dtw_threshold_m=3.0)
    assert m["answer_invalid"] == 100.0 and m["accuracy"] == 0.0 and m["answered"] == 100.0
    assert m["steps"] == 1.0


def test_no_answer_at_all_is_neither_right_nor_invalid(world):
    ep = world.episodes[0]
    env = Environment(world)
    env.reset(ep)
    while not env.done:
        env.step(move(0))
    m = get_family("questions").score(world, ep, env.trajectory, True, dtw_threshold_m=3.0)
    assert env.trajectory.end_reason is EndReason.BUDGET_EXHAUSTED or env.done
    assert m["answered"] == 0.0 and m["answer_invalid"] == 0.0 and m["accuracy"] == 0.0
