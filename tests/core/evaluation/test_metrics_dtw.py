"""The vectorised DTW gives the very floats of the cell-by-cell definition, so records written
before and after it are byte-identical."""
from __future__ import annotations

import numpy as np

from cityseeker_ros.core.tasks.measures import dtw_m


def dtw_by_cell(cost: np.ndarray) -> float:
    """The textbook recurrence, one cell at a time (the implementation dtw_m replaced)."""
    n, m = cost.shape
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            acc[i, j] = cost[i - 1, j - 1] + min(acc[i - 1, j], acc[i, j - 1], acc[i - 1, j - 1])
    return float(acc[n, m])


def test_vectorised_dtw_equals_the_cell_by_cell_recurrence_bit_for_bit():
    rng, trials, mismatches = np.random.default_rng(15), 0, 0
    for n in range(0, 41, 3):
        for m in range(0, 41, 4):
            for scale in (1.0, 73.3, 1e4):
                cost = rng.random((n, m)) * scale
                trials += 1
                mismatches += dtw_by_cell(cost) != dtw_m(cost)
    assert trials == 462 and mismatches == 0


def test_dtw_of_identical_paths_is_zero_and_of_a_detour_is_its_cost():
    assert dtw_m(np.zeros((5, 5))) == 0.0
    cost = np.array([[0.0, 10.0], [3.0, 10.0], [7.0, 0.0]])  # best: down, then diagonal
    assert dtw_m(cost) == dtw_by_cell(cost) == 3.0
