"""landmark-seeker, the honest CPU agent: it sees only images (here a stand-in renderer that
paints each landmark's crown flat in its colour), the description and the public landmark list."""
from __future__ import annotations

import numpy as np
import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.evaluation.episode_run import run_episode
from cityseeker_ros.core.tasks.landmarks.generator import LandmarkTaskSettings, generate_landmark_tasks
from tests.core.tasks.landmarks.gridtown import SMALL, PatchViews, grid_graph, grid_scene, write_world_folder


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from cityseeker_ros.core.datasets import load_dataset

    graph = grid_graph()
    scene = grid_scene(graph)
    doc = generate_landmark_tasks("gridtown", graph, scene, LandmarkTaskSettings(**SMALL)).document
    world = load_dataset(write_world_folder(tmp_path_factory.mktemp("w") / "gridtown", graph, scene, doc),
                         family="landmarks")[0]
    return world, PatchViews(graph, scene, width=240, height=180)


def test_it_is_honest():
    policy = make_policy("landmark-seeker")
    assert not policy.privileged and policy.uses_images


def test_it_finds_the_goal_from_what_it_sees(setup):
    world, views = setup
    episodes = world.episodes[:10]
    records = [run_episode(world, e, make_policy("landmark-seeker"), seed=0, views=views) for e in episodes]
    assert all("error" not in r for r in records), [r.get("error") for r in records]
    assert all(r["landmarks_seen"] for r in records)
    sr = np.mean([r["metrics"]["sr"] for r in records])
    random_sr = np.mean([run_episode(world, e, make_policy("random"), seed=0)["metrics"]["sr"] for e in episodes])
    assert sr >= 40.0 > random_sr


def test_blind_it_explores_and_stops_before_the_budget_runs_out(setup):
    world, _ = setup
    record = run_episode(world, world.episodes[0], make_policy("landmark-seeker"), seed=0)  # no images at all
    assert record["end_reason"] == "stopped" and record["steps"] == world.episodes[0].budget - 1
    assert record["landmarks_seen"] == []


@pytest.mark.parametrize("bad", [{"fov_deg": 0}, {"arrive_m": 0}, {"trust": 2}])
def test_bad_parameters_are_refused(bad):
    with pytest.raises(ValueError, match="landmark-seeker"):
        make_policy("landmark-seeker", **bad)
