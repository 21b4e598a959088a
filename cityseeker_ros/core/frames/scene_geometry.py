"""The street graph and a task's target area as geometry in `map` (east/north metres), for the
markers RViz and Foxglove draw. Plain tuples: the ROS side only wraps them in messages."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from cityseeker_ros.core.frames.geo_origin import MapFrame

Point2 = tuple[float, float]


@dataclass(frozen=True)
class TargetArea:
    """The task's goal in `map`: the target node, every node that satisfies the same request
    (the category's targets, which success also accepts: TCC), and a ring of `radius_m` about
    the target, which a viewer draws as the area to reach."""

    target: Point2
    satisfying: tuple[Point2, ...]
    ring: tuple[Point2, ...]
    radius_m: float


def _xy(map_frame: MapFrame, graph, node_ids) -> list[Point2]:
    out = []
    for node_id in node_ids:
        node = graph.nodes[node_id]
        east, north, _ = map_frame.to_enu(node.lat, node.lon)
        out.append((east, north))
    return out


def graph_segments(graph, map_frame: MapFrame) -> list[tuple[Point2, Point2]]:
    """Each street once (an edge and its reverse are one segment), in a stable order."""
    pairs = sorted({tuple(sorted((e.source, e.target))) for n in graph.nodes for e in graph.out_edges(n)})
    points = _xy(map_frame, graph, [n for pair in pairs for n in pair])
    return [(points[2 * i], points[2 * i + 1]) for i in range(len(pairs))]


def node_position(graph, map_frame: MapFrame, node_id: str) -> Point2:
    if node_id not in graph.nodes:
        raise KeyError(f"node {node_id!r} is not in the street graph")
    return _xy(map_frame, graph, [node_id])[0]


def target_area(world, episode, map_frame: MapFrame, radius_m: float = 15.0, ring_points: int = 36,
                satisfying: Optional[frozenset[str]] = None) -> TargetArea:
    if not math.isfinite(radius_m) or radius_m <= 0:
        raise ValueError(f"target area radius_m must be a positive number, got {radius_m!r}")
    if ring_points < 3:
        raise ValueError(f"target area ring_points must be at least 3, got {ring_points!r}")
    graph = world.graph
    target = node_position(graph, map_frame, episode.target)
    nodes = satisfying if satisfying is not None else world.category_targets.get(episode.request, frozenset())
    others = sorted(n for n in nodes if n in graph.nodes and n != episode.target)
    ring = tuple((target[0] + radius_m * math.cos(2 * math.pi * k / ring_points),
                  target[1] + radius_m * math.sin(2 * math.pi * k / ring_points)) for k in range(ring_points + 1))
    return TargetArea(target, tuple(_xy(map_frame, graph, others)), ring, float(radius_m))
