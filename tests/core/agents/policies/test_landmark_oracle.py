"""landmark-oracle: ground-truth landmark positions, the goal placed from the stated words, a
fewest-actions walk there."""
from __future__ import annotations

import numpy as np
import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.evaluation.episode_run import run_episode
from cityseeker_ros.core.tasks.episode import World
from cityseeker_ros.core.tasks.landmarks.generator import LandmarkTaskSettings, generate_landmark_tasks
from tests.core.tasks.landmarks.gridtown import SMALL, grid_graph, grid_scene, write_world_folder


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from cityseeker_ros.core.datasets import load_dataset

    graph = grid_graph()
    scene = grid_scene(graph)
    doc = generate_landmark_tasks("gridtown", graph, scene, LandmarkTaskSettings(**SMALL)).document
    return load_dataset(write_world_folder(tmp_path_factory.mktemp("w") / "gridtown", graph, scene, doc),
                        family="landmarks")[0]


def test_it_walks_to_a_node_the_words_describe_and_stops_there(world):
    policy = make_policy("landmark-oracle")
    records = [run_episode(world, e, policy, seed=0) for e in world.episodes]
    assert all(r["end_reason"] == "stopped" and "error" not in r for r in records)
    # Every episode ends where it meant to, and that node fits every stated relation.
    assert all(r["final_node"] == r["estimated_goal"] for r in records)
    sr = np.mean([r["metrics"]["sr"] for r in records])
    final = np.mean([r["metrics"]["final_m"] for r in records])
    assert sr >= 50.0 and final < 40.0  # the words are vague (+-22.5 degrees); the oracle is not the ceiling


def test_it_is_repeatable(world):
    a = [run_episode(world, e, make_policy("landmark-oracle"), seed=0)["path"] for e in world.episodes[:5]]
    b = [run_episode(world, e, make_policy("landmark-oracle"), seed=7)["path"] for e in world.episodes[:5]]
    assert a == b


def test_without_a_world_folder_it_says_what_it_needs(world):
    bare = World(world.city, world.graph, world.episodes, {}, root=None)
    record = run_episode(bare, bare.episodes[0], make_policy("landmark-oracle"), seed=0)
    assert record["end_reason"] == "error" and "scene.json" in record["error"]
