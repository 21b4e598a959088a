"""The street graph: panorama nodes joined by directed, walkable edges."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
from scipy.spatial import cKDTree

from cityseeker_ros.core.streets.geodesy import LocalFrame, circular_difference, geodesic_m, pairwise_geodesic_m

# Two records of one directed edge are the same edge when they agree this closely (files round).
SAME_AZIMUTH_DEG = 1e-6
SAME_LENGTH = 1e-6


@dataclass(frozen=True)
class Node:
    """A panorama location. `heading` is the capture vehicle's heading; walkable headings keep
    the provider's order, because policies (and the paper's baselines) address them by index."""

    id: str
    lat: float
    lon: float
    heading: float
    walkable_headings: tuple[float, ...]


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    azimuth: float
    length_m: float


def same_edge(azimuth_a: float, length_a: float, azimuth_b: float, length_b: float) -> bool:
    """Do two records of one directed edge agree (a repeat), or contradict each other?"""
    return (abs(circular_difference(azimuth_a, azimuth_b)) <= SAME_AZIMUTH_DEG
            and abs(length_a - length_b) <= SAME_LENGTH)


class StreetGraph:
    """Each node id and each directed edge (source, target) appears once: a second copy would be
    dropped or doubled somewhere (a dict, networkx, the action model), so it is refused here and
    loaders report repeats in their files by record."""

    def __init__(self, nodes: Iterable[Node], edges: Iterable[Edge], name: str = "") -> None:
        self.name = name
        self.nodes: dict[str, Node] = {}
        for n in nodes:
            if n.id in self.nodes:
                raise ValueError(f"node {n.id} given twice")
            self.nodes[n.id] = n
        self._out: dict[str, list[Edge]] = {nid: [] for nid in self.nodes}
        self.edges: list[Edge] = []
        pairs: set[tuple[str, str]] = set()
        for e in edges:
            if e.source not in self.nodes or e.target not in self.nodes:
                raise ValueError(f"edge {e.source}->{e.target} references a node not in the graph")
            if (e.source, e.target) in pairs:
                raise ValueError(f"edge {e.source}->{e.target} given twice")
            pairs.add((e.source, e.target))
            self._out[e.source].append(e)
            self.edges.append(e)
        self._ids = list(self.nodes)
        self._index = {nid: i for i, nid in enumerate(self._ids)}
        self._latlon = np.array([[self.nodes[i].lat, self.nodes[i].lon] for i in self._ids], dtype=float)
        centre = self._latlon.mean(axis=0) if len(self._ids) else np.zeros(2)
        self.frame = LocalFrame(float(centre[0]), float(centre[1]))
        self._xy = self.frame.to_xy(self._latlon[:, 0], self._latlon[:, 1]) if len(self._ids) else np.zeros((0, 2))
        self._kdtree = cKDTree(self._xy) if len(self._ids) else None
        self._nx: nx.DiGraph | None = None
        self._paths: dict[tuple[str, str], tuple[str, ...]] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.nodes

    def out_edges(self, node_id: str) -> Sequence[Edge]:
        return self._out[node_id]

    def latlon(self, node_ids: Sequence[str]) -> np.ndarray:
        """(n, 2) array of lat, lon for the given nodes."""
        return self._latlon[[self._index[n] for n in node_ids]]

    def distance_m(self, a: str, b: str) -> float:
        na, nb = self.nodes[a], self.nodes[b]
        return geodesic_m(na.lat, na.lon, nb.lat, nb.lon)

    def distances_to_set_m(self, node_id: str, others: Sequence[str]) -> np.ndarray:
        return pairwise_geodesic_m(self.latlon([node_id]), self.latlon(list(others)))[0]

    def nearest_nodes(self, lat: float, lon: float, k: int = 1) -> list[tuple[str, float]]:
        """The k nodes closest to a point, with planar distances in metres (exact to cm at city scale)."""
        if self._kdtree is None:
            return []
        k = min(k, len(self._ids))
        dist, idx = self._kdtree.query(self.frame.to_xy(lat, lon), k=k)
        dist, idx = np.atleast_1d(dist), np.atleast_1d(idx)
        return [(self._ids[i], float(d)) for d, i in zip(dist, idx)]

    def nearest_node(self, lat: float, lon: float) -> str:
        return self.nearest_nodes(lat, lon, 1)[0][0]

    def nodes_within(self, lat: float, lon: float, radius_m: float) -> list[str]:
        if self._kdtree is None:
            return []
        return [self._ids[i] for i in self._kdtree.query_ball_point(self.frame.to_xy(lat, lon), radius_m)]

    def to_networkx(self) -> nx.DiGraph:
        if self._nx is None:
            g = nx.DiGraph()
            g.add_nodes_from(self.nodes)
            for e in self.edges:
                g.add_edge(e.source, e.target, length=e.length_m, azimuth=e.azimuth)
            self._nx = g
        return self._nx

    def shortest_path(self, source: str, target: str) -> tuple[str, ...]:
        """Metric shortest path over all edges (not only the ones an action can take); cached."""
        key = (source, target)
        if key not in self._paths:
            self._paths[key] = tuple(nx.shortest_path(self.to_networkx(), source, target, weight="length"))
        return self._paths[key]
