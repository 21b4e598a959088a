"""PReP's goal inferences and their reconciliation: the calculator the paper says the geometry needs.

PReP (section 4.2) infers the goal from a landmark sighting: the landmark is seen along some
bearing at some distance, and the description says where the goal lies from that landmark; "the
essence of this problem is the cosine theorem, so the results can be further improved using
calculators". Here the calculator does it: in a local (east, north) metre frame, the goal is

    where I am + (bearing, distance to the landmark) + (the description's offset from it)

a vector sum (the cosine theorem's triangle written as coordinates), with the stated relations'
offsets from core/tasks/landmarks (relations.py, estimate.py). Landmarks the description names
that were never seen are placed through the landmark-to-landmark relations (estimate.place_landmarks).

Reflection (section 4.3, appendix G.1) keeps every inference in absolute coordinates, so one made
steps ago still points at the same place from wherever the agent is now (the paper's
anticipation when no landmark is in sight), and reconciles them: inferences far from the others
are outliers and are dropped (the paper's example drops (19, -24) beside (54, -26) and (58, -25)),
and the rest are averaged. `direction_from` turns the result into the words the planner reads.
Nothing here calls a model.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median
from typing import Optional

from cityseeker_ros.core.tasks.landmarks.estimate import XY, Anchored, least_squares, place_landmarks
from cityseeker_ros.core.tasks.landmarks.relations import Relation, compass_word, polar_xy, xy_bearing_distance

# An inference this many times the inferences' median spread from their median point is an
# outlier; spreads below MIN_SPREAD_M count as MIN_SPREAD_M (identical guesses reject nothing).
OUTLIER_FACTOR = 3.0
MIN_SPREAD_M = 5.0


@dataclass(frozen=True)
class Sighting:
    """A landmark seen from `at` along `bearing_deg` (the view's heading) about `distance_m` away."""

    landmark: str
    at: XY
    bearing_deg: float
    distance_m: float

    def landmark_xy(self) -> XY:
        dx, dy = polar_xy(self.bearing_deg, self.distance_m)
        return self.at[0] + dx, self.at[1] + dy


@dataclass(frozen=True)
class Inference:
    """Where the goal was believed to be (absolute east, north metres), from where and when."""

    step: int
    at: XY
    goal: XY


def infer_goal(sightings: Sequence[Sighting], goal_relations: Sequence[Relation],
               landmark_relations: Sequence[Relation] = (), trust: float = 0.5) -> Optional[XY]:
    """The goal from this step's sightings: each seen landmark placed by vector sum, the unseen
    ones the description names placed through landmark relations (weight `trust` per hop), and
    the goal as the least-squares point of the goal relations anchored on them. None when no
    relation's landmark could be placed."""
    known: dict[str, tuple[XY, float]] = {}
    for lm in {s.landmark for s in sightings}:
        points = [s.landmark_xy() for s in sightings if s.landmark == lm]
        known[lm] = ((sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points)), 1.0)
    placed = place_landmarks(known, landmark_relations, trust)
    anchored = [Anchored(r, placed[r.landmark][0], placed[r.landmark][1]) for r in goal_relations
                if r.landmark in placed]
    return least_squares(anchored) if anchored else None


def reconcile(inferences: Sequence[Inference]) -> tuple[Optional[XY], list[Inference]]:
    """(the reconciled goal, the inferences kept): the inferences further than OUTLIER_FACTOR
    times their median spread from their median point are dropped, the rest averaged. Two
    inferences cannot outvote each other: both are kept and averaged. None when there are none."""
    if not inferences:
        return None, []
    if len(inferences) <= 2:
        kept = list(inferences)
    else:
        mx, my = median(i.goal[0] for i in inferences), median(i.goal[1] for i in inferences)
        off = [math.hypot(i.goal[0] - mx, i.goal[1] - my) for i in inferences]
        spread = max(median(off), MIN_SPREAD_M)
        kept = [i for i, d in zip(inferences, off) if d <= OUTLIER_FACTOR * spread]
    return (sum(i.goal[0] for i in kept) / len(kept), sum(i.goal[1] for i in kept) / len(kept)), kept


@dataclass(frozen=True)
class Direction:
    """A goal as seen from where the agent stands: bearing (degrees from north), distance (m),
    and the 8-point compass word."""

    bearing_deg: float
    distance_m: float

    @property
    def word(self) -> str:
        return compass_word(self.bearing_deg)

    def phrase(self) -> str:
        """"north-east 120 m" (PReP: "South 22 steps")."""
        return f"{self.word} {self.distance_m:.0f} m"


def direction_from(here: XY, goal: XY) -> Direction:
    """The goal's bearing and distance from `here`: the vector difference, in words."""
    bearing, distance = xy_bearing_distance(goal[0] - here[0], goal[1] - here[1])
    return Direction(bearing, distance)


def rounded(xy: XY) -> tuple[int, int]:
    """Coordinates as the prompts write them: whole metres."""
    return int(round(xy[0])), int(round(xy[1]))
