"""The console's offline map of a world: streets, buildings, the street graph, the geofence and a
task's target area, in the world's `map` plane, as one compact JSON document the page draws.

No tile from the internet: a field trial may have none, and the graph the agent walks is what
matters. Coordinates are east/north metres about the street graph's origin (core.frames.geo_origin,
the plane of the frames node's markers and /tf), rounded to 0.1 m and flattened ([x0, y0, x1,
y1, ...]): the Monaco world is a few hundred kilobytes. The scene's own plane (its origin differs
from the graph's by metres) is converted point by point, not shifted."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

import numpy as np
from pyproj import Transformer

from cityseeker_ros.core.frames.geo_origin import MapFrame
from cityseeker_ros.core.frames.scene_geometry import TargetArea
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.vehicles.safety.geofence import CircleFence, Geofence, PolygonFence
from cityseeker_ros.core.worlds.folder import OSM_CREDIT, load_scene_and_graph, read_metadata
from cityseeker_ros.core.worlds.scene import Scene

RING_POINTS = 72


def _flat(points: Any) -> list[float]:
    return [round(float(v), 1) for v in np.asarray(points, dtype=float).reshape(-1)]


def _aeqd(lat0: float, lon0: float) -> str:
    return f"+proj=aeqd +lat_0={lat0} +lon_0={lon0} +ellps=WGS84 +units=m"


def graph_layer(graph: StreetGraph, map_frame: MapFrame) -> dict[str, Any]:
    """Node ids, their positions (flat) and each street once as a pair of node indices (flat)."""
    ids = list(graph.nodes)
    index = {node_id: i for i, node_id in enumerate(ids)}
    latlon = graph.latlon(ids)
    xy = [map_frame.to_enu(lat, lon)[:2] for lat, lon in latlon]
    pairs = sorted({tuple(sorted((index[e.source], index[e.target]))) for n in ids for e in graph.out_edges(n)})
    return {"ids": ids, "xy": _flat(xy), "edges": [i for pair in pairs for i in pair]}


def scene_layers(scene: Scene, map_frame: MapFrame) -> dict[str, Any]:
    """Streets (every road of the scene, with its kind and width) and building footprints."""
    to_map = Transformer.from_crs(_aeqd(scene.origin_lat, scene.origin_lon),
                                  _aeqd(map_frame.origin.lat, map_frame.origin.lon), always_xy=True)

    def convert(points: Any) -> list[float]:
        a = np.asarray(points, dtype=float).reshape(-1, 2)
        x, y = to_map.transform(a[:, 0], a[:, 1])
        return _flat(np.stack([x, y], axis=-1))

    streets = [{"kind": r.kind, "width_m": round(r.width_m, 1), "xy": convert(r.line)}
               for r in scene.roads if len(r.line) >= 2]
    buildings = [convert(b.footprint) for b in scene.buildings if len(b.footprint) >= 3]
    return {"streets": streets, "buildings": buildings}


def geofence_ring(fence: Optional[Geofence], map_frame: MapFrame) -> Optional[dict[str, Any]]:
    """The fence's outline in `map` (None: no fence drawn, e.g. Unfenced)."""
    if isinstance(fence, CircleFence):
        cx, cy, _ = map_frame.to_enu(fence.lat, fence.lon)
        ring = [(cx + fence.radius_m * math.cos(2 * math.pi * k / RING_POINTS),
                 cy + fence.radius_m * math.sin(2 * math.pi * k / RING_POINTS)) for k in range(RING_POINTS + 1)]
        return {"kind": "circle", "xy": _flat(ring)}
    if isinstance(fence, PolygonFence):
        ring = [map_frame.to_enu(lat, lon)[:2] for lat, lon in fence.points + fence.points[:1]]
        return {"kind": "polygon", "xy": _flat(ring)}
    return None


def target_layer(area: Optional[TargetArea]) -> Optional[dict[str, Any]]:
    """A task's target, the ring about it and the other nodes that satisfy it (None: unknown, as
    for a Seek, whose target the stack does not know)."""
    if area is None:
        return None
    return {"xy": _flat(area.target), "ring": _flat(area.ring), "satisfying": _flat(area.satisfying),
            "radius_m": area.radius_m}


def world_map(folder: Path, fence: Optional[Geofence] = None, target: Optional[TargetArea] = None) -> dict[str, Any]:
    """The map document of the world in `folder` (a world folder), with the run's geofence and a
    task's target area if given (build the area with core.frames.scene_geometry.target_area)."""
    scene, graph = load_scene_and_graph(Path(folder))
    map_frame = MapFrame.of_graph(graph)
    layers = {**scene_layers(scene, map_frame), "graph": graph_layer(graph, map_frame)}
    coords = np.asarray(layers["graph"]["xy"] + [v for b in layers["buildings"] for v in b]
                        + [v for s in layers["streets"] for v in s["xy"]], dtype=float).reshape(-1, 2)
    lo, hi = coords.min(axis=0), coords.max(axis=0)
    meta = read_metadata(Path(folder))
    return {"name": meta.get("name", ""), "credit": meta.get("credit", OSM_CREDIT),
            "origin": {"lat": map_frame.origin.lat, "lon": map_frame.origin.lon},
            "bounds": _flat([lo, hi]), **layers, "geofence": geofence_ring(fence, map_frame),
            "target": target_layer(target)}


def node_positions(doc: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Each graph node's (x, y) in a map document: where the console places the node a vehicle goes to."""
    ids, xy = doc["graph"]["ids"], doc["graph"]["xy"]
    return {node_id: (xy[2 * i], xy[2 * i + 1]) for i, node_id in enumerate(ids)}
