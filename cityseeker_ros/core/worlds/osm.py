"""Build a navigable world (street graph plus scene) from an OpenStreetMap extract.

CitySeeker's graphs are street-view captures: a panorama every ~20 m along the streets a car
or a pedestrian walks, with edges to the neighbouring panoramas. We rebuild that from OSM:

* Walkable streets are public roads a street-view car drives (primary/secondary/tertiary and
  their links, residential, unclassified, living streets, service roads other than parking
  aisles, driveways and drive-throughs) plus pedestrian streets, footways and paths. Footways
  tagged as sidewalks or crossings are dropped because the road they flank already carries the
  panoramas; so are tunnels, covered or indoor ways, areas, private ways, steps, motorways,
  trunks, construction, platforms and raceways, none of which a street-view walker sees from.
* Ways are split at shared OSM nodes, every piece is cut into equal hops of at most
  `spacing_m`, nodes closer than MERGE_M are merged, and the largest connected component is
  kept. Edges go both ways (pedestrians ignore oneway).
* Buildings are extruded footprints from the ground up, so footprints that do not stand on the
  ground (underground: a negative layer or location=underground; raised: min_height or
  building:min_level above 0) are left out. A street mapped through a solid footprint (a
  service road through a supermarket, an untagged arcade) would put panoramas inside walls,
  where views render inside out: nodes inside a footprint or within WALL_CLEARANCE_M of its
  wall are dropped, and so are hops that run more than PASS_THROUGH_M through one, before
  the largest connected component is kept again.
* POIs sit on the nearest street-facing facade, or on a small synthetic kiosk when OSM maps
  no building for them; a kiosk never covers a street node (the POI gets a pole board instead
  when no spot nearby is free).

Everything is sorted by OSM id before ids are handed out, so one input gives one output.
"""
from __future__ import annotations

import math
import re
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, TextIO

import numpy as np
import osmium
import shapely
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree
from shapely.geometry import LineString, Polygon
from shapely.geometry.polygon import orient

from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.infra.progress import say
from cityseeker_ros.core.streets.geodesy import WGS84, LocalFrame, normalize_heading
from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.worlds.fidelity import (
    AREA_KEYS,
    ground_cover,
    implied_zones,
    infer_buildings,
    is_ground_road,
    road,
    scatter_trees,
    stand_in_size,
)
from cityseeker_ros.core.worlds.landmarks import landmark_kind, select_landmarks
from cityseeker_ros.core.worlds.needs import brand_name, brand_spellings
from cityseeker_ros.core.worlds.scene import XY, Area, Building, Poi, Scene

BBox = tuple[float, float, float, float]  # min_lon, min_lat, max_lon, max_lat
Vertex = tuple[Any, float, float]  # key (OSM node id, or ("cut", k) where a way leaves the bbox), lat, lon
WayNodes = list[Optional[tuple[int, float, float]]]  # OSM node id, lat, lon; None where the file lacks the node

MERGE_M = 3.0
BUILDING_REACH_M = 80.0  # buildings farther than this from every node are never seen
FACADE_SEARCH_M = 30.0
STREET_SEARCH_M = 40.0
OWN_WALL_M = 60.0
SIMPLIFY_M = 0.3
SIGN_OFFSET_M = 0.05  # signs float just off the wall so renderers do not z-fight
LEVEL_M = 3.2
ROOF_M = 1.0
KIOSK_WIDTH_M, KIOSK_DEPTH_M, KIOSK_HEIGHT_M = 6.0, 4.0, 4.0
KIOSK_STREET_CLEARANCE_M = 4.0
WALL_CLEARANCE_M = 0.5  # a street node nearer a footprint's wall than this (or inside it) is dropped
PASS_THROUGH_M = 2.0  # a hop running longer than this inside a footprint is dropped

STREET_HIGHWAYS = frozenset({
    "primary", "primary_link", "secondary", "secondary_link", "tertiary", "tertiary_link",
    "residential", "unclassified", "living_street", "pedestrian", "service", "footway", "path",
})
EXCLUDED_SERVICE = frozenset({"parking_aisle", "driveway", "drive-through"})
EXCLUDED_FOOTWAY = frozenset({"sidewalk", "crossing"})

POI_KEYS = ("amenity", "shop", "tourism", "leisure", "healthcare", "public_transport", "railway", "highway", "office")
# Keys whose every value but these is infrastructure rather than a place to go.
POI_ONLY = {
    "public_transport": frozenset({"station"}),
    "railway": frozenset({"station", "halt", "tram_stop", "subway_entrance"}),
    "highway": frozenset({"bus_stop"}),
}
# Street furniture and other objects nobody navigates to (vending machines, drinking water,
# toilets and fountains stay: people do look for them).
POI_DULL = {
    "amenity": frozenset({
        "bench", "waste_basket", "waste_disposal", "parking_space", "parking_entrance",
        "bicycle_parking", "motorcycle_parking", "recycling", "post_box", "letter_box", "telephone", "clock",
        "grit_bin", "loading_dock", "hunting_stand", "shelter", "bbq", "lounger", "table", "dog_toilet",
        "feeding_place", "watering_place", "water_point", "trolley_bay", "smoking_area", "ticket_validator",
        "sanitary_dump_station", "compressed_air", "vacuum_cleaner", "give_box", "device_charging_station",
        "charging_station", "fixme",
    }),
    "tourism": frozenset({"information", "picnic_site", "camp_pitch"}),
    "leisure": frozenset({
        "pitch", "track", "picnic_table", "outdoor_seating", "slipway", "firepit", "bleachers", "common",
    }),
    "shop": frozenset({"vacant", "disused"}),
}
# Classes that are places to go in some mappings only: a car park, not a strip of kerbside
# spaces; a public pool or outdoor gym, not one in a private garden. The needs catalogue asks
# for all three (worlds.needs), so they are kept whenever they are open to the public.
PRIVATE = frozenset({"private", "no"})
STREET_PARKING = frozenset({"street_side", "lane", "on_kerb", "half_on_kerb", "layby", "shoulder"})
POI_ONLY_IF: dict[str, Callable[[dict[str, str]], bool]] = {
    "amenity=parking": lambda t: t.get("parking") not in STREET_PARKING and t.get("access") not in PRIVATE,
    "leisure=swimming_pool": lambda t: t.get("access") not in PRIVATE and bool(
        t.get("name") or t.get("access") in ("yes", "public", "permissive", "customers")),
    "leisure=fitness_station": lambda t: t.get("access") not in PRIVATE,
}
MEANINGLESS = frozenset({"yes", "no", ""})
# Classes whose public signage is generic (a pictogram, a standard logo), so they read as
# signed even when OSM has no name.
GENERIC_SIGNAGE = frozenset({
    "toilets", "pharmacy", "bus_stop", "station", "subway_entrance", "tram_stop", "halt", "hospital", "atm",
    "drinking_water", "post_office", "police",
})
NOISE_TAG = re.compile(r"^(source|note|fixme|created_by)(:|$)", re.IGNORECASE)
HEIGHT = re.compile(r"^\s*(\d+(?:[.,]\d+)?)\s*(m|meters?|metres?)?\s*$", re.IGNORECASE)
SMALL_BUILDINGS = frozenset({
    "garage", "garages", "shed", "hut", "kiosk", "roof", "carport", "cabin", "toilets", "service",
    "transformer_tower", "bunker", "greenhouse",
})
HOUSES = frozenset({"house", "detached", "semidetached_house", "bungalow", "terrace", "farm", "villa"})


@dataclass
class OsmWorld:
    graph: StreetGraph
    scene: Scene
    stats: dict[str, Any]


@dataclass
class _Extract:
    """What the single pass over the file keeps, in OSM ids, before any geometry work."""

    streets: list[tuple[int, WayNodes]] = field(default_factory=list)
    buildings: list[tuple[str, dict[str, str], list[list[tuple[float, float]]]]] = field(default_factory=list)
    pois: list[tuple[int, int, str, dict[str, str], float, float]] = field(default_factory=list)
    # way id (or "id/k" for the k-th piece of a way cut by the bbox), tags, line
    roads: list[tuple[Any, dict[str, str], list[tuple[float, float]]]] = field(default_factory=list)
    areas: list[tuple[str, str, list[list[tuple[float, float]]]]] = field(default_factory=list)  # id, cover, rings
    trees: list[tuple[int, list[tuple[float, float]]]] = field(default_factory=list)  # a tree, or a tree row
    landmarks: list[tuple[str, dict[str, str], list[list[tuple[float, float]]]]] = field(default_factory=list)
    not_solid: Counter = field(default_factory=Counter)  # "underground" / "raised" -> buildings left out


def build_osm_world(pbf: Path, *, name: str, bbox: Optional[BBox] = None, spacing_m: float = 20.0,
                    visibility_m: float = 50.0, stream: Optional[TextIO] = None) -> OsmWorld:
    """Street graph and scene for an OSM file (.osm.pbf or .osm XML), optionally clipped to `bbox`;
    each phase says its counts on `stream` (default stderr)."""
    started = time.perf_counter()
    pbf = Path(pbf)
    bbox = _check_bbox(bbox)
    for param, value in (("spacing_m", spacing_m), ("visibility_m", visibility_m)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ConfigError(f"{param} must be a positive number of metres, got {value!r}")
    if not pbf.is_file():
        raise DataError(pbf, "no such file")
    extract = _read(pbf, bbox)
    say(f"world build: read {pbf.name}: {len(extract.streets):,} streets, {len(extract.buildings):,} buildings, "
        f"{len(extract.pois):,} POIs, {len(extract.roads):,} roads, {len(extract.areas):,} areas "
        f"({time.perf_counter() - started:.0f} s)", stream)
    graph = _street_graph(extract.streets, bbox, spacing_m, name)
    if graph is None:
        where = f"inside bbox {bbox}" if bbox is not None else "in the file"
        raise DataError(pbf, f"no walkable streets {where}")
    say(f"world build: street graph: {len(graph.nodes):,} nodes, {len(graph.edges):,} edges "
        f"({time.perf_counter() - started:.0f} s)", stream)
    frame = graph.frame  # the scene's frame, kept when nodes are dropped below
    latlon = graph.latlon(list(graph.nodes))
    buildings, guessed = _buildings(extract.buildings, frame, cKDTree(frame.to_xy(latlon[:, 0], latlon[:, 1])))
    graph, cleared = clear_of_buildings(graph, buildings, frame)
    if graph is None:
        raise DataError(pbf, "no walkable streets outside building footprints")
    node_ids = list(graph.nodes)
    latlon = graph.latlon(node_ids)
    node_xy = frame.to_xy(latlon[:, 0], latlon[:, 1])
    node_tree = cKDTree(node_xy)
    roads = [road(way_id, tags, _to_xy(frame, line)) for way_id, tags, line in extract.roads]
    areas = [Area(area_id, cover, ring) for area_id, cover, rings in extract.areas
             for ring in (_footprint(np.asarray(_to_xy(frame, r))) for r in rings[:1]) if ring is not None]
    areas.sort(key=lambda a: -Polygon(a.ring).area)  # drawn in this order: small areas lie on big ones
    poi_xy = frame.to_xy(np.asarray([r[4] for r in extract.pois]), np.asarray([r[5] for r in extract.pois])) \
        if extract.pois else np.zeros((0, 2))
    zones = areas + implied_zones(areas, np.atleast_2d(poi_xy), roads, node_xy, len(buildings))
    inferred = infer_buildings(zones, roads, buildings, node_xy, _style, np.atleast_2d(poi_xy))
    pois, kiosks, dropped = _pois(extract.pois, frame, graph, node_ids, node_xy, node_tree, buildings + inferred,
                                  visibility_m)
    standing = buildings + inferred + kiosks
    trees = scatter_trees(((tree_id, _to_xy(frame, line)) for tree_id, line in extract.trees), areas, roads,
                          standing, node_xy)
    scene = Scene(frame.lat0, frame.lon0, standing, pois, roads=roads, areas=areas, trees=trees)
    named = [(b_id, tags["name"]) for b_id, tags, _ in extract.buildings if tags.get("name")]
    scene.landmarks = select_landmarks(extract.landmarks, scene, node_ids, node_xy, named)
    say(f"world build: scene: {len(graph.nodes):,} nodes clear of buildings, {len(buildings):,} buildings "
        f"(+{len(inferred):,} inferred, +{len(kiosks):,} stand-ins), {len(pois):,} POIs, {len(trees):,} trees, "
        f"{len(scene.landmarks):,} landmarks ({time.perf_counter() - started:.0f} s)", stream)
    lat, lon = latlon[:, 0], latlon[:, 1]
    stats = {
        "nodes": len(graph.nodes),
        "edges": len(graph.edges),
        "buildings": {"real": len(buildings), "synthetic": len(kiosks) + len(inferred), "inferred": len(inferred),
                      "stand_in": len(kiosks)},
        "roads": len(roads),
        "areas": dict(sorted(Counter(a.cover for a in areas).items())),
        "trees": len(trees),
        "landmarks": len(scene.landmarks),
        "buildings_not_solid": dict(sorted(extract.not_solid.items())),
        "heights_guessed": guessed,
        "streets_in_buildings": cleared,
        "pois": len(pois),
        "pois_dropped": dropped,
        "pois_by_class": _ranked(Counter(p.poi_class for p in pois)),
        "brands": _ranked(Counter({brand_name(spellings): sum(spellings.values())
                                   for spellings in brand_spellings(pois).values()})),
        "streets_ways": len(extract.streets),
        "bbox": list(bbox) if bbox is not None else [float(lon.min()), float(lat.min()), float(lon.max()),
                                                      float(lat.max())],
        "seconds": round(time.perf_counter() - started, 3),
    }
    return OsmWorld(graph, scene, stats)


def _to_xy(frame: LocalFrame, latlon: list[tuple[float, float]]) -> list[XY]:
    arr = np.asarray(latlon, dtype=float).reshape(-1, 2)
    xy = np.atleast_2d(frame.to_xy(arr[:, 0], arr[:, 1]))
    return [(float(x), float(y)) for x, y in xy]


def _check_bbox(bbox: Optional[Iterable[float]]) -> Optional[BBox]:
    if bbox is None:
        return None
    try:
        values = tuple(float(v) for v in bbox)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bbox must be four numbers (min_lon, min_lat, max_lon, max_lat), got {bbox!r}") from exc
    if len(values) != 4 or not all(math.isfinite(v) for v in values):
        raise ConfigError(f"bbox must be four finite numbers (min_lon, min_lat, max_lon, max_lat), got {bbox!r}")
    min_lon, min_lat, max_lon, max_lat = values
    if not (-90.0 <= min_lat < max_lat <= 90.0):
        raise ConfigError(f"bbox latitudes must satisfy -90 <= min_lat < max_lat <= 90, got {bbox!r}")
    if not (-180.0 <= min_lon < max_lon <= 180.0):
        raise ConfigError(f"bbox longitudes must satisfy -180 <= min_lon < max_lon <= 180, got {bbox!r}")
    return values


def _ranked(counts: Counter) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


# --- reading -------------------------------------------------------------------------------


def is_walkable(tags: dict[str, str]) -> bool:
    """The street filter described in the module docstring."""
    highway = tags.get("highway")
    if highway not in STREET_HIGHWAYS:
        return False
    if highway == "service" and tags.get("service") in EXCLUDED_SERVICE:
        return False
    if highway in ("footway", "path") and tags.get("footway") in EXCLUDED_FOOTWAY:
        return False
    if tags.get("tunnel", "no") != "no" or tags.get("covered") == "yes" or tags.get("indoor") == "yes":
        return False
    if tags.get("access") in ("private", "no") and tags.get("foot") not in ("yes", "designated", "permissive"):
        return False
    return tags.get("area") != "yes"


def poi_class(tags: dict[str, str]) -> Optional[str]:
    """The first meaningful POI tag as "key=value"; None when the object is not a destination."""
    for key in POI_KEYS:
        value = tags.get(key)
        if value is None or value.strip().lower() in MEANINGLESS:
            continue
        if key in POI_ONLY and value not in POI_ONLY[key]:
            continue
        if value in POI_DULL.get(key, ()):
            if key == "tourism" and value == "information" and tags.get("information") == "office":
                return "tourism=information"
            continue
        cls = f"{key}={value}"
        if cls in POI_ONLY_IF and not POI_ONLY_IF[cls](tags):
            continue
        return cls
    return None


def _read(pbf: Path, bbox: Optional[BBox]) -> _Extract:
    def inside(lat: float, lon: float) -> bool:
        return bbox is None or (bbox[0] <= lon <= bbox[2] and bbox[1] <= lat <= bbox[3])

    out = _Extract()
    processor = (osmium.FileProcessor(str(pbf)).with_locations()
                 .with_areas(osmium.filter.KeyFilter(*AREA_KEYS))
                 .with_filter(osmium.filter.EmptyTagFilter()))
    try:
        for obj in processor:
            tags = dict(obj.tags)
            if obj.is_node():
                if not obj.location.valid() or not inside(obj.location.lat, obj.location.lon):
                    continue
                if poi_class(tags):
                    out.pois.append((0, obj.id, "node", tags, obj.location.lat, obj.location.lon))
                if tags.get("natural") == "tree":
                    out.trees.append((obj.id, [(obj.location.lat, obj.location.lon)]))
                if landmark_kind(tags):
                    out.landmarks.append((f"node/{obj.id}", tags, [[(obj.location.lat, obj.location.lon)]]))
            elif obj.is_way():
                located = [(n.lat, n.lon) for n in obj.nodes if n.location.valid()]
                if is_walkable(tags):
                    out.streets.append((obj.id, [(n.ref, n.lat, n.lon) if n.location.valid() else None
                                                 for n in obj.nodes]))
                if poi_class(tags):
                    centre = _way_centre([(lo, la) for la, lo in located])
                    if centre is not None and inside(centre[1], centre[0]):
                        out.pois.append((1, obj.id, "way", tags, centre[1], centre[0]))
                if is_ground_road(tags) and len(located) >= 2:
                    out.roads.append((obj.id, tags, located))
                if tags.get("natural") == "tree_row" and len(located) >= 2:
                    out.trees.append((obj.id, located))
            elif obj.is_area():
                rings = [[(n.lat, n.lon) for n in ring] for ring in obj.outer_rings()]
                kind = "way" if obj.from_way() else "relation"
                area_id = f"{kind}/{obj.orig_id()}"
                cover = ground_cover(tags)
                if cover is not None:
                    out.areas.append((area_id, cover, rings))
                if landmark_kind(tags):
                    out.landmarks.append((area_id, tags, rings))
                if tags.get("building", "no") == "no":
                    continue
                why = not_solid(tags)
                if why is not None:
                    out.not_solid[why] += 1
                    continue
                out.buildings.append((area_id, tags, rings))
    except RuntimeError as exc:
        raise DataError(pbf, f"not a readable OSM file: {exc}") from exc
    out.streets.sort(key=lambda s: s[0])
    out.pois.sort(key=lambda p: (p[0], p[1]))
    out.buildings.sort(key=lambda b: (not b[0].startswith("way/"), int(b[0].split("/")[1])))
    out.areas.sort(key=lambda a: (not a[0].startswith("way/"), int(a[0].split("/")[1])))
    out.roads.sort(key=lambda r: r[0])
    out.trees.sort(key=lambda t: (len(t[1]) > 1, t[0]))
    out.landmarks.sort(key=lambda m: (m[0].split("/")[0], int(m[0].split("/")[1])))
    return out if bbox is None else crop(out, bbox)


# --- the bbox crop ------------------------------------------------------------------------------
# Everything is kept by true geometric overlap with the box, in lat/lon: a ring with no vertex
# inside may still cover the box (a wood around the whole clip), and one whose bounding box holds
# the box may still miss it (residential land curving round the town). Land use, roads and tree
# rows are cut at the box edge like the streets (`_clip`), each piece its own object, so land
# kilometres away can neither switch off the thin-data fallback (fidelity.implied_zones) nor cost
# time. Buildings and landmarks that reach into the box stay whole (a footprint cut at the edge
# would show a wall that is not there); POIs, single trees and nodes are points, kept inside.


def crop(extract: _Extract, bbox: BBox) -> _Extract:
    """What of `extract` lies in `bbox` (min_lon, min_lat, max_lon, max_lat), by the rules above."""
    def inside(lat: float, lon: float) -> bool:
        return bbox[0] <= lon <= bbox[2] and bbox[1] <= lat <= bbox[3]

    def pieces(object_id: Any, parts: list[list[tuple[float, float]]]) -> list[tuple[Any, list[tuple[float, float]]]]:
        """One (id, part) per piece, the first keeping the object's id and the others numbered after it."""
        return [(object_id if k == 0 else f"{object_id}/{k}", part) for k, part in enumerate(parts)]

    return replace(
        extract,
        streets=extract.streets,  # cut exactly at the box edge when the graph is built (_clip)
        buildings=[b for b in extract.buildings if any(overlaps(ring, bbox) for ring in b[2])],
        pois=[p for p in extract.pois if inside(p[4], p[5])],
        roads=[(piece_id, tags, part) for way_id, tags, line in extract.roads
               for piece_id, part in pieces(way_id, clip_line(line, bbox))],
        areas=[(piece_id, cover, [part]) for area_id, cover, rings in extract.areas
               for piece_id, part in pieces(area_id, [p for ring in rings for p in clip_ring(ring, bbox)])],
        trees=[(tree_id, part) for tree_id, line in extract.trees  # a tree, or the runs of a tree row
               for part in (clip_line(line, bbox) if len(line) > 1 else [line] if inside(*line[0]) else [])],
        landmarks=[m for m in extract.landmarks if m[2] and m[2][0] and overlaps(m[2][0], bbox)],
    )


def _box_in(bbox: BBox) -> tuple[float, float, float, float]:
    """The box as shapely's rectangle in this module's (lat, lon) vertex order."""
    return bbox[1], bbox[0], bbox[3], bbox[2]


def _bounds_relation(coords: np.ndarray, bbox: BBox) -> str:
    """"out" when the vertices' bounding box misses the box, "in" when every vertex is inside it,
    else "cross" (only then is the exact geometry needed)."""
    lat, lon = coords[:, 0], coords[:, 1]
    if lon.max() < bbox[0] or lon.min() > bbox[2] or lat.max() < bbox[1] or lat.min() > bbox[3]:
        return "out"
    if lon.min() >= bbox[0] and lon.max() <= bbox[2] and lat.min() >= bbox[1] and lat.max() <= bbox[3]:
        return "in"
    return "cross"


def _polygon(coords: np.ndarray) -> Optional[Polygon]:
    if len(coords) < 4:
        return None
    poly = Polygon(coords)
    if not poly.is_valid:  # a self-crossing ring: its valid area, as fidelity treats one
        poly = shapely.make_valid(poly)
    return poly


def overlaps(ring: list[tuple[float, float]], bbox: BBox) -> bool:
    """A closed (lat, lon) ring that shares ground with the box (touching its edge counts);
    a point or a line counts when it touches the box."""
    if not ring:
        return False
    coords = np.asarray(ring, dtype=float).reshape(-1, 2)
    where = _bounds_relation(coords, bbox)
    if where != "cross":
        return where == "in"
    box = shapely.box(*_box_in(bbox))
    poly = _polygon(coords)
    geom = poly if poly is not None else (LineString(coords) if len(coords) >= 2 else shapely.Point(coords[0]))
    return bool(shapely.intersects(geom, box))


def clip_ring(ring: list[tuple[float, float]], bbox: BBox) -> list[list[tuple[float, float]]]:
    """The parts of a closed (lat, lon) ring's polygon inside the box, as closed rings, largest
    first; none when it does not overlap the box."""
    coords = np.asarray(ring, dtype=float).reshape(-1, 2)
    if len(coords) < 4:
        return []
    where = _bounds_relation(coords, bbox)
    if where == "out":
        return []
    if where == "in":
        return [ring]
    poly = _polygon(coords)
    if poly is None:
        return []
    clipped = shapely.clip_by_rect(poly, *_box_in(bbox))
    parts = [g for g in shapely.get_parts(clipped) if g.geom_type == "Polygon" and g.area > 0.0]
    parts.sort(key=lambda g: (-g.area, g.bounds))
    return [[(float(la), float(lo)) for la, lo in g.exterior.coords] for g in parts]


def clip_line(line: list[tuple[float, float]], bbox: BBox) -> list[list[tuple[float, float]]]:
    """The runs of a (lat, lon) polyline inside the box, cut exactly at its edge, in way order."""
    coords = np.asarray(line, dtype=float).reshape(-1, 2)
    if len(coords) < 2:
        return []
    where = _bounds_relation(coords, bbox)
    if where != "cross":
        return [line] if where == "in" else []
    clipped = shapely.clip_by_rect(LineString(coords), *_box_in(bbox))
    parts = [g for g in shapely.get_parts(clipped) if g.geom_type == "LineString" and g.length > 0.0]
    return [[(float(la), float(lo)) for la, lo in g.coords] for g in parts]


def not_solid(tags: dict[str, str]) -> Optional[str]:
    """"underground" or "raised" for a building that does not stand on the ground (the renderer
    extrudes footprints from the ground up, so such a box would wall in the street under or over
    it); None for a solid one."""
    if tags.get("location") == "underground" or (_number(tags.get("layer")) or 0.0) < 0:
        return "underground"
    if (parse_height(tags.get("min_height")) or 0.0) > 0 or (_number(tags.get("building:min_level")) or 0.0) > 0:
        return "raised"
    return None


def _number(value: Optional[str]) -> Optional[float]:
    try:
        number = float((value or "").strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _way_centre(lonlat: list[tuple[float, float]]) -> Optional[tuple[float, float]]:
    """Area centroid of a closed way, length centroid of an open one (lon, lat)."""
    if not lonlat:
        return None
    if len(lonlat) >= 4 and lonlat[0] == lonlat[-1]:
        c = Polygon(lonlat).centroid
        if not c.is_empty:
            return (c.x, c.y)
    if len(lonlat) >= 2:
        c = LineString(lonlat).centroid
        if not c.is_empty:
            return (c.x, c.y)
    return lonlat[0]


# --- street graph --------------------------------------------------------------------------


def _clip(streets: list[tuple[int, WayNodes]], bbox: Optional[BBox]) -> list[list[Vertex]]:
    """Runs of consecutive located vertices inside `bbox`; ways crossing its edge are cut exactly there."""
    runs: list[list[Vertex]] = []
    cuts = 0
    for _, nodes in streets:
        run: list[Vertex] = []
        for p, q in zip(nodes[:-1], nodes[1:]):
            if p is None or q is None or p[0] == q[0]:
                if p is None or q is None:
                    runs.append(run)
                    run = []
                continue
            span = _clip_segment(p, q, bbox)
            if span is None:
                runs.append(run)
                run = []
                continue
            t0, t1 = span
            if t0 > 0.0:
                runs.append(run)
                cuts += 1
                run = [(("cut", cuts), p[1] + t0 * (q[1] - p[1]), p[2] + t0 * (q[2] - p[2]))]
            elif not run:
                run = [p]
            if t1 < 1.0:
                cuts += 1
                run.append((("cut", cuts), p[1] + t1 * (q[1] - p[1]), p[2] + t1 * (q[2] - p[2])))
                runs.append(run)
                run = []
            else:
                run.append(q)
        runs.append(run)
    return [run for run in runs if len(run) >= 2]


def _clip_segment(p: tuple[int, float, float], q: tuple[int, float, float],
                  bbox: Optional[BBox]) -> Optional[tuple[float, float]]:
    """Liang-Barsky in lon/lat: the parameter interval of p->q inside bbox, or None."""
    if bbox is None:
        return 0.0, 1.0
    t0, t1 = 0.0, 1.0
    dx, dy = q[2] - p[2], q[1] - p[1]
    for step, gap in ((-dx, p[2] - bbox[0]), (dx, bbox[2] - p[2]), (-dy, p[1] - bbox[1]), (dy, bbox[3] - p[1])):
        if step == 0.0:
            if gap < 0.0:
                return None
            continue
        t = gap / step
        if step < 0.0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return None
    return (t0, t1) if t1 > t0 else None


def _street_graph(streets: list[tuple[int, WayNodes]], bbox: Optional[BBox],
                  spacing_m: float, name: str) -> Optional[StreetGraph]:
    runs = _clip(streets, bbox)
    uses = Counter(ref for run in runs for ref, _, _ in run)

    lat: list[float] = []
    lon: list[float] = []
    is_junction: list[bool] = []
    junction_index: dict[Any, int] = {}
    hops: list[tuple[int, int]] = []  # consecutive points, in way direction

    def junction(ref: Any, la: float, lo: float) -> int:
        if ref not in junction_index:
            junction_index[ref] = len(lat)
            lat.append(la)
            lon.append(lo)
            is_junction.append(True)
        return junction_index[ref]

    for run in runs:
        cut = [0] + [i for i in range(1, len(run) - 1) if uses[run[i][0]] > 1] + [len(run) - 1]
        for a, b in zip(cut[:-1], cut[1:]):
            piece = np.asarray([(la, lo) for _, la, lo in run[a:b + 1]], dtype=float)
            _, _, seg = WGS84.inv(piece[:-1, 1], piece[:-1, 0], piece[1:, 1], piece[1:, 0])
            seg = np.atleast_1d(np.asarray(seg, dtype=float))
            total = float(seg.sum())
            if total <= 0.0:
                continue
            start = junction(*run[a])
            parts = max(1, math.ceil(total / spacing_m - 1e-6))  # float noise must not add a hop
            cum = np.concatenate([[0.0], np.cumsum(seg)])
            targets = total * np.arange(1, parts) / parts
            k = np.clip(np.searchsorted(cum, targets, side="right") - 1, 0, len(seg) - 1)
            frac = np.where(seg[k] > 0, (targets - cum[k]) / np.where(seg[k] > 0, seg[k], 1.0), 0.0)
            points = piece[k] + frac[:, None] * (piece[k + 1] - piece[k])
            prev = start
            for la, lo in points:
                lat.append(float(la))
                lon.append(float(lo))
                is_junction.append(False)
                hops.append((prev, len(lat) - 1))
                prev = len(lat) - 1
            hops.append((prev, junction(*run[b])))
    if not hops:
        return None

    latlon = np.column_stack([lat, lon])
    rep = _merge_close(latlon, np.asarray(is_junction))
    links: dict[tuple[int, int], tuple[int, int]] = {}  # undirected pair -> first way-direction hop
    for a, b in hops:
        ra, rb = int(rep[a]), int(rep[b])
        if ra != rb:
            links.setdefault((min(ra, rb), max(ra, rb)), (ra, rb))
    if not links:
        return None
    pairs = np.asarray(list(links), dtype=np.int64)
    n = len(latlon)
    adjacency = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    _, labels = connected_components(adjacency, directed=False)
    used = np.unique(pairs)
    sizes = Counter(labels[used].tolist())
    best = min(sizes, key=lambda lab: (-sizes[lab], int(used[labels[used] == lab].min())))
    keep = used[labels[used] == best]  # ascending point index: first-appearance order
    new_id = {int(p): f"n{i:05d}" for i, p in enumerate(keep)}

    directed = [hop for pair, hop in links.items() if pair[0] in new_id]
    src = np.asarray([a for a, _ in directed])
    dst = np.asarray([b for _, b in directed])
    az_fwd, az_back, length = WGS84.inv(latlon[src, 1], latlon[src, 0], latlon[dst, 1], latlon[dst, 0])
    az_fwd = np.atleast_1d(az_fwd) % 360.0
    az_back = np.atleast_1d(az_back) % 360.0
    length = np.atleast_1d(length)

    heading: dict[int, float] = {}
    out: dict[int, list[tuple[float, int, float]]] = {int(p): [] for p in keep}
    for i, (a, b) in enumerate(directed):
        heading.setdefault(a, float(az_fwd[i]))
        heading.setdefault(b, (float(az_back[i]) + 180.0) % 360.0)
    for i, (a, b) in enumerate(directed):
        out[a].append((float(az_fwd[i]), b, float(length[i])))
        out[b].append((float(az_back[i]), a, float(length[i])))

    nodes, edges = [], []
    for p in keep:
        p = int(p)
        hops_out = sorted(out[p])
        nodes.append(Node(new_id[p], float(latlon[p, 0]), float(latlon[p, 1]), _round_heading(heading[p]),
                          tuple(sorted(_round_heading(az) for az, _, _ in hops_out))))
        edges.extend(Edge(new_id[p], new_id[t], normalize_heading(az), dist) for az, t, dist in hops_out)
    return StreetGraph(nodes, edges, name=name)


def _round_heading(deg: float) -> float:
    return normalize_heading(round(deg, 1))


def _merge_close(latlon: np.ndarray, is_junction: np.ndarray) -> np.ndarray:
    """Representative point for every point: greedy clusters of radius MERGE_M, OSM junctions first,
    so a cluster never spans more than two radii and junction positions stay exact."""
    frame = LocalFrame(float(latlon[:, 0].mean()), float(latlon[:, 1].mean()))
    xy = frame.to_xy(latlon[:, 0], latlon[:, 1])
    tree = cKDTree(xy)
    rep = np.full(len(xy), -1, dtype=np.int64)
    order = np.concatenate([np.flatnonzero(is_junction), np.flatnonzero(~is_junction)])
    for i in order:
        if rep[i] >= 0:
            continue
        rep[i] = i
        for j in tree.query_ball_point(xy[i], MERGE_M):
            if rep[j] < 0:
                rep[j] = i
    return rep


# --- buildings -----------------------------------------------------------------------------


def parse_height(value: Optional[str]) -> Optional[float]:
    """Metres from an OSM height tag ("12", "12 m", "12.5m"); None for anything else."""
    if not value:
        return None
    m = HEIGHT.match(value)
    if m is None:
        return None
    height = float(m.group(1).replace(",", "."))
    return height if 0.5 <= height <= 1000.0 else None


def _tagged_levels(tags: dict[str, str]) -> Optional[float]:
    levels = _number(tags.get("building:levels"))
    return levels if levels is not None and 0 < levels <= 300 else None


def height_is_guessed(tags: dict[str, str]) -> bool:
    """True when `building_height` guesses: neither a usable height nor levels are tagged."""
    return parse_height(tags.get("height")) is None and _tagged_levels(tags) is None


def building_height(building_id: str, tags: dict[str, str]) -> float:
    """Tagged height, else levels, else a stable per-building guess typical of the building type."""
    height = parse_height(tags.get("height"))
    if height is not None:
        return height
    levels = _tagged_levels(tags)
    if levels is not None:
        return levels * LEVEL_M + ROOF_M
    kind = tags.get("building", "yes")
    if kind in SMALL_BUILDINGS:
        guess = 1
    elif kind in HOUSES:
        guess = 2
    else:
        guess = 4 + zlib.crc32(building_id.encode()) % 5
    return guess * LEVEL_M + ROOF_M


def _style(object_id: str) -> int:
    return zlib.crc32(object_id.encode()) % 8


def _footprint(xy: np.ndarray) -> Optional[tuple[XY, ...]]:
    """Counter-clockwise ring without the closing point, near-collinear points dropped."""
    if len(xy) < 3:
        return None
    poly = Polygon(xy)
    simple = poly.simplify(SIMPLIFY_M, preserve_topology=True)
    if not isinstance(simple, Polygon) or simple.is_empty or not simple.is_valid:
        simple = poly
    if simple.area < 1.0:
        return None
    coords = np.asarray(orient(simple, 1.0).exterior.coords)[:-1]
    if len(coords) < 3:
        return None
    return tuple((round(float(x), 3), round(float(y), 3)) for x, y in coords)


def _buildings(raw: list[tuple[str, dict[str, str], list[list[tuple[float, float]]]]], frame: LocalFrame,
               node_tree: cKDTree) -> tuple[list[Building], int]:
    """Buildings within reach of a street node, and how many of them have a guessed height."""
    out: list[Building] = []
    guessed = 0
    seen: set[tuple[XY, ...]] = set()  # a building mapped both as a way and as a multipolygon
    rings = [(f"{base_id}/{k}" if k else base_id, base_id, tags, ring) for base_id, tags, outer in raw
             for k, ring in enumerate(sorted((r for r in outer if len(r) >= 4), key=len, reverse=True))]
    if not rings:
        return out, guessed
    ll = np.concatenate([np.asarray(ring, dtype=float) for *_, ring in rings])
    xy = np.split(frame.to_xy(ll[:, 0], ll[:, 1]), np.cumsum([len(ring) for *_, ring in rings])[:-1])
    for (building_id, base_id, tags, _), ring_xy in zip(rings, xy):
        footprint = _footprint(ring_xy)
        if footprint is None or footprint in seen:
            continue
        seen.add(footprint)
        dist, _ = node_tree.query(np.asarray(footprint), distance_upper_bound=BUILDING_REACH_M)
        if not np.isfinite(dist).any():
            continue
        height = round(building_height(base_id, tags), 2)
        guessed += height_is_guessed(tags)
        out.append(Building(building_id, footprint, height, max(1, round(height / LEVEL_M)), _style(building_id)))
    return out, guessed


# --- streets clear of buildings ------------------------------------------------------------


def clear_of_buildings(graph: StreetGraph, buildings: list[Building],
                       frame: LocalFrame) -> tuple[Optional[StreetGraph], dict[str, int]]:
    """The graph without nodes inside a footprint or within WALL_CLEARANCE_M of its wall, and
    without hops running more than PASS_THROUGH_M through one, cut down to its largest connected
    component again; and what was dropped. Nodes keep their ids; a node that lost a hop loses
    that walkable heading."""
    ids = list(graph.nodes)
    stats = {"nodes_dropped": 0, "hops_dropped": 0, "nodes_cut_off": 0}
    if not buildings or not ids:
        return graph, stats
    polygons = [Polygon(b.footprint) for b in buildings]
    tree = shapely.STRtree(polygons)
    latlon = graph.latlon(ids)
    xy = frame.to_xy(latlon[:, 0], latlon[:, 1])
    hit, _ = tree.query(shapely.points(xy), predicate="dwithin", distance=WALL_CLEARANCE_M)
    walled = {ids[i] for i in hit.tolist()}
    index = {nid: i for i, nid in enumerate(ids)}
    edges = [e for e in graph.edges if e.source not in walled and e.target not in walled]
    if edges:
        segments = shapely.linestrings(np.stack([xy[[index[e.source] for e in edges]],
                                                 xy[[index[e.target] for e in edges]]], axis=1))
        pairs = tree.query(segments, predicate="intersects")
        through = {int(k) for k, b in zip(*pairs) if segments[k].intersection(polygons[b]).length > PASS_THROUGH_M}
        edges = [e for k, e in enumerate(edges) if k not in through]
    stats["nodes_dropped"] = len(walled)
    stats["hops_dropped"] = (len(graph.edges) - len(edges)) // 2  # hops go both ways
    if len(edges) == len(graph.edges):
        return graph, stats
    if not edges:
        return None, stats
    pairs_arr = np.asarray([(index[e.source], index[e.target]) for e in edges], dtype=np.int64)
    adjacency = coo_matrix((np.ones(len(pairs_arr)), (pairs_arr[:, 0], pairs_arr[:, 1])), shape=(len(ids), len(ids)))
    _, labels = connected_components(adjacency, directed=False)
    used = np.unique(pairs_arr)
    sizes = Counter(labels[used].tolist())
    best = min(sizes, key=lambda lab: (-sizes[lab], int(used[labels[used] == lab].min())))
    keep = {ids[int(i)] for i in used[labels[used] == best]}
    stats["nodes_cut_off"] = len(ids) - len(walled) - len(keep)
    edges = [e for e in edges if e.source in keep]
    out: dict[str, list[Edge]] = {nid: [] for nid in keep}
    for e in edges:
        out[e.source].append(e)
    nodes = []
    for nid in ids:
        if nid not in keep:
            continue
        node = graph.nodes[nid]
        if len(out[nid]) != len(graph.out_edges(nid)):
            node = replace(node, walkable_headings=tuple(sorted(_round_heading(e.azimuth) for e in out[nid])))
        nodes.append(node)
    return StreetGraph(nodes, edges, name=graph.name), stats


# --- points of interest --------------------------------------------------------------------


@dataclass
class _Facades:
    """Every real building edge as a segment with its outward normal, for facade queries."""

    a: np.ndarray
    b: np.ndarray
    normal: np.ndarray
    owner: np.ndarray
    tree: shapely.STRtree
    polygons: list[Polygon]
    polygon_tree: shapely.STRtree
    building_ids: list[str]
    offsets: np.ndarray  # building i owns segments offsets[i]:offsets[i + 1]

    def segments_of(self, building: int) -> np.ndarray:
        return np.arange(self.offsets[building], self.offsets[building + 1], dtype=np.int64)

    @classmethod
    def of(cls, buildings: list[Building]) -> _Facades:
        a, b, owner = [], [], []
        for i, bld in enumerate(buildings):
            ring = np.asarray(bld.footprint, dtype=float)
            a.append(ring)
            b.append(np.roll(ring, -1, axis=0))
            owner.append(np.full(len(ring), i))
        a_arr = np.concatenate(a) if a else np.zeros((0, 2))
        b_arr = np.concatenate(b) if b else np.zeros((0, 2))
        d = b_arr - a_arr
        norm = np.linalg.norm(d, axis=1, keepdims=True)
        normal = np.column_stack([d[:, 1], -d[:, 0]]) / np.where(norm > 0, norm, 1.0)  # right of a CCW ring
        polygons = [Polygon(bld.footprint) for bld in buildings]
        return cls(a_arr, b_arr, normal, np.concatenate(owner) if owner else np.zeros(0, dtype=int),
                   shapely.STRtree(shapely.linestrings(np.stack([a_arr, b_arr], axis=1)) if len(a_arr) else []),
                   polygons, shapely.STRtree(polygons), [bld.id for bld in buildings],
                   np.cumsum([0] + [len(bld.footprint) for bld in buildings]))


def _closest_on_segments(p: np.ndarray, a: np.ndarray, b: np.ndarray, margin: float = 0.0) -> np.ndarray:
    """Closest points to p on each segment a-b, kept `margin` metres (at most half the length) from the ends."""
    d = b - a
    sq = np.einsum("ij,ij->i", d, d)
    t = np.where(sq > 0, np.einsum("ij,ij->i", p - a, d) / np.where(sq > 0, sq, 1.0), 0.0)
    if margin > 0:
        m = np.minimum(margin, np.sqrt(sq) / 2) / np.where(sq > 0, np.sqrt(sq), 1.0)
        t = np.clip(t, m, 1 - m)
    return a + np.clip(t, 0.0, 1.0)[:, None] * d


def _azimuth(v: np.ndarray) -> float:
    return normalize_heading(round(math.degrees(math.atan2(v[0], v[1])), 3))


def _pois(raw: list[tuple[int, int, str, dict[str, str], float, float]], frame: LocalFrame, graph: StreetGraph,
          node_ids: list[str], node_xy: np.ndarray, node_tree: cKDTree, buildings: list[Building],
          visibility_m: float) -> tuple[list[Poi], list[Building], int]:
    if not raw:
        return [], [], 0
    facades = _Facades.of(buildings)
    streets = _street_segments(graph, node_xy)
    street_tree = shapely.STRtree(shapely.linestrings(streets))
    points = frame.to_xy(np.asarray([r[4] for r in raw]), np.asarray([r[5] for r in raw]))
    near = facades.tree.query(shapely.points(points), predicate="dwithin", distance=FACADE_SEARCH_M)
    inside = facades.polygon_tree.query(shapely.points(points), predicate="within")
    candidates: dict[int, list[int]] = {}
    invented = {k for k, b in enumerate(buildings) if b.inferred}  # walls to keep clear of, never to sign
    for i, s in zip(near[0].tolist(), near[1].tolist()):
        if int(facades.owner[s]) not in invented:
            candidates.setdefault(i, []).append(s)
    container = {}
    for i, bi in zip(inside[0].tolist(), inside[1].tolist()):
        if bi not in invented:
            container[i] = min(bi, container.get(i, bi))

    pois: list[Poi] = []
    kiosks: list[Building] = []
    kiosk_polygons: list[Polygon] = []
    dropped = 0
    for i, (_, osm_id, kind, tags, lat, lon) in enumerate(raw):
        poi_id = f"{kind}/{osm_id}"
        p = points[i]
        placed = _on_facade(p, candidates.get(i, []), container.get(i), facades, node_xy, node_tree)
        kiosk = None
        if placed is not None:
            anchor, normal_deg, building_id = placed
        else:
            kiosk, anchor, normal_deg = _kiosk(poi_id, p, streets, street_tree, facades, kiosk_polygons, node_tree,
                                               stand_in_size(poi_class(tags) or ""))
            building_id = kiosk.id if kiosk is not None else None  # None: a board on a pole
        visible = node_tree.query_ball_point(anchor, visibility_m)
        if not visible:
            dropped += 1
            continue
        if kiosk is not None:
            kiosks.append(kiosk)
            kiosk_polygons.append(Polygon(kiosk.footprint))
        dist = np.linalg.norm(node_xy[visible] - anchor, axis=1)
        ranked = sorted(zip(dist.tolist(), (node_ids[v] for v in visible)))
        cls = poi_class(tags) or ""
        name = tags.get("name") or tags.get("name:en") or ""
        brand = tags.get("brand") or None
        pois.append(Poi(
            id=poi_id, name=name, brand=brand, poi_class=cls,
            tags={k: v for k, v in sorted(tags.items()) if not NOISE_TAG.match(k)},
            lat=float(lat), lon=float(lon),
            anchor=(round(float(anchor[0]), 3), round(float(anchor[1]), 3)), normal_deg=normal_deg,
            building_id=building_id, visible_nodes=tuple(nid for _, nid in ranked),
            signed=bool(name or brand) or cls.split("=", 1)[1] in GENERIC_SIGNAGE,
        ))
    return pois, kiosks, dropped


def _street_segments(graph: StreetGraph, node_xy: np.ndarray) -> np.ndarray:
    index = {nid: i for i, nid in enumerate(graph.nodes)}
    pairs = sorted({(min(index[e.source], index[e.target]), max(index[e.source], index[e.target]))
                    for e in graph.edges})
    pairs_arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return np.stack([node_xy[pairs_arr[:, 0]], node_xy[pairs_arr[:, 1]]], axis=1)


def _on_facade(p: np.ndarray, segments: list[int], container: Optional[int], facades: _Facades,
               node_xy: np.ndarray, node_tree: cKDTree) -> Optional[tuple[np.ndarray, float, str]]:
    """Nearest building edge (the POI's own building first) whose outside faces the nearest street node.

    A POI inside a building whose walls all face away from streets within reach (a shop deep in
    a mall or station) still goes on that building's wall that faces the nearest street at all,
    if that wall is within OWN_WALL_M.
    """
    own = facades.segments_of(container) if container is not None else np.zeros(0, dtype=np.int64)
    seg = np.union1d(np.asarray(segments, dtype=np.int64), own)
    if not len(seg):
        return None
    closest = _closest_on_segments(p, facades.a[seg], facades.b[seg])
    dist = np.linalg.norm(closest - p, axis=1)
    mine = np.isin(seg, own)
    usable = (dist <= FACADE_SEARCH_M) | (mine & (dist <= OWN_WALL_M))
    order = np.lexsort((seg, dist, ~mine))
    order = order[usable[order]]
    deep = seg[order[mine[order]]]
    order = seg[order]
    for reach, allowed in ((STREET_SEARCH_M, order), (np.inf, deep)):
        for s in allowed:
            c = _closest_on_segments(p, facades.a[s:s + 1], facades.b[s:s + 1], margin=1.0)[0]
            d, k = node_tree.query(c, distance_upper_bound=reach)
            n = facades.normal[s]
            if math.isfinite(d) and float(np.dot(node_xy[k] - c, n)) > 0:
                return c + SIGN_OFFSET_M * n, _azimuth(n), _building_id_of(facades, s)
    return None


def _building_id_of(facades: _Facades, segment: int) -> str:
    return facades.building_ids[int(facades.owner[segment])]


def _kiosk(poi_id: str, p: np.ndarray, streets: np.ndarray, street_tree: shapely.STRtree, facades: _Facades,
           placed: list[Polygon], node_tree: cKDTree,
           size: tuple[float, float, float] = (KIOSK_WIDTH_M, KIOSK_DEPTH_M, KIOSK_HEIGHT_M),
           ) -> tuple[Optional[Building], np.ndarray, float]:
    """A box of the POI's kind (`size`: width, depth, height; fidelity.stand_in_size) whose front,
    centred near the POI and clear of the street, faces the nearest street; where a box that big
    finds no free spot, a kiosk-sized one is tried.

    A box never covers a street node (its panorama would be inside it): with no free spot it is
    None, and the anchor is the front point, where the POI's board stands on a pole."""
    front = p.copy()
    facing = np.array([0.0, 1.0])
    for _ in range(3):
        s = int(min(street_tree.query_nearest(shapely.Point(front)).tolist()))
        q = _closest_on_segments(front, streets[s:s + 1, 0], streets[s:s + 1, 1])[0]
        gap = float(np.linalg.norm(q - front))
        if gap > 1e-6:
            facing = (q - front) / gap
        else:
            d = streets[s, 1] - streets[s, 0]
            facing = np.array([d[1], -d[0]]) / max(float(np.linalg.norm(d)), 1e-9)
        if gap >= KIOSK_STREET_CLEARANCE_M:
            break
        front = q - KIOSK_STREET_CLEARANCE_M * facing
    along = np.array([-facing[1], facing[0]])
    chosen = fallback = None
    sizes = [size] + ([(KIOSK_WIDTH_M, KIOSK_DEPTH_M, KIOSK_HEIGHT_M)] if size[0] > KIOSK_WIDTH_M else [])
    for width, depth, height in sizes:
        for shift in (0.0, width, -width, 2 * width, -2 * width):
            centre = front + shift * along
            box = _box(centre, facing, along, width, depth)
            poly = Polygon(box)
            hits = facades.polygon_tree.query(poly, predicate="intersects")
            overlaps = any(facades.polygons[h].intersection(poly).area > 0.01 for h in hits.tolist())
            overlaps = overlaps or any(k.intersection(poly).area > 0.01 for k in placed if k.distance(poly) == 0)
            covers_node = any(poly.distance(shapely.Point(node_tree.data[i])) < WALL_CLEARANCE_M for i in
                              node_tree.query_ball_point(centre - depth / 2 * facing, math.hypot(width, depth) / 2 + 1))
            if not covers_node and (not overlaps or fallback is None):
                fallback = fallback or (centre, box, height)
                if not overlaps:
                    chosen = (centre, box, height)
                    break
        if chosen is not None:
            break
    chosen = chosen or fallback
    if chosen is None:
        return None, front + SIGN_OFFSET_M * facing, _azimuth(facing)
    centre, box, height = chosen
    footprint = tuple((round(float(x), 3), round(float(y), 3)) for x, y in box)
    kiosk_id = f"kiosk/{poi_id}"
    levels = max(1, round((height - ROOF_M) / LEVEL_M))
    building = Building(kiosk_id, footprint, height, levels, _style(kiosk_id), synthetic=True)
    return building, centre + SIGN_OFFSET_M * facing, _azimuth(facing)


def _box(front_centre: np.ndarray, facing: np.ndarray, along: np.ndarray, width: float = KIOSK_WIDTH_M,
         depth: float = KIOSK_DEPTH_M) -> np.ndarray:
    """Box corners, counter-clockwise (`along` is `facing` turned 90 degrees left)."""
    half = width / 2 * along
    back = depth * facing
    return np.array([front_centre - half, front_centre + half, front_centre + half - back,
                     front_centre - half - back])
