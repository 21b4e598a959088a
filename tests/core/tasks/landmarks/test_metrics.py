"""SR, SPL, OSR, final distance and steps; success is a stop within one node of the goal."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.tasks.episode import Episode
from cityseeker_ros.core.tasks.landmarks.metrics import METRIC_KEYS, landmark_metrics, success_nodes, success_radius_m
from cityseeker_ros.core.tasks.trajectory import EndReason, Trajectory
from tests.core.tasks.landmarks.gridtown import node_id


def episode() -> Episode:
    route = tuple(node_id(0, j) for j in range(6))  # 5 hops east along the bottom row
    return Episode("e", "gridtown", "two landmarks", "easy", "The goal is ...", "...", route[0], route[-1], route,
                   family="landmarks", budget=13)


def score(grid, path, reason=EndReason.STOPPED):
    return landmark_metrics(grid, episode(), Trajectory(path=list(path), end_reason=reason))


def test_stopping_at_the_goal_or_one_edge_from_it_succeeds(grid):
    route = episode().reference_path
    assert success_nodes(grid, node_id(0, 5)) == {node_id(0, 5), node_id(0, 4), node_id(0, 6), node_id(1, 5)}
    assert success_radius_m(grid, node_id(0, 5)) == pytest.approx(20.0, abs=0.01)
    at_goal = score(grid, route)
    assert list(at_goal) == list(METRIC_KEYS)
    assert at_goal == pytest.approx({"sr": 100.0, "spl": 100.0, "osr": 100.0, "final_m": 0.0, "steps": 5.0}, abs=1e-6)
    beside = score(grid, route + (node_id(1, 5),))
    assert beside["sr"] == 100.0 and beside["spl"] == pytest.approx(100 * 100 / 120, abs=0.01)
    assert beside["final_m"] == pytest.approx(20.0, abs=0.01)


def test_two_edges_away_or_out_of_budget_fails(grid):
    route = episode().reference_path
    short = score(grid, route[:-2])
    assert short["sr"] == 0.0 and short["spl"] == 0.0 and short["osr"] == 0.0
    assert short["final_m"] == pytest.approx(40.0, abs=0.01)
    passed = score(grid, route + (route[-2], route[-3]))  # reached the goal, walked on and stopped
    assert passed["sr"] == 0.0 and passed["osr"] == 100.0 and passed["steps"] == 7.0
    assert score(grid, route, EndReason.BUDGET_EXHAUSTED)["sr"] == 0.0  # PReP: over the limit fails
    never = score(grid, route[:2])
    assert never["osr"] == 0.0 and never["steps"] == 1.0
