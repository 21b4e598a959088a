"""Hand-made landmark worlds: a 15 x 15 street grid, 20 m apart, with four landmarks around it,
each seen from part of the grid; and a stand-in for the renderer that paints each landmark's
crown as a flat patch of its colour at the right column and apparent size."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from cityseeker_ros.core.sensing.views.source import ViewSource
from cityseeker_ros.core.streets.geodesy import LocalFrame, destination, geodesic_m, initial_bearing_deg
from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.worlds.folder import graph_to_json
from cityseeker_ros.core.worlds.scene import Landmark, Scene

LAT0, LON0 = 48.0, 2.0
N, SPACING = 15, 20.0
# (id, name, east m, north m of the grid's south-west node, height, colour, which nodes see it)
LANDMARKS = (
    ("way/1", "St Nicholas Cathedral", -80.0, 140.0, 70.0, (200, 30, 40), lambda i, j: j <= 9),
    ("way/2", "Casino Tower", 140.0, 380.0, 90.0, (30, 180, 60), lambda i, j: i >= 5),
    ("node/3", "Radio Mast", 380.0, 100.0, 120.0, (40, 60, 210), lambda i, j: j >= 5),
    ("way/4", "Central Station", 150.0, -100.0, 45.0, (230, 200, 20), lambda i, j: i <= 9),
)


def node_id(i: int, j: int) -> str:
    return f"r{i:02d}c{j:02d}"


def point(east: float, north: float) -> tuple[float, float]:
    lat, lon = destination(LAT0, LON0, 0.0, north)
    return destination(lat, lon, 90.0, east)


def grid_graph(n: int = N, spacing: float = SPACING) -> StreetGraph:
    """Row i runs north, column j east; every node links to its four neighbours both ways."""
    pos = {node_id(i, j): point(j * spacing, i * spacing) for i in range(n) for j in range(n)}
    links = {k: [] for k in pos}
    for i in range(n):
        for j in range(n):
            for di, dj in ((0, 1), (1, 0), (0, -1), (-1, 0)):
                if 0 <= i + di < n and 0 <= j + dj < n:
                    links[node_id(i, j)].append(node_id(i + di, j + dj))
    edges = [Edge(a, b, initial_bearing_deg(*pos[a], *pos[b]), geodesic_m(*pos[a], *pos[b]))
             for a, targets in links.items() for b in targets]
    nodes = [Node(k, lat, lon, 0.0, tuple(initial_bearing_deg(lat, lon, *pos[b]) for b in links[k]))
             for k, (lat, lon) in pos.items()]
    return StreetGraph(nodes, edges, name="gridtown")


def make_landmarks(graph: StreetGraph, frame: LocalFrame, count: int = len(LANDMARKS)) -> list[Landmark]:
    out = []
    for lid, name, east, north, height, colour, sees in LANDMARKS[:count]:
        lat, lon = point(east, north)
        seen = [node_id(i, j) for i in range(N) for j in range(N) if sees(i, j)]
        seen.sort(key=lambda k: geodesic_m(lat, lon, graph.nodes[k].lat, graph.nodes[k].lon))
        x, y = (float(v) for v in frame.to_xy(lat, lon))
        out.append(Landmark(lid, name, "tower", lat, lon, (x, y), height, 20.0, colour, None, tuple(seen)))
    return out


def grid_scene(graph: StreetGraph, count: int = len(LANDMARKS)) -> Scene:
    frame = LocalFrame(LAT0, LON0)
    return Scene(LAT0, LON0, [], [], make_landmarks(graph, frame, count))


SMALL = dict(test_tasks=30, dev_tasks=6, route_mean_hops=14.0, route_sd_hops=5.0, min_hops=5, max_hops=28)


def write_world_folder(folder: Path, graph: StreetGraph, scene: Scene, tasks_doc: dict) -> Path:
    """A world folder by hand: world.json, graph.json, scene.json, an empty needs tasks.json and
    the landmark task file."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"world.json": {"format": "cityseeker-world", "format_version": 1, "name": "gridtown", "city": "gridtown"},
             "graph.json": graph_to_json(graph), "scene.json": scene.to_json(),
             "tasks.json": {"version": "1", "tasks": [], "category_targets": {}},
             "tasks.landmarks.json": tasks_doc}
    for name, doc in files.items():
        (folder / name).write_text(json.dumps(doc))
    return folder


def patch_image(latlon: tuple[float, float], heading: float, landmarks: list[Landmark], *, width: int = 320,
                height: int = 240, fov_deg: float = 90.0, eye_m: float = 2.5, crown_m: float = 8.0) -> np.ndarray:
    """A grey view with each landmark's crown (its top `crown_m`) painted flat in its colour, at
    the columns and rows a pitch-0 pinhole camera sees it (pixel centres decide, as in the renderer)."""
    image = np.full((height, width, 3), 128, dtype=np.uint8)
    f = (width / 2.0) / math.tan(math.radians(fov_deg) / 2.0)
    cols = np.arange(width) + 0.5 - width / 2.0
    rows = height / 2.0 - np.arange(height) - 0.5
    for m in landmarks:
        bearing = initial_bearing_deg(*latlon, m.lat, m.lon)
        dist = geodesic_m(*latlon, m.lat, m.lon)
        off = math.radians((bearing - heading + 180.0) % 360.0 - 180.0)
        depth = dist * math.cos(off)
        if depth <= 1.0:
            continue
        centre, half = f * math.tan(off), f * m.width_m / 2.0 / depth
        top, bottom = f * (m.height_m - eye_m) / depth, f * (m.height_m - crown_m - eye_m) / depth
        in_cols = (cols >= centre - half) & (cols <= centre + half)
        in_rows = (rows <= top) & (rows >= bottom)
        image[np.ix_(in_rows, in_cols)] = m.colour
    return image


class PatchViews(ViewSource):
    """The renderer's stand-in: a node shows the landmarks whose visible_nodes hold it."""

    name = "patches"
    synthetic = True

    def __init__(self, graph: StreetGraph, scene: Scene, **camera) -> None:
        self.graph, self.scene, self.camera = graph, scene, camera

    def images(self, node, headings):
        seen = [m for m in self.scene.landmarks if node.id in m.visible_nodes]
        return [patch_image((node.lat, node.lon), h, seen, **self.camera) for h in headings]


# The synthetic extract: the same town as raw OSM, for the builder and the independent checker.
# Two districts joined by one road; landmarks low enough (25 m, a 5 m crown: seen from ~530 m)
# that the east district sees only the Radio Mast, so some of its goals are one-landmark and too
# vague to keep; and two water towers sharing a name 900 m apart, which name no one place.
BLOCK_M = 60.0
WEST = (0.0, 420.0, 0.0, 420.0)  # x0, x1, y0, y1 (east, north metres)
EAST = (1200.0, 1560.0, 0.0, 420.0)
LINK_Y = 240.0
RAW_LANDMARKS = (  # (osm id, tags, east, north)
    (101, {"amenity": "place_of_worship", "name": "St Nicholas Cathedral", "height": "25"}, -100.0, 200.0),
    (102, {"man_made": "tower", "name": "Casino Tower", "height": "25"}, 200.0, 560.0),
    (103, {"railway": "station", "name": "Central Station", "height": "25"}, 210.0, -130.0),
    (104, {"historic": "monument", "name": "Old Mill", "height": "25"}, 700.0, 330.0),
    (105, {"man_made": "tower", "name": "Radio Mast", "height": "25"}, 1380.0, 560.0),
    (106, {"man_made": "water_tower", "name": "Water Tower", "height": "25"}, -250.0, -250.0),
    (107, {"man_made": "water_tower", "name": "Water Tower", "height": "25"}, 600.0, 650.0),
)


def _ticks(lo: float, hi: float) -> list[float]:
    return [lo + k * BLOCK_M for k in range(int(round((hi - lo) / BLOCK_M)) + 1)]


def write_osm(path: Path) -> Path:
    """Gridtown as an OSM XML extract: residential streets every 60 m in two districts, one road
    between them, and the landmarks of RAW_LANDMARKS as tagged nodes."""
    ids: dict[tuple[float, float], int] = {}
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<osm version="0.6" generator="gridtown">']

    def node(x: float, y: float) -> int:
        key = (round(x, 3), round(y, 3))
        if key not in ids:
            ids[key] = 1000 + len(ids)
            lat, lon = point(x, y)
            lines.append(f'  <node id="{ids[key]}" version="1" lat="{lat:.8f}" lon="{lon:.8f}"/>')
        return ids[key]

    ways: list[list[int]] = []
    for x0, x1, y0, y1 in (WEST, EAST):
        for y in _ticks(y0, y1):
            ways.append([node(x, y) for x in _ticks(x0, x1)])
        for x in _ticks(x0, x1):
            ways.append([node(x, y) for y in _ticks(y0, y1)])
    ways.append([node(x, LINK_Y) for x in _ticks(WEST[1], EAST[0])])
    for osm_id, tags, x, y in RAW_LANDMARKS:
        lat, lon = point(x, y)
        lines.append(f'  <node id="{osm_id}" version="1" lat="{lat:.8f}" lon="{lon:.8f}">')
        lines += [f'    <tag k="{k}" v="{v}"/>' for k, v in tags.items()]
        lines.append('  </node>')
    for k, refs in enumerate(ways):
        lines.append(f'  <way id="{5000 + k}" version="1">')
        lines += [f'    <nd ref="{r}"/>' for r in refs]
        lines += ['    <tag k="highway" v="residential"/>', f'    <tag k="name" v="Street {k}"/>', '  </way>']
    lines.append('</osm>')
    path.write_text("\n".join(lines) + "\n")
    return path


def small_grid_world(folder: Path) -> Path:
    """The grid with its landmark goals (SMALL settings) as a world folder: a landmark run in seconds."""
    from cityseeker_ros.core.tasks.landmarks.generator import LandmarkTaskSettings, generate_landmark_tasks

    graph = grid_graph()
    scene = grid_scene(graph)
    generated = generate_landmark_tasks("gridtown", graph, scene, LandmarkTaskSettings(**SMALL))
    return write_world_folder(folder, graph, scene, generated.document)
