"""What a goal's words fit: the nodes every relation describes, their radius about the goal."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.tasks.landmarks.ambiguity import PIN_RADIUS_M, WordFit
from cityseeker_ros.core.tasks.landmarks.relations import GOAL, Relation, bearing_distance
from tests.core.tasks.landmarks.gridtown import node_id, point


def test_one_far_landmark_fits_a_wide_band_and_a_second_cuts_it_down(grid):
    west = point(-300.0, 140.0)  # 300 m west of row 7, column 0
    south = point(140.0, -300.0)
    fit = WordFit(grid, {"w": west, "s": south})
    goal = node_id(7, 7)  # 440 m east of "w", 440 m north of "s"
    g = grid.nodes[goal]
    by_w = Relation.measure(GOAL, "The goal", "w", "W", west, (g.lat, g.lon))
    by_s = Relation.measure(GOAL, "The goal", "s", "S", south, (g.lat, g.lon))
    one = fit.consistency(goal, [by_w])
    both = fit.consistency(goal, [by_w, by_s])
    assert goal in one.nodes and goal in both.nodes and one.nodes[0] == goal  # nearest the goal first
    assert set(both.nodes) < set(one.nodes)
    assert one.radius_m > 100 > PIN_RADIUS_M >= both.radius_m
    assert not one.pinned(PIN_RADIUS_M) and both.pinned(PIN_RADIUS_M)
    assert both.extent_m >= both.radius_m
    # Every node it names fits the words, and no node it leaves out does.
    for n in grid.nodes:
        node = grid.nodes[n]
        ok = all(r.holds(*bearing_distance(*where, node.lat, node.lon))
                 for r, where in ((by_w, west), (by_s, south)))
        assert ok == (n in both.nodes)


def test_no_relation_fits_nothing_and_an_unknown_landmark_is_refused(grid):
    fit = WordFit(grid, {"a": point(0.0, 0.0)})
    assert fit.fitting([]) == [] and fit.consistency(node_id(0, 0), []).nodes == ()
    far = Relation.measure(GOAL, "The goal", "b", "B", destination(48.0, 2.0, 0.0, 10.0), (48.0, 2.0))
    with pytest.raises(ValueError, match="landmark 'b'"):
        fit.fitting([far])
