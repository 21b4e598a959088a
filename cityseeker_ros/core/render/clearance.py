"""Cameras stay outside buildings: a node inside a footprint would render every wall inside out.

Worlds built from OSM drop such nodes (worlds.osm.clear_of_buildings), but a world folder
built before that, or a hand-made or dressed one, may still hold some. The renderer never
puts its eye there: such a node's camera stands CLEARANCE_M outside the nearest wall of the
footprints around it instead, and the view's meta says how far it was moved.
"""
from __future__ import annotations

import numpy as np
import shapely
from shapely.geometry import Point, Polygon
from shapely.ops import nearest_points, unary_union

from cityseeker_ros.core.worlds.scene import Building

CLEARANCE_M = 0.5
SLIT_M = 4.0  # gaps between footprints narrower than this are no place for a camera


def cameras_outside(node_xy: dict[str, tuple[float, float]],
                    buildings: list[Building]) -> dict[str, tuple[float, float]]:
    """Camera positions for the nodes inside (or within CLEARANCE_M of) a footprint: the nearest
    point CLEARANCE_M outside every footprint and out of the slits (under SLIT_M wide) between
    them. Nodes clear of all buildings are not listed."""
    if not node_xy or not buildings:
        return {}
    ids = sorted(node_xy)
    polygons = [Polygon(b.footprint) for b in buildings]
    tree = shapely.STRtree(polygons)
    points = shapely.points(np.array([node_xy[i] for i in ids], dtype=float))
    hit, _ = tree.query(points, predicate="dwithin", distance=CLEARANCE_M)
    moved: dict[str, tuple[float, float]] = {}
    for k in sorted(set(hit.tolist())):
        point = Point(node_xy[ids[k]])
        radius = 50.0
        while True:  # grow the neighbourhood until no footprint beyond it could cover the spot found
            around = tree.query(point.buffer(radius), predicate="intersects").tolist()
            union = unary_union([polygons[j] for j in around])
            block = union.buffer(SLIT_M / 2).buffer(CLEARANCE_M - SLIT_M / 2)  # slits closed, then grown
            outside = nearest_points(block.boundary, point)[0]
            if outside.distance(point) + CLEARANCE_M < radius or len(around) == len(polygons):
                break
            radius *= 2.0
        moved[ids[k]] = (float(outside.x), float(outside.y))
    return moved
