"""Filling in what thin OSM data leaves out, so views of it are not paving to the horizon.

An extract may map streets but few footprints, no widths and no trees. From what it does map
we make: roads at their width with kerbs, sidewalks and verges; ground cover by landuse;
trees where OSM has them or landuse implies them (woods, parks, gardens of houses); and, where
landuse says the area is built up but no footprint stands, or a town street runs blank through
a settled but thinly mapped place (`unmapped_frontage`), buildings along the streets marked
`inferred`. Everything is placed from hashes of OSM ids, so one input gives one output.
`horizon_share` measures the result by rendering the task-start views.
"""
from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Optional, TextIO

import numpy as np
import shapely
import shapely.ops
from scipy.spatial import cKDTree
from shapely.geometry import LineString, Polygon

from cityseeker_ros.core.infra.progress import Progress
from cityseeker_ros.core.worlds.scene import XY, Area, Building, Road, Scene, Tree

# Areas whose multipolygons osmium assembles: buildings, ground cover, and landmark candidates.
AREA_KEYS = ("building", "landuse", "natural", "leisure", "amenity", "place", "historic", "tourism", "man_made",
             "railway")
_LANDUSE = {
    "grass": "grass", "meadow": "grass", "village_green": "grass", "recreation_ground": "grass",
    "cemetery": "grass", "flowerbed": "grass", "greenfield": "grass", "allotments": "field", "farmland": "field",
    "orchard": "field", "vineyard": "field", "plant_nursery": "field", "greenhouse_horticulture": "field",
    "farmyard": "bare", "forest": "forest", "residential": "residential", "commercial": "commercial",
    "retail": "retail", "industrial": "industrial", "construction": "bare", "brownfield": "bare", "railway": "bare",
    "quarry": "bare", "landfill": "bare", "garages": "paving", "basin": "water", "reservoir": "water",
}
_NATURAL = {"wood": "forest", "scrub": "grass", "heath": "grass", "grassland": "grass", "wetland": "grass",
            "water": "water", "bay": "water", "beach": "sand", "sand": "sand", "bare_rock": "bare", "scree": "bare"}
_LEISURE = {"park": "grass", "garden": "grass", "golf_course": "grass", "dog_park": "grass", "common": "grass",
            "pitch": "grass", "playground": "sand", "swimming_pool": "water"}
BUILT_UP = frozenset({"residential", "commercial", "retail"})  # where missing footprints are filled in

# Road widths by highway class (metres, kerb to kerb) when OSM tags neither width nor lanes.
ROAD_WIDTH_M = {
    "motorway": 14.0, "trunk": 12.0, "primary": 10.0, "secondary": 9.0, "tertiary": 7.5, "residential": 6.0,
    "unclassified": 5.5, "living_street": 5.0, "service": 4.0, "pedestrian": 6.0, "track": 3.0, "footway": 2.0,
    "path": 1.5, "cycleway": 2.5, "bridleway": 2.0, "steps": 2.0, "busway": 7.0, "road": 6.0, "raceway": 10.0,
}
LANE_M = 3.2
_KERBED = frozenset({"motorway", "trunk", "primary", "secondary", "tertiary", "residential", "unclassified",
                     "living_street", "busway", "road"})
_URBAN = frozenset({"primary", "secondary", "tertiary", "residential", "living_street"})
_PATHS = frozenset({"footway", "path", "cycleway", "bridleway", "steps", "pedestrian"})
_UNPAVED = frozenset({"gravel", "fine_gravel", "dirt", "ground", "unpaved", "compacted", "earth", "grass", "sand",
                      "mud", "pebblestone"})
SIDEWALK_M, VERGE_M = 2.0, 1.5

TREE_SPACING_M = {"forest": 7.0, "grass": 22.0, "residential": 26.0}  # landuse that implies trees
TREE_REACH_M = 160.0  # trees farther than this from every street node are never seen
MAX_TREES = 60000
TREE_HEIGHT_M = (6.0, 14.0)

# Inferred buildings: (width along the street, depth, setback from the kerb, pitch), storeys.
INFER = {"residential": (11.0, 10.0, 5.0, 19.0), "commercial": (20.0, 15.0, 2.5, 25.0),
         "retail": (20.0, 15.0, 2.5, 25.0)}
INFER_CLEAR_M = 6.0  # from any real building
IMPLIED_ZONE_M = 60.0
POI_CLEAR_M = 8.0
IMPLIED_FRONTAGE_M = 35.0
# The local fallback (`unmapped_frontage`): a town street stretch with no mapped building and no
# built-up landuse within UNMAPPED_M, in a settled but thinly mapped place (at least SETTLED_MIN
# mapped buildings or places within SETTLED_M, but fewer buildings there than the thin floor,
# THIN_BUILDINGS_PER_KM2, puts on that disc), is built up on the ground no landuse covers.
UNMAPPED_M = 50.0
SETTLED_M = 250.0
SETTLED_MIN = 5
FRONTAGE_STEP_M = 10.0
URBAN_POIS_PER_KM2 = 50.0  # the build's thin-data floor for POIs (build.MIN_POIS_PER_KM2)
THIN_BUILDINGS_PER_KM2 = 200.0  # and for buildings (build.MIN_BUILDINGS_PER_KM2)
FRONTAGE = frozenset({"primary", "secondary", "tertiary", "residential", "unclassified", "living_street",
                      "pedestrian", "road"})
REACH_M = 80.0

# Stand-in buildings for POIs that OSM maps without a footprint: width, depth, height.
KIOSK = (6.0, 4.0, 4.0)
SHOPFRONT = (10.0, 9.0, 7.4)
_LARGE = (40.0, 28.0, 16.0)
_STORE = (30.0, 22.0, 8.0)
STAND_IN: dict[str, tuple[float, float, float]] = {
    **{v: _LARGE for v in ("hospital", "school", "college", "university", "townhall", "courthouse", "stadium",
                           "clinic", "prison")},
    **{v: _STORE for v in ("supermarket", "department_store", "mall", "hardware", "doityourself", "furniture",
                           "cinema", "theatre", "library", "sports_centre", "wholesale", "car", "garden_centre",
                           "museum", "bus_station", "station", "fitness_centre")},
    "hotel": (24.0, 16.0, 20.0),
    **{v: KIOSK for v in ("kiosk", "vending_machine", "atm", "drinking_water", "toilets", "bus_stop", "telephone",
                          "ticket", "parcel_locker", "bicycle_rental", "tram_stop", "subway_entrance", "fuel",
                          "charging_station", "ice_cream", "taxi", "car_sharing", "water_point", "fountain",
                          "information", "post_box", "bench", "shelter", "newsagent", "lottery", "bureau_de_change",
                          "parking", "fitness_station", "swimming_pool", "platform", "halt")},
}


def ground_cover(tags: dict[str, str]) -> Optional[str]:
    """The ground an OSM area shows (scene.GROUND_COVERS), or None for an area that says nothing about it."""
    if tags.get("amenity") == "parking" and tags.get("parking") not in ("underground", "multi-storey"):
        return "parking"
    if tags.get("place") == "square" or (tags.get("highway") == "pedestrian" and tags.get("area") == "yes"):
        return "paving"
    for key, table in (("leisure", _LEISURE), ("natural", _NATURAL), ("landuse", _LANDUSE)):
        cover = table.get(tags.get(key, ""))
        if cover is not None:
            return cover
    return None


def is_ground_road(tags: dict[str, str]) -> bool:
    """A way the ground shows as a road or path (walkable or not), i.e. not in a tunnel or a building."""
    kind = tags.get("highway", "").removesuffix("_link")
    return (kind in ROAD_WIDTH_M and tags.get("area") != "yes" and tags.get("tunnel", "no") == "no"
            and tags.get("covered") != "yes" and tags.get("indoor") != "yes")


def _metres(value: Optional[str]) -> Optional[float]:
    try:
        v = float((value or "").strip().removesuffix("m").strip().replace(",", "."))
    except ValueError:
        return None
    return v if math.isfinite(v) and 0.5 <= v <= 60.0 else None


def road(way_id: int, tags: dict[str, str], line: Sequence[XY]) -> Road:
    """A road at its OSM width (width, else lanes, else its class), surface and kerbs."""
    kind = tags.get("highway", "road").removesuffix("_link")
    width = _metres(tags.get("width"))
    lanes = _metres(tags.get("lanes"))
    if width is None and lanes is not None and kind in _KERBED:
        width = min(lanes, 12) * LANE_M + 0.5
    width = width or ROAD_WIDTH_M.get(kind, 5.0)
    unpaved = tags.get("surface") in _UNPAVED or kind == "track"
    surface = "gravel" if unpaved else ("paving" if kind in _PATHS else "asphalt")
    kerb = kind in _KERBED and not unpaved
    walk = tags.get("sidewalk", tags.get("sidewalk:both", ""))
    if walk in ("both", "left", "right", "yes"):
        sidewalk = SIDEWALK_M
    elif walk in ("no", "none", "separate"):
        sidewalk = 0.0
    else:
        sidewalk = SIDEWALK_M if kind in _URBAN else 0.0
    verge = VERGE_M if kind in _KERBED else (0.8 if kind in _PATHS else 0.0)
    return Road(f"way/{way_id}", kind, round(width, 2), tuple((round(x, 3), round(y, 3)) for x, y in line),
                surface, kerb, sidewalk if kerb else 0.0, verge)


def stand_in_size(poi_class: str) -> tuple[float, float, float]:
    """Width, depth and height of the building a footprint-less POI stands in: big for a hospital,
    school or supermarket, a kiosk for a kiosk, vending machine or bus stop, a shopfront else."""
    value = poi_class.partition("=")[2]
    return STAND_IN.get(value, SHOPFRONT)


def _unit(*parts: object) -> float:
    return zlib.crc32("\x1f".join(str(p) for p in parts).encode()) / 2.0 ** 32


def scatter_trees(mapped: Iterable[tuple[int, list[XY]]], areas: Sequence[Area], roads: Sequence[Road],
                  buildings: Sequence[Building], node_xy: np.ndarray) -> list[Tree]:
    """Mapped trees (tree rows every 8 m) plus trees scattered where landuse implies them, kept
    off roads, out of buildings and away from street nodes (where the camera stands)."""
    points: list[tuple[float, float, str]] = []
    for osm_id, line in mapped:
        if len(line) == 1:
            points.append((line[0][0], line[0][1], f"t{osm_id}"))
            continue
        geom = LineString(line)
        n = max(1, int(geom.length // 8.0))
        for k in range(n + 1):
            p = geom.interpolate(k * geom.length / max(n, 1))
            points.append((p.x, p.y, f"r{osm_id}/{k}"))
    node_tree = cKDTree(node_xy) if len(node_xy) else None
    lo, hi = (node_xy.min(axis=0) - TREE_REACH_M, node_xy.max(axis=0) + TREE_REACH_M) if len(node_xy) else (0, 0)
    for area in areas:
        spacing = TREE_SPACING_M.get(area.cover)
        if spacing is None or len(area.ring) < 3:
            continue
        poly = Polygon(area.ring)
        if not poly.is_valid:
            poly = poly.buffer(0)
        x0, y0, x1, y1 = poly.bounds
        x0, y0 = max(x0, lo[0]), max(y0, lo[1])
        x1, y1 = min(x1, hi[0]), min(y1, hi[1])
        if x0 >= x1 or y0 >= y1 or (x1 - x0) * (y1 - y0) / spacing ** 2 > 4 * MAX_TREES:
            continue
        gx = np.arange(math.floor(x0 / spacing), math.ceil(x1 / spacing))
        gy = np.arange(math.floor(y0 / spacing), math.ceil(y1 / spacing))
        ii, jj = (a.ravel() for a in np.meshgrid(gx, gy))
        jitter = np.array([[_unit(area.cover, i, j, 1), _unit(area.cover, i, j, 2)] for i, j in zip(ii, jj)])
        xy = (np.stack([ii, jj], axis=1) + 0.15 + 0.7 * jitter.reshape(-1, 2)) * spacing
        inside = shapely.contains_xy(poly, xy[:, 0], xy[:, 1]) if len(xy) else np.zeros(0, bool)
        points += [(float(x), float(y), f"{area.cover}/{i}/{j}") for (x, y), i, j, ok in zip(xy, ii, jj, inside)
                   if ok]
    if not points:
        return []
    xy = np.array([(x, y) for x, y, _ in points])
    keep = np.ones(len(xy), bool)
    if node_tree is not None:
        d, _ = node_tree.query(xy)
        keep &= (d >= 3.0) & (d <= TREE_REACH_M)
    blockers = [shapely.buffer(LineString(r.line), r.width_m / 2 + (0.5 if r.kerb else 0.3)) for r in roads
                if len(r.line) >= 2]
    blockers += [Polygon(b.footprint).buffer(1.5) for b in buildings]
    if blockers:
        hit, _ = shapely.STRtree(blockers).query(shapely.points(xy), predicate="intersects")
        keep[np.unique(hit)] = False
    out, seen = [], set()
    for (x, y, key), ok in zip(points, keep):
        cell = (round(x / 2.0), round(y / 2.0))  # a mapped tree and a scattered one in the same spot: one tree
        if not ok or cell in seen:
            continue
        seen.add(cell)
        h = TREE_HEIGHT_M[0] + (TREE_HEIGHT_M[1] - TREE_HEIGHT_M[0]) * _unit(key, "h")
        out.append(Tree(round(x, 2), round(y, 2), round(h, 2)))
        if len(out) >= MAX_TREES:
            break
    return out


def infer_buildings(areas: Sequence[Area], roads: Sequence[Road], buildings: Sequence[Building],
                    node_xy: np.ndarray, style: Callable[[str], int],
                    poi_xy: np.ndarray = np.zeros((0, 2))) -> list[Building]:
    """Buildings along the streets of built-up landuse, and of unmapped frontage
    (`unmapped_frontage`), where OSM maps none: a box every `pitch`
    metres on both sides, set back from the kerb, kept clear of real buildings, other landuse
    (a park inside a residential zone stays a park), roads, street nodes and mapped places
    (a POI without a footprint gets a stand-in of its own kind, not an invented neighbour's wall)."""
    poi_tree = cKDTree(poi_xy) if len(poi_xy) else None
    zones = [(a, Polygon(a.ring)) for a in areas if a.cover in BUILT_UP and len(a.ring) >= 3]
    zones = [(a, p if p.is_valid else p.buffer(0)) for a, p in zones]
    zones += [(Area(f"unmapped/{k}", "residential", ()), p)
              for k, p in enumerate(unmapped_frontage(areas, roads, buildings, poi_xy))]
    if not zones or not len(node_xy):
        return []
    open_ground = [Polygon(a.ring) for a in areas if a.cover not in BUILT_UP and a.cover != "industrial"
                   and len(a.ring) >= 3]
    open_ground = [p if p.is_valid else p.buffer(0) for p in open_ground]
    open_tree = shapely.STRtree(open_ground)
    real_tree = shapely.STRtree([Polygon(b.footprint) for b in buildings])
    road_geoms = [LineString(r.line) for r in roads if len(r.line) >= 2]
    road_half = np.array([r.width_m / 2 + r.sidewalk_m + (0.5 if r.kerb else 0.0) for r in roads
                          if len(r.line) >= 2])
    road_tree = shapely.STRtree(road_geoms)
    node_tree = cKDTree(node_xy)
    zone_tree = shapely.STRtree([p for _, p in zones])
    placed: list[Polygon] = []
    out: list[Building] = []
    for r in roads:
        if r.kind not in FRONTAGE or len(r.line) < 2:
            continue
        line = LineString(r.line)
        first = np.asarray(r.line[0])
        if node_tree.query(first)[0] > line.length + REACH_M:  # a road nowhere near the street graph
            continue
        for zi in sorted(zone_tree.query(line, predicate="intersects").tolist()):
            zone, zpoly = zones[zi]
            width, depth, setback, pitch = INFER[zone.cover]
            n = int(line.length // pitch)
            for k in range(n):
                s = (k + 0.5) * line.length / n
                p, q = line.interpolate(max(s - 1.0, 0.0)), line.interpolate(min(s + 1.0, line.length))
                d = np.array([q.x - p.x, q.y - p.y])
                norm = float(np.hypot(*d))
                if norm < 1e-6:
                    continue
                d /= norm
                c = line.interpolate(s)
                for side in (1.0, -1.0):
                    normal = np.array([d[1], -d[0]]) * side
                    off = r.width_m / 2 + r.sidewalk_m + setback + depth / 2
                    centre = np.array([c.x, c.y]) + normal * off
                    box = _box(centre, d, normal, width, depth)
                    if not zpoly.contains(shapely.Point(centre)):
                        continue
                    if real_tree.query(box, predicate="dwithin", distance=INFER_CLEAR_M).size:
                        continue
                    if open_tree.query(box, predicate="intersects").size:
                        continue
                    if any(box.distance(o) < 3.0 for o in placed[-200:]):
                        continue
                    near_roads = road_tree.query(box, predicate="dwithin", distance=float(road_half.max()))
                    if any(box.distance(road_geoms[j]) < road_half[j] for j in near_roads.tolist()):
                        continue
                    if poi_tree is not None and poi_tree.query_ball_point(centre, math.hypot(width, depth) / 2
                                                                          + POI_CLEAR_M):
                        continue
                    dist, _ = node_tree.query(centre)
                    if dist > REACH_M or node_tree.query_ball_point(centre, max(width, depth) / 2 + 4.0):
                        continue
                    bid = f"inferred/{r.id}/{k}/{'l' if side > 0 else 'r'}"
                    storeys = _storeys(zone.cover, bid)
                    placed.append(box)
                    ring = tuple((round(float(x), 3), round(float(y), 3))
                                 for x, y in shapely.geometry.polygon.orient(box, 1.0).exterior.coords[:-1])
                    out.append(Building(bid, ring, round(storeys * 3.2 + 1.0, 2), storeys, style(bid),
                                        synthetic=True, inferred=True))
    return out


def unmapped_frontage(areas: Sequence[Area], roads: Sequence[Road], buildings: Sequence[Building],
                      poi_xy: np.ndarray = np.zeros((0, 2))) -> list[Polygon]:
    """The ground beside town streets that the map leaves blank in a settled but thinly mapped
    place, taken as built up (houses): stretches of FRONTAGE streets with no mapped building and
    no built-up landuse within UNMAPPED_M, where at least SETTLED_MIN mapped buildings or places
    stand within SETTLED_M but fewer buildings than THIN_BUILDINGS_PER_KM2 on that disc (where
    the buildings are mapped that densely, a blank is taken to be really open), IMPLIED_FRONTAGE_M
    either side of the street, less every mapped area (a field, park, wood, water or yard stays
    what the map says). Decided stretch by stretch, so what the rest of the extract maps changes
    nothing here."""
    footprints = [Polygon(b.footprint) for b in buildings if len(b.footprint) >= 3]
    building_xy = np.asarray(shapely.get_coordinates(shapely.centroid(footprints))).reshape(-1, 2)
    evidence_xy = np.concatenate([building_xy, np.asarray(poi_xy, float).reshape(-1, 2)])
    if len(evidence_xy) < SETTLED_MIN:
        return []
    evidence_tree = cKDTree(evidence_xy)
    building_tree = cKDTree(building_xy) if len(building_xy) else None
    fully_mapped = THIN_BUILDINGS_PER_KM2 * math.pi * (SETTLED_M / 1000.0) ** 2  # buildings on the disc
    mapped = [p if p.is_valid else p.buffer(0) for p in (Polygon(a.ring) for a in areas if len(a.ring) >= 3)]
    # Mapped built-up land keeps a stretch out; the whole-extract fallback's zones (implied_zones)
    # only take their own ground, so a park's or shop's zone does not blank the street beside it.
    built = [p for a, p in zip((a for a in areas if len(a.ring) >= 3), mapped)
             if a.cover in BUILT_UP and not a.id.startswith("implied/")]
    near = shapely.STRtree(footprints + built)
    stretches = []
    for r in roads:
        if r.kind not in FRONTAGE or len(r.line) < 2:
            continue
        line = LineString(r.line)
        n = max(1, math.ceil(line.length / FRONTAGE_STEP_M))
        at = np.linspace(0.0, line.length, n + 1)
        points = shapely.line_interpolate_point(line, at)
        xy = shapely.get_coordinates(points)
        settled = evidence_tree.query_ball_point(xy, SETTLED_M, return_length=True) >= SETTLED_MIN
        thin = (building_tree.query_ball_point(xy, SETTLED_M, return_length=True) < fully_mapped
                if building_tree is not None else np.ones(len(at), bool))
        mapped_near = np.zeros(len(at), bool)
        mapped_near[near.query(points, predicate="dwithin", distance=UNMAPPED_M)[0]] = True
        blank = settled & thin & ~mapped_near
        half = FRONTAGE_STEP_M / 2
        k = 0
        while k < len(at):
            if not blank[k]:
                k += 1
                continue
            j = k
            while j + 1 < len(at) and blank[j + 1]:
                j += 1
            piece = shapely.ops.substring(line, max(at[k] - half, 0.0), min(at[j] + half, line.length))
            stretches.append(piece.buffer(r.width_m / 2 + r.sidewalk_m + IMPLIED_FRONTAGE_M, cap_style="flat"))
            k = j + 1
    if not stretches:
        return []
    ground = shapely.union_all(stretches)
    if mapped:
        ground = ground.difference(shapely.union_all(mapped))
    parts = [p for p in getattr(ground, "geoms", [ground]) if isinstance(p, Polygon) and p.area > 1.0]
    return sorted(parts, key=lambda p: (round(p.bounds[0], 3), round(p.bounds[1], 3)))


def implied_zones(areas: Sequence[Area], poi_xy: np.ndarray, roads: Sequence[Road] = (),
                  node_xy: np.ndarray = np.zeros((0, 2)), buildings: int = 0) -> list[Area]:
    """Where an extract maps no built-up landuse at all and few buildings (fewer than
    THIN_BUILDINGS_PER_KM2 per km² of street area, 100 m squares holding a street node), the
    ground within IMPLIED_ZONE_M of its
    shops and amenities counts as commercial; and where those are as dense as a town's (at
    least URBAN_POIS_PER_KM2 per km² of street area), the frontage of its town streets too. A clip
    that maps the places but not the buildings or the landuse is built up there."""
    cells = len({(int(x // 100), int(y // 100)) for x, y in np.asarray(node_xy).reshape(-1, 2)})
    km2 = max(cells, 1) * 0.01
    if any(a.cover in BUILT_UP for a in areas) or not len(poi_xy) or buildings / km2 >= THIN_BUILDINGS_PER_KM2:
        return []
    shapes = list(shapely.buffer(shapely.points(poi_xy), IMPLIED_ZONE_M, quad_segs=4))
    if len(poi_xy) / km2 >= URBAN_POIS_PER_KM2:
        shapes += [shapely.buffer(LineString(r.line), r.width_m / 2 + IMPLIED_FRONTAGE_M, quad_segs=4)
                   for r in roads if r.kind in _URBAN and len(r.line) >= 2]
    merged = shapely.union_all(shapes)
    parts = list(getattr(merged, "geoms", [merged]))
    out = []
    for k, poly in enumerate(sorted(parts, key=lambda p: (p.bounds[0], p.bounds[1]))):
        ring = tuple((round(float(x), 3), round(float(y), 3)) for x, y in poly.exterior.coords[:-1])
        out.append(Area(f"implied/{k}", "commercial", ring))
    return out


def _storeys(cover: str, building_id: str) -> int:
    u = _unit(building_id, "storeys")
    if cover == "residential":
        return 2 if u < 0.55 else (3 if u < 0.8 else 4)
    return 3 + int(u * 3)


def _box(centre: np.ndarray, along: np.ndarray, across: np.ndarray, width: float, depth: float) -> Polygon:
    a, b = along * width / 2, across * depth / 2
    return Polygon([centre - a - b, centre + a - b, centre + a + b, centre - a + b])


# --- measuring: what the task-start views show above the horizon ---------------------------

EMPTY_CONTENT = 0.02  # a view with less scene content than this share above the horizon shows nothing there
MAX_START_NODES = 40
PROBE_SIZE = (320, 240)


def horizon_share(scene: Scene, graph, starts: Iterable[str], stream: Optional[TextIO] = None) -> dict[str, float]:
    """Share of task-start views (the view along every walkable heading at up to MAX_START_NODES
    start nodes, evenly spread) whose part above the horizon shows less than EMPTY_CONTENT
    scene content (walls, trees, landmarks, boards; the backdrop skyline does not count),
    measured by rendering them."""
    from cityseeker_ros.core.render import Renderer, RenderSettings  # the renderer reads scenes; not the reverse

    nodes = sorted(set(starts))
    if len(nodes) > MAX_START_NODES:
        nodes = [nodes[round(i * (len(nodes) - 1) / (MAX_START_NODES - 1))] for i in range(MAX_START_NODES)]
    renderer = Renderer(scene, graph, RenderSettings(signs=False))
    views = empty = 0
    total = sum(len(graph.nodes[node].walkable_headings) for node in nodes)
    with Progress("world build: task-start views rendered", total, unit="views", stream=stream) as progress:
        for node in nodes:
            for heading in graph.nodes[node].walkable_headings:
                view = renderer.perspective(node, heading, width=PROBE_SIZE[0], height=PROBE_SIZE[1])
                views += 1
                empty += int(view.meta["above_horizon_content"] < EMPTY_CONTENT)
                progress.advance()
    return {"views": views, "empty": empty, "share": round(empty / views, 3) if views else 0.0}
