"""PReP's calculator: goal inferences by vector sum (the cosine theorem's triangle in
coordinates) and their reconciliation, checked against answers worked by hand."""
from __future__ import annotations

import math

import pytest

from cityseeker_ros.core.agents.seeds.goal_inference import (
    Inference,
    Sighting,
    direction_from,
    infer_goal,
    reconcile,
)
from cityseeker_ros.core.tasks.landmarks.relations import GOAL, Relation


def rel(subject: str, landmark: str, direction: str, distance_m: int) -> Relation:
    return Relation(subject, subject, landmark, landmark, direction, distance_m, 0.0, float(distance_m))


def test_a_sighting_and_a_relation_make_the_goal_by_vector_sum():
    # seen due east 100 m from (0, 0): the landmark at (100, 0); the goal 50 m north of it: (100, 50)
    goal = infer_goal([Sighting("L", (0.0, 0.0), 90.0, 100.0)], [rel(GOAL, "L", "north", 50)])
    assert goal == pytest.approx((100.0, 50.0))


def test_the_cosine_theorem_a_right_angle():
    # the landmark 300 m north, the goal 400 m east of it: 500 m away (3-4-5), bearing atan(4/3)
    goal = infer_goal([Sighting("L", (0.0, 0.0), 0.0, 300.0)], [rel(GOAL, "L", "east", 400)])
    d = direction_from((0.0, 0.0), goal)
    assert d.distance_m == pytest.approx(500.0) and d.bearing_deg == pytest.approx(53.130102, abs=1e-5)
    assert d.word == "north-east" and d.phrase() == "north-east 500 m"


def test_the_cosine_theorem_an_oblique_angle():
    # the landmark 100 m north; the goal 100 m south-east (135 degrees) of it. At the landmark
    # the angle between the way back (180) and the goal (135) is 45 degrees, so
    # c^2 = 100^2 + 100^2 - 2 * 100 * 100 * cos 45 = 5857.86: c = 76.537 m; goal at (70.711, 29.289)
    goal = infer_goal([Sighting("L", (0.0, 0.0), 0.0, 100.0)], [rel(GOAL, "L", "south-east", 100)])
    assert goal == pytest.approx((70.710678, 29.289322))
    assert direction_from((0.0, 0.0), goal).distance_m == pytest.approx(76.536686)


def test_unseen_landmarks_are_placed_through_landmark_relations_at_half_weight():
    seen = [Sighting("L", (0.0, 0.0), 90.0, 100.0)]  # L at (100, 0)
    chain = [rel("M", "L", "east", 200)]  # M 200 m east of L: (300, 0), weight 0.5
    assert infer_goal(seen, [rel(GOAL, "M", "south", 100)], chain) == pytest.approx((300.0, -100.0))
    # both goal relations: (1 * (100, 50) + 0.5 * (300, -100)) / 1.5
    both = infer_goal(seen, [rel(GOAL, "L", "north", 50), rel(GOAL, "M", "south", 100)], chain)
    assert both == pytest.approx((500.0 / 3.0, 0.0))


def test_no_placed_landmark_no_inference():
    assert infer_goal([Sighting("X", (0.0, 0.0), 0.0, 10.0)], [rel(GOAL, "L", "north", 50)]) is None
    assert infer_goal([], [rel(GOAL, "L", "north", 50)]) is None


def test_sightings_of_one_landmark_are_averaged():
    seen = [Sighting("L", (0.0, 0.0), 90.0, 100.0), Sighting("L", (0.0, 0.0), 90.0, 120.0)]
    assert infer_goal(seen, [rel(GOAL, "L", "north", 50)]) == pytest.approx((110.0, 50.0))


def test_reconcile_drops_the_papers_outlier():
    """Appendix G.1: (54, -26), (58, -25) and (19, -24); the third is the outlier, the goal is
    most likely (56, -25.5), south-east (more towards south) of (22, 17)."""
    inferences = [Inference(1, (0.0, 0.0), (54.0, -26.0)), Inference(2, (0.0, 0.0), (58.0, -25.0)),
                  Inference(3, (0.0, 0.0), (19.0, -24.0))]
    goal, kept = reconcile(inferences)
    assert goal == pytest.approx((56.0, -25.5)) and [i.step for i in kept] == [1, 2]
    d = direction_from((22.0, 17.0), goal)
    assert d.word == "south-east" and d.bearing_deg == pytest.approx(180.0 - math.degrees(math.atan(34 / 42.5)))
    assert d.distance_m == pytest.approx(math.hypot(34.0, 42.5))


def test_reconcile_keeps_close_inferences_and_never_lets_two_outvote():
    close = [Inference(k, (0.0, 0.0), (100.0 + k, 200.0 - k)) for k in range(4)]  # within a few metres
    goal, kept = reconcile(close)
    assert len(kept) == 4 and goal == pytest.approx((101.5, 198.5))
    two = [Inference(0, (0.0, 0.0), (0.0, 0.0)), Inference(1, (0.0, 0.0), (100.0, 0.0))]
    assert reconcile(two) == ((50.0, 0.0), two)
    assert reconcile([]) == (None, [])
