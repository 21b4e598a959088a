"""A family's world facts read as lines, not as a raw dict: units from the keys, distributions as
ranges, a count beside the names it counts."""
from __future__ import annotations

from cityseeker_ros.core.evaluation.world_facts import distribution_text, number_text, world_facts_lines

LANDMARK_FACTS = {  # the shape of tasks.landmarks.json's `world` block (Monaco, shortened)
    "landmarks": 3,
    "landmark_names": ["Petite chapelle", "Église des Carmes", "Le Roccabella"],
    "goal_nodes": 1636,
    "node_spacing_m": 17.0,
    "shortest_routes": {"test": {"hops": {"n": 100, "min": 8.0, "median": 31.0, "max": 50.0, "mean": 30.5},
                                 "m": {"n": 100, "min": 109.4, "median": 523.1, "max": 835.3, "mean": 505.2}},
                        "dev": {"hops": {"n": 0}, "m": {"n": 0}}},
    "budget_rule": "ceil(2.5 x shortest route steps)",
    "direction_tolerance_deg": 22.5,
}


def test_landmark_facts_read_one_fact_a_line():
    assert world_facts_lines({"monaco": LANDMARK_FACTS}) == [
        "  monaco, the world's task facts:",
        "    landmarks: 3 (Petite chapelle, Église des Carmes, Le Roccabella)",
        "    goal nodes: 1,636",
        "    node spacing: 17 m",
        "    shortest routes, test, hops: 8–50 (median 31, mean 30.5, n 100)",
        "    shortest routes, test, length: 109.4–835.3 m (median 523.1 m, mean 505.2 m, n 100)",
        "    shortest routes, dev, hops: none",
        "    shortest routes, dev, length: none",
        "    budget rule: ceil(2.5 x shortest route steps)",
        "    direction tolerance: 22.5°",
    ]


def test_question_facts_read_with_flat_mappings_on_one_line():
    facts = {"questions": 40, "by_kind": {"name": 10, "colour": 12}, "route_m": {},
             "start_distance_m": {"min": 12.0, "median": 80.5, "max": 180.0},
             "legibility": {"view": {"width": 640, "fov_deg": 90}, "min_visible": 2}}
    assert world_facts_lines({"kotka": facts}, indent="") == [
        "kotka, the world's task facts:",
        "  questions: 40",
        "  by kind: name 10, colour 12",
        "  route: none",
        "  start distance: 12–180 m (median 80.5 m)",
        "  legibility, view: width 640, fov 90°",
        "  legibility, min visible: 2",
    ]


def test_no_line_is_a_raw_python_container():
    lines = world_facts_lines({"monaco": LANDMARK_FACTS, "b": {"odd": [{"a": 1}], "flag": True}})
    assert not any("{'" in line or "['" in line for line in lines)
    assert "    odd: [{\"a\": 1}]" in lines and "    flag: True" in lines  # JSON where nothing reads better


def test_numbers_and_distributions():
    assert [number_text(v) for v in (1636, 31.0, 30.54, 0.125, "x")] == ["1,636", "31", "30.54", "0.12", "x"]
    assert distribution_text({"min": 1.0, "max": 2.0}, " m") == "1–2 m"
    assert distribution_text({"n": 0}) == "none"
