"""Landmarks: the named, tall or distinctive features a walker steers by from afar.

Candidates are OSM towers (man_made=tower, communications towers, lighthouses, water towers),
churches and other places of worship, railway stations, monuments and memorials, attractions,
and the tallest named buildings. Up to MAX_LANDMARKS are kept, the most prominent first and
no two closer than MIN_SEPARATION_M, each with an identity colour of its own (IDENTITY_COLOURS:
far apart in hue and lightness, painted flat on the crown so a camera can tell them apart), and
with the street nodes from which the crown shows above the nearer buildings (line of sight
against footprints and heights, from the eye height the renderer uses). A name two features
carry at least MIN_SEPARATION_M apart (two churches of one saint, a station and the bus station
across its square; candidates, named buildings and the scene's places with PLACE_KEYS) names no
one place, so neither is a landmark: a goal "300 m north of" it would not be
one place by the map.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
import shapely
from pyproj import Transformer
from shapely.geometry import Point, Polygon

from cityseeker_ros.core.worlds.scene import Building, Landmark, Scene

MAX_LANDMARKS = 10
MIN_SEPARATION_M = 150.0
EYE_M = 2.5  # the renderer's default eye height
MIN_CROWN_PX = 3.0  # visible_nodes reach as far as the crown is this tall in a 640-wide, 90-degree view
FOCAL_PX = 320.0
MAX_RANGE_M = 2000.0
TALL_BUILDING_M = 30.0
# Saturated colours that no facade, sky, tree or road texel takes, far apart in hue and lightness.
IDENTITY_COLOURS: tuple[tuple[int, int, int], ...] = (
    (230, 0, 230), (0, 230, 230), (255, 220, 0), (255, 110, 0), (0, 170, 0),
    (120, 0, 255), (220, 0, 40), (0, 40, 160), (255, 140, 200), (120, 60, 0),
)
# kind -> (weight in the ranking, default height in metres, default width)
KINDS = {"tower": (3.0, 40.0, 6.0), "church": (2.5, 30.0, 8.0), "station": (2.0, 16.0, 20.0),
         "monument": (1.5, 12.0, 4.0), "attraction": (1.2, 14.0, 6.0), "tall_building": (1.0, 40.0, 16.0)}
_TOWERS = frozenset({"tower", "communications_tower", "lighthouse", "water_tower", "obelisk"})
_WORSHIP_BUILDINGS = frozenset({"church", "cathedral", "chapel", "mosque", "temple", "synagogue", "shrine"})
_MONUMENTS = frozenset({"monument", "memorial", "castle", "fort", "tower", "city_gate"})
# Tags that make a named feature a place one could be sent "north of" (a bus station named like
# the square it serves counts; a bus stop or a street does not).
PLACE_KEYS = ("building", "amenity", "man_made", "historic", "tourism", "railway", "leisure")
_SMALL_MEMORIALS = frozenset({"plaque", "stone", "bench", "blue_plaque", "stolperstein", "tree", "cross"})


def landmark_kind(tags: dict[str, str]) -> Optional[str]:
    """The landmark kind of a named OSM feature, or None for one that is not a landmark."""
    if not tags.get("name"):
        return None
    if tags.get("man_made") in _TOWERS or tags.get("tower:type") == "communication":
        return "tower"
    if tags.get("amenity") == "place_of_worship" or tags.get("building") in _WORSHIP_BUILDINGS:
        return "church"
    if tags.get("railway") == "station" or (tags.get("public_transport") == "station"
                                             and tags.get("train") == "yes"):
        return "station"
    if tags.get("historic") in _MONUMENTS and tags.get("memorial") not in _SMALL_MEMORIALS:
        return "monument"
    if tags.get("tourism") == "attraction":
        return "attraction"
    return None


def _height(tags: dict[str, str], default: float) -> float:
    try:
        value = float(tags.get("height", "").removesuffix("m").strip())
    except ValueError:
        return default
    return value if math.isfinite(value) and 2.0 <= value <= 600.0 else default


def crown_height(height_m: float) -> float:
    """The flat-coloured top of a landmark: a fifth of its height, 5 to 15 m."""
    return round(min(15.0, max(5.0, 0.2 * height_m)), 2)


def select_landmarks(raw: Sequence[tuple[str, dict[str, str], list[list[tuple[float, float]]]]], scene: Scene,
                     node_ids: Sequence[str], node_xy: np.ndarray,
                     named_buildings: Sequence[tuple[str, str]] = ()) -> list[Landmark]:
    """Landmarks of a scene from the OSM candidates `raw` (id, tags, rings in lat/lon) and the
    tallest named buildings (`named_buildings`: building id, name), with their visible nodes."""
    if not len(node_xy):
        return []
    frame = scene.frame
    to_lonlat = Transformer.from_crs(f"+proj=aeqd +lat_0={frame.lat0} +lon_0={frame.lon0} +ellps=WGS84 +units=m",
                                     "EPSG:4326", always_xy=True)
    polygons = [Polygon(b.footprint) for b in scene.buildings]
    tree = shapely.STRtree(polygons)
    by_id = {b.id: i for i, b in enumerate(scene.buildings)}
    candidates: list[tuple[Any, ...]] = []  # score, id, name, kind, x, y, height, building id, width
    for osm_id, tags, rings in raw:
        kind = landmark_kind(tags)
        if kind is None or not rings or not rings[0]:
            continue
        ll = np.asarray(rings[0], dtype=float)
        xy = np.atleast_2d(frame.to_xy(ll[:, 0], ll[:, 1]))
        centre = Polygon(xy).centroid if len(xy) >= 3 else Point(xy.mean(axis=0))
        weight, height, width = KINDS[kind]
        if len(xy) >= 3:
            x0, y0, x1, y1 = Polygon(xy).bounds
            width = max(3.0, min(40.0, min(x1 - x0, y1 - y0)))
        inside = tree.query(centre, predicate="within").tolist()
        building = scene.buildings[min(inside)] if inside else None
        if building is not None:
            width = max(width, 6.0)
        if building is not None and kind == "church" and tags.get("building") not in _WORSHIP_BUILDINGS \
                and osm_id.startswith("node/"):
            height = building.height_m  # a congregation in an ordinary building: no spire to add
        height = max(_height(tags, height), building.height_m if building is not None else 0.0)
        candidates.append((weight * height, osm_id, tags["name"], kind, centre.x, centre.y, height,
                           building.id if building is not None else None, width))
    for building_id, name in named_buildings:
        b = scene.buildings[by_id[building_id]] if building_id in by_id else None
        if b is None or b.height_m < TALL_BUILDING_M:
            continue
        poly = polygons[by_id[building_id]]
        x0, y0, x1, y1 = poly.bounds
        candidates.append((KINDS["tall_building"][0] * b.height_m, building_id, name, "tall_building",
                           poly.centroid.x, poly.centroid.y, b.height_m, b.id,
                           max(6.0, min(40.0, min(x1 - x0, y1 - y0)))))
    candidates.sort(key=lambda c: (-c[0], c[1]))
    named_at = [(c[2], c[4], c[5]) for c in candidates] + [
        (name, polygons[by_id[b_id]].centroid.x, polygons[by_id[b_id]].centroid.y)
        for b_id, name in named_buildings if b_id in by_id]
    places = [p for p in scene.pois if p.name and any(k in p.tags for k in PLACE_KEYS)]
    if places:
        pxy = np.atleast_2d(frame.to_xy(np.array([p.lat for p in places]), np.array([p.lon for p in places])))
        named_at += [(p.name, float(x), float(y)) for p, (x, y) in zip(places, pxy)]
    shared = ambiguous_names(named_at)
    candidates = [c for c in candidates if c[2] not in shared]
    node_tree_d = np.sqrt(((node_xy[:, None, :] - np.array([[c[4], c[5]] for c in candidates])[None, :, :]) ** 2)
                          .sum(axis=2)).min(axis=0) if candidates else np.zeros(0)
    chosen: list[Landmark] = []
    for c, reach in zip(candidates, node_tree_d):
        _, osm_id, name, kind, x, y, height, building_id, width = c
        if reach > MAX_RANGE_M / 2 or any(math.hypot(x - m.xy[0], y - m.xy[1]) < MIN_SEPARATION_M for m in chosen):
            continue
        if any(m.name == name for m in chosen):
            continue
        crown = crown_height(height)
        top = height + crown if building_id is not None else height  # a building's crown stands on its roof
        lon, lat = to_lonlat.transform(x, y)
        chosen.append(Landmark(
            id=osm_id, name=name, kind=kind, lat=round(float(lat), 7), lon=round(float(lon), 7),
            xy=(round(x, 3), round(y, 3)), height_m=round(top, 2), width_m=round(width, 2),
            colour=IDENTITY_COLOURS[len(chosen)], building_id=building_id, crown_m=crown))
        if len(chosen) == MAX_LANDMARKS:
            break
    out = []
    for m in chosen:
        seen = visible_nodes(m, scene.buildings, polygons, tree, node_ids, node_xy)
        if seen:
            out.append(Landmark(**{**_fields(m), "visible_nodes": seen}))
    return [Landmark(**{**_fields(m), "colour": IDENTITY_COLOURS[i]}) for i, m in enumerate(out)]


def ambiguous_names(named_at: Sequence[tuple[str, float, float]]) -> set[str]:
    """Names carried by two features (name, x, y) at least MIN_SEPARATION_M apart: the same
    feature mapped twice (a church's node and its building) stands closer than that."""
    where: dict[str, list[tuple[float, float]]] = {}
    for name, x, y in named_at:
        where.setdefault(name, []).append((x, y))
    return {name for name, points in where.items()
            if any(math.hypot(a[0] - b[0], a[1] - b[1]) >= MIN_SEPARATION_M
                   for i, a in enumerate(points) for b in points[i + 1:])}


def _fields(m: Landmark) -> dict[str, Any]:
    return {k: getattr(m, k) for k in m.__dataclass_fields__}


def visible_nodes(landmark: Landmark, buildings: Sequence[Building], polygons: Sequence[Polygon],
                  tree: shapely.STRtree, node_ids: Sequence[str], node_xy: np.ndarray) -> tuple[str, ...]:
    """Nodes within sight range from which the sight line to the crown's middle clears every
    building in between (its own excepted), nearest first."""
    lx, ly = landmark.xy
    reach = min(MAX_RANGE_M, landmark.crown_m * FOCAL_PX / MIN_CROWN_PX)
    d = np.sqrt((node_xy[:, 0] - lx) ** 2 + (node_xy[:, 1] - ly) ** 2)
    near = np.flatnonzero((d <= reach) & (d > 1.0))
    if not len(near):
        return ()
    target = landmark.height_m - landmark.crown_m / 2
    lines = shapely.linestrings(np.stack([node_xy[near], np.repeat([[lx, ly]], len(near), axis=0)], axis=1))
    line_idx, poly_idx = tree.query(lines, predicate="intersects")
    blocked = np.zeros(len(near), bool)
    if len(line_idx):
        own = np.array([buildings[p].id == landmark.building_id for p in poly_idx.tolist()], bool)
        line_idx, poly_idx = line_idx[~own], poly_idx[~own]
        starts = shapely.points(node_xy[near[line_idx]])
        entry = shapely.distance(starts, np.asarray(polygons, dtype=object)[poly_idx])
        total = d[near[line_idx]]
        ray = EYE_M + (target - EYE_M) * entry / total
        heights = np.array([buildings[p].height_m for p in poly_idx.tolist()])
        np.logical_or.at(blocked, line_idx, heights > ray)
    order = np.lexsort((np.array([node_ids[i] for i in near]), d[near]))
    return tuple(node_ids[near[k]] for k in order if not blocked[k])
