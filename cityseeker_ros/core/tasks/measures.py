"""Path measures every task family may use: dynamic time warping between two paths."""
from __future__ import annotations

import numpy as np

DEFAULT_DTW_THRESHOLD_M = 50.0


def dtw_m(cost: np.ndarray) -> float:
    """Dynamic time warping over a cost matrix (rows: agent path, columns: reference path).

    The cells of one anti-diagonal (i + j = k) depend only on earlier ones, so each anti-diagonal
    is one vectorised step: n + m steps instead of n * m. In the row-major (n+1) x (m+1) table an
    anti-diagonal is a slice of stride m, and its up, left and diagonal neighbours are the same
    slice shifted by m + 1, 1 and m + 2. Each cell is still cost + min(up, left, diagonal), the
    same floating-point operations as the cell-by-cell loop, so results are bit-identical."""
    cost = np.asarray(cost, dtype=float)
    n, m = cost.shape
    if n == 0 or m == 0:
        return 0.0 if n == m else float("inf")  # what the cell-by-cell table held there
    width = m + 1
    acc = np.full((n + 1) * width, np.inf)
    acc[0] = 0.0
    padded = np.zeros((n + 1, width))
    padded[1:, 1:] = cost
    padded = padded.ravel()
    for k in range(2, n + m + 1):
        first, last = max(1, k - m), min(n, k - 1)  # rows i of this anti-diagonal
        cells = slice(first * m + k, last * m + k + 1, m)  # flat index of (i, k - i) is i * m + k
        up = acc[first * m + k - width: last * m + k - width + 1: m]
        left = acc[first * m + k - 1: last * m + k: m]
        diagonal = acc[first * m + k - width - 1: last * m + k - width: m]
        acc[cells] = padded[cells] + np.minimum(np.minimum(up, left), diagonal)
    return float(acc[-1])
