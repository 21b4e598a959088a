"""Where the goal is, from stated relations: the geometry both landmark baselines share.

Each relation "about d m <word> of L" with L at a known (or believed) point gives one guess,
L + d along the word's bearing; the weighted mean of the guesses is the least-squares point.
The words also cut out a region (the intersection of annular sectors, one per relation, each
+-22.5 degrees and +-half a rounding step wide); where that region is not empty its centroid is
a better guess than the mean, which can fall outside it. Coordinates are local (east, north)
metres. Chaining relations (agent -> landmark -> goal) is vector addition: the cosine theorem
PReP's agent is asked to apply.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from cityseeker_ros.core.tasks.landmarks.relations import Relation, word_bearing

XY = tuple[float, float]
GRID_M = 4.0  # the region search's cell


@dataclass(frozen=True)
class Anchored:
    """A relation whose landmark stands (or is believed to stand) at `landmark_xy`; `weight`
    says how far that belief is trusted."""

    relation: Relation
    landmark_xy: XY
    weight: float = 1.0


def least_squares(anchored: Sequence[Anchored]) -> XY:
    """The weighted mean of each relation's guess: the point nearest all of them in squares."""
    if not anchored:
        raise ValueError("no relation to place the goal by")
    total = sum(a.weight for a in anchored)
    if not total > 0:
        raise ValueError("relation weights must be positive")
    x = sum(a.weight * (a.landmark_xy[0] + a.relation.offset_xy()[0]) for a in anchored) / total
    y = sum(a.weight * (a.landmark_xy[1] + a.relation.offset_xy()[1]) for a in anchored) / total
    return float(x), float(y)


def fits(anchored: Sequence[Anchored], points: np.ndarray, slack: float = 1.0) -> np.ndarray:
    """Which of `points` (n, 2) every relation's words describe, with tolerances scaled by
    `slack` (an agent whose landmark positions are estimates widens them)."""
    points = np.asarray(points, dtype=float).reshape(-1, 2)
    ok = np.ones(len(points), dtype=bool)
    for a in anchored:
        r = a.relation
        dx, dy = points[:, 0] - a.landmark_xy[0], points[:, 1] - a.landmark_xy[1]
        bearing = np.degrees(np.arctan2(dx, dy)) % 360.0
        off = (bearing - word_bearing(r.direction) + 180.0) % 360.0 - 180.0
        ok &= np.abs(off) <= r.direction_tolerance_deg * slack
        ok &= np.abs(np.hypot(dx, dy) - r.distance_m) <= r.distance_tolerance_m * slack
    return ok


def estimate_goal(anchored: Sequence[Anchored], slack: float = 1.0) -> XY:
    """The centroid of the region the words describe, or the least-squares point where the
    region is empty (estimated landmark positions can contradict each other)."""
    centre = least_squares(anchored)
    reach = max(r.relation.distance_m * math.sin(math.radians(r.relation.direction_tolerance_deg * slack))
                + r.relation.distance_tolerance_m * slack for r in anchored) + 2 * GRID_M
    # The region lies within `reach` of every relation's own guess, so within 2 reach of the mean.
    half = min(2.0 * reach, 1500.0)
    ticks = np.arange(-half, half + GRID_M / 2, GRID_M)
    gx, gy = np.meshgrid(centre[0] + ticks, centre[1] + ticks)
    points = np.stack([gx.ravel(), gy.ravel()], axis=1)
    inside = points[fits(anchored, points, slack)]
    if not len(inside):
        return centre
    return float(inside[:, 0].mean()), float(inside[:, 1].mean())


def place_landmarks(known: dict[str, tuple[XY, float]], relations: Iterable[Relation],
                    trust: float = 0.5) -> dict[str, tuple[XY, float]]:
    """Landmarks not yet placed, placed through landmark-to-landmark relations from those that
    are (either way round); each hop multiplies the weight by `trust`. Returns all of them."""
    placed = dict(known)
    relations = list(relations)
    changed = True
    while changed:
        changed = False
        for r in relations:
            dx, dy = r.offset_xy()
            if r.landmark in placed and r.subject not in placed:
                (x, y), w = placed[r.landmark]
                placed[r.subject] = ((x + dx, y + dy), w * trust)
                changed = True
            elif r.subject in placed and r.landmark not in placed:
                (x, y), w = placed[r.subject]
                placed[r.landmark] = ((x - dx, y - dy), w * trust)
                changed = True
    return placed
