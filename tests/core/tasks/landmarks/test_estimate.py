"""The goal from stated relations: least squares, the words' region, landmarks placed by others."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.tasks.landmarks.estimate import Anchored, estimate_goal, least_squares, place_landmarks
from cityseeker_ros.core.tasks.landmarks.relations import GOAL, Relation


def rel(landmark: str, direction: str, distance: int, subject: str = GOAL, tolerance: float = 25.0) -> Relation:
    return Relation(subject, subject, landmark, landmark, direction, distance, 0.0, 0.0, 22.5, tolerance)


def test_exact_words_place_the_goal_where_they_meet():
    # A at the origin, B 300 m east: "300 m north of A" and "424 m north-west of B" meet near (0, 300).
    anchored = [Anchored(rel("A", "north", 300), (0.0, 0.0)), Anchored(rel("B", "north-west", 424), (300.0, 0.0))]
    x, y = least_squares(anchored)
    assert (x, y) == pytest.approx((0.0, 300.0), abs=1.0)
    gx, gy = estimate_goal(anchored)
    assert abs(gx) < 40 and abs(gy - 300) < 40


def test_the_region_centroid_stays_inside_what_the_words_allow():
    anchored = [Anchored(rel("A", "north", 300), (0.0, 0.0))]
    x, y = estimate_goal(anchored)
    assert abs(x) < 5 and 270 < y < 300  # the sector's centroid, a little nearer than its centre line


def test_contradicting_landmark_positions_fall_back_to_least_squares():
    anchored = [Anchored(rel("A", "north", 100, tolerance=5), (0.0, 0.0)),
                Anchored(rel("B", "north", 100, tolerance=5), (0.0, 1000.0))]
    assert estimate_goal(anchored) == pytest.approx(least_squares(anchored))


def test_landmarks_not_seen_are_placed_through_landmark_relations_both_ways():
    relations = [rel("A", "east", 200, subject="B"), rel("C", "north", 100, subject="A")]
    placed = place_landmarks({"A": ((10.0, 10.0), 1.0)}, relations, trust=0.5)
    assert placed["B"][0] == pytest.approx((210.0, 10.0)) and placed["B"][1] == 0.5
    assert placed["C"][0] == pytest.approx((10.0, -90.0))


def test_no_relation_is_an_error():
    with pytest.raises(ValueError, match="no relation"):
        least_squares([])
