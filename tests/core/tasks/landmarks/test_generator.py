"""Landmark-goal tasks on a hand-made world: PReP's rules, determinism, and why there are none."""
from __future__ import annotations

import json
import math

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import geodesic_m
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.tasks.landmarks.generator import (
    CATEGORIES,
    LandmarkTaskSettings,
    budget_for,
    difficulty_for,
    generate_landmark_tasks,
)
from tests.core.tasks.landmarks.gridtown import SMALL, grid_scene


def test_tasks_follow_preps_rules(grid, generated, small_settings):
    doc = generated.document
    assert generated.why_none is None and doc["family"] == "landmarks" and doc["version"] == "1"
    tasks = doc["tasks"]
    assert [t["split"] for t in tasks].count("test") == small_settings.test_tasks
    assert [t["split"] for t in tasks].count("dev") == small_settings.dev_tasks
    assert len({t["id"] for t in tasks}) == len(tasks)
    assert len({(t["start"], t["target"]) for t in tasks}) == len(tasks)
    actions = ActionModel(grid)
    for t in tasks:
        route, hops = t["reference_path"], t["details"]["shortest_hops"]
        assert route[0] == t["start"] and route[-1] == t["target"] and len(route) == hops + 1
        assert actions.route_executable(route)
        assert actions.hops_from(t["start"])[t["target"]] == hops  # the fewest actions, not just a route
        assert small_settings.min_hops <= hops <= small_settings.max_hops
        assert t["budget"] == math.ceil(2.5 * hops) > hops
        assert t["difficulty"] == difficulty_for(hops) and t["category"] in CATEGORIES
        assert CATEGORIES.index(t["category"]) + 1 == min(3, len(t["details"]["goal_relations"]))
        assert t["instruction"].startswith("The goal is about ") and " Landmarks: " in t["instruction"]
        assert t["details"]["success_radius_m"] == pytest.approx(20.0, abs=0.1)
    assert sum(generated.counts.values()) == len(tasks)


def test_the_world_block_states_landmarks_and_the_route_distribution(generated):
    world = generated.document["world"]
    assert world["landmarks"] == 4 and "St Nicholas Cathedral" in world["landmark_names"]
    hops = [t["details"]["shortest_hops"] for t in generated.document["tasks"] if t["split"] == "test"]
    dist = world["shortest_routes"]["test"]["hops"]
    assert (dist["n"], dist["min"], dist["max"]) == (len(hops), min(hops), max(hops))
    assert dist["mean"] == pytest.approx(sum(hops) / len(hops), abs=0.05)
    assert world["node_spacing_m"] == 20.0 and world["direction_tolerance_deg"] == 22.5
    assert "2.5" in world["budget_rule"] and "one street edge" in world["success_rule"]


def test_routes_follow_the_drawn_normal_on_a_world_big_enough(grid):
    scene = grid_scene(grid)
    doc = generate_landmark_tasks("g", grid, scene, LandmarkTaskSettings(
        test_tasks=60, dev_tasks=0, route_mean_hops=14, route_sd_hops=4, min_hops=4, max_hops=28)).document
    dist = doc["world"]["shortest_routes"]["test"]["hops"]
    assert 12 <= dist["mean"] <= 16 and 12 <= dist["median"] <= 16


def test_the_same_seed_makes_the_same_file_and_another_seed_another(grid_world):
    graph, scene = grid_world
    settings = LandmarkTaskSettings(**SMALL)
    first = json.dumps(generate_landmark_tasks("g", graph, scene, settings).document, sort_keys=True)
    again = json.dumps(generate_landmark_tasks("g", graph, scene, settings).document, sort_keys=True)
    reseeded = LandmarkTaskSettings(**{**SMALL, "seed": 1})
    other = json.dumps(generate_landmark_tasks("g", graph, scene, reseeded).document, sort_keys=True)
    assert first == again and first != other


def test_a_world_without_landmarks_has_no_landmark_goals_and_says_why(grid):
    result = generate_landmark_tasks("g", grid, grid_scene(grid, count=0), LandmarkTaskSettings(**SMALL))
    assert result.document["tasks"] == [] and result.counts == {}
    assert result.why_none.startswith("no landmarks") and "at least 3" in result.why_none
    assert result.document["world"]["landmarks"] == 0


def test_a_world_with_fewer_than_three_landmarks_names_them(grid):
    result = generate_landmark_tasks("g", grid, grid_scene(grid, count=2), LandmarkTaskSettings(**SMALL))
    assert result.document["tasks"] == []
    assert result.why_none == "2 landmarks (St Nicholas Cathedral, Casino Tower); landmark goals need at least 3"


def test_landmarks_no_street_node_sees_describe_no_goal(grid):
    from dataclasses import replace

    scene = grid_scene(grid)
    scene.landmarks = [replace(m, visible_nodes=()) for m in scene.landmarks]
    result = generate_landmark_tasks("g", grid, scene, LandmarkTaskSettings(**SMALL))
    assert result.document["tasks"] == [] and "no street node sees" in result.why_none


def test_the_family_generates_through_its_interface(grid_world):
    from cityseeker_ros.core.tasks.family import get_family

    graph, scene = grid_world
    result = get_family("landmarks").generate("g", graph, scene, seed=3,
                                              settings=LandmarkTaskSettings(**{**SMALL, "seed": 3}))
    assert result.document["settings"]["seed"] == 3 and result.document["tasks"]


def test_the_description_is_prep_s_every_seen_landmark_and_every_pair(grid_world, generated):
    """PReP section 3.1, Definition 2: R1 relates the goal to every landmark seen from it, R2
    every landmark to every other."""
    graph, scene = grid_world
    pairs = {frozenset((a.id, b.id)) for a in scene.landmarks for b in scene.landmarks if a.id < b.id}
    for t in generated.document["tasks"]:
        goal = graph.nodes[t["target"]]
        seen = {m.id for m in scene.landmarks if t["target"] in m.visible_nodes
                and geodesic_m(goal.lat, goal.lon, m.lat, m.lon) >= 20.0}
        assert {r["landmark"] for r in t["details"]["goal_relations"]} == seen
        assert {frozenset((r["subject"], r["landmark"])) for r in t["details"]["landmark_relations"]} == pairs
        assert len(t["details"]["landmark_relations"]) == len(pairs) == 6


def test_a_goal_is_kept_only_where_its_words_pin_it(grid_world, generated, small_settings):
    graph, _ = grid_world
    ambiguity = generated.document["world"]["goal_ambiguity"]
    assert ambiguity["pin_radius_m"] == small_settings.pin_radius_m == 50.0
    assert ambiguity["described_goal_nodes"] > ambiguity["pinned_goal_nodes"] > 0
    assert ambiguity["described"]["radius_m"]["max"] > 50.0 >= ambiguity["pinned"]["radius_m"]["max"]
    for t in generated.document["tasks"]:
        d = t["details"]
        assert d["consistent_nodes"][0] == t["target"] and d["consistent_radius_m"] <= 50.0
        far = graph.distances_to_set_m(t["target"], d["consistent_nodes"]).max()
        assert far == pytest.approx(d["consistent_radius_m"], abs=0.01)
    assert ambiguity["limits"].startswith("4 landmarks; 225 street nodes see one or more")
    tight = generate_landmark_tasks("g", *grid_world, LandmarkTaskSettings(**{**SMALL, "pin_radius_m": 10.0}))
    assert tight.document["world"]["goal_ambiguity"]["pinned_goal_nodes"] < ambiguity["pinned_goal_nodes"]
    none = generate_landmark_tasks("g", *grid_world, LandmarkTaskSettings(**{**SMALL, "pin_radius_m": 0.001}))
    if none.document["tasks"]:  # nodes whose words fit them alone: the rule keeps exactly those
        assert all(len(t["details"]["consistent_nodes"]) == 1 for t in none.document["tasks"])
    else:
        assert "pin the goal within 0.001 m" in none.why_none


@pytest.mark.parametrize("bad", [{"min_hops": 0}, {"min_hops": 9, "max_hops": 8}, {"budget_factor": 0.5},
                                 {"test_tasks": -1}, {"max_goal_relations": 0}, {"pin_radius_m": 0.0}])
def test_bad_settings_fail_naming_the_setting(grid_world, bad):
    graph, scene = grid_world
    with pytest.raises(ConfigError, match="landmark tasks"):
        generate_landmark_tasks("g", graph, scene, LandmarkTaskSettings(**{**SMALL, **bad}))


def test_budget_is_two_and_a_half_times_the_route_rounded_up():
    assert [budget_for(h) for h in (1, 2, 10, 30, 31)] == [3, 5, 25, 75, 78]
