"""How tightly a description's words pin its goal: the street nodes they fit, and how far apart.

A node fits the words when every stated relation ("about 300 m north-east of the cathedral")
holds for it within the relation's own tolerances (+-22.5 degrees, +-half a rounding step),
measured as the generator measures the truth: WGS84 geodesics from the landmark's point to the
node. The goal always fits its own words. A goal is kept only when every node that fits lies
within PIN_RADIUS_M of it.

PIN_RADIUS_M is the project's choice: 50 m, one step of PReP's graph ("discretized at
intervals of 50 meters", PReP section 3.2). PReP cannot tell apart places closer than one of
its nodes, so words that leave nothing fitting beyond 50 m of the goal pin it as finely as
PReP's own graph can; a tighter radius (our ~20 m node spacing) would keep almost no goal
(three stated relations at 300 m still leave a region ~50 m across).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from cityseeker_ros.core.streets.geodesy import WGS84
from cityseeker_ros.core.tasks.landmarks.relations import Relation, word_bearing

if TYPE_CHECKING:
    from cityseeker_ros.core.streets.graph import StreetGraph

PIN_RADIUS_M = 50.0


@dataclass(frozen=True)
class Consistency:
    """The nodes a goal's words fit (nearest the goal first), the farthest of them from the goal
    (`radius_m`) and the farthest pair (`extent_m`), geodesic metres."""

    nodes: tuple[str, ...]
    radius_m: float
    extent_m: float

    def pinned(self, radius_m: float) -> bool:
        return self.radius_m <= radius_m


class WordFit:
    """Bearing and distance from every landmark to every street node, measured once per world,
    so that the nodes fitting any set of relations are a few array comparisons."""

    def __init__(self, graph: StreetGraph, landmarks: Mapping[str, tuple[float, float]]) -> None:
        self.graph = graph
        self.ids = sorted(graph.nodes)
        self.latlon = graph.latlon(self.ids)
        n = len(self.ids)
        self._measured: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for lid, (lat, lon) in landmarks.items():
            az, _, dist = WGS84.inv(np.full(n, lon), np.full(n, lat), self.latlon[:, 1], self.latlon[:, 0])
            self._measured[lid] = (np.atleast_1d(az) % 360.0, np.atleast_1d(dist))
        self._masks: dict[tuple[str, str, int, float, float], np.ndarray] = {}

    def mask(self, relation: Relation) -> np.ndarray:
        """Which nodes (in `ids` order) the relation's words describe."""
        key = (relation.landmark, relation.direction, relation.distance_m, relation.direction_tolerance_deg,
               relation.distance_tolerance_m)
        found = self._masks.get(key)
        if found is None:
            if relation.landmark not in self._measured:
                raise ValueError(f"relation names landmark {relation.landmark!r}, which the world does not have")
            az, dist = self._measured[relation.landmark]
            off = (az - word_bearing(relation.direction) + 180.0) % 360.0 - 180.0
            found = self._masks[key] = ((np.abs(off) <= relation.direction_tolerance_deg)
                                        & (np.abs(dist - relation.distance_m) <= relation.distance_tolerance_m))
        return found

    def fitting(self, relations: Sequence[Relation]) -> list[str]:
        """The nodes every relation describes (none when there is no relation to go by)."""
        if not relations:
            return []
        ok = np.ones(len(self.ids), dtype=bool)
        for r in relations:
            ok &= self.mask(r)
        return [self.ids[i] for i in np.flatnonzero(ok)]

    def radius(self, goal: str, relations: Sequence[Relation]) -> tuple[list[str], np.ndarray]:
        """The fitting nodes and their geodesic distances from `goal`."""
        fit = self.fitting(relations)
        if not fit:
            return [], np.zeros(0)
        return fit, self.graph.distances_to_set_m(goal, fit)

    def consistency(self, goal: str, relations: Sequence[Relation]) -> Consistency:
        fit, dist = self.radius(goal, relations)
        if not fit:
            return Consistency((), 0.0, 0.0)
        order = np.lexsort((np.array(fit), dist))
        nodes = tuple(fit[k] for k in order)
        extent = 0.0
        if len(nodes) > 1:
            ll = self.graph.latlon(list(nodes))
            i, j = np.triu_indices(len(nodes), 1)
            _, _, pair = WGS84.inv(ll[i, 1], ll[i, 0], ll[j, 1], ll[j, 0])
            extent = float(np.max(pair))
        return Consistency(nodes, round(float(dist.max()), 2), round(extent, 2))
