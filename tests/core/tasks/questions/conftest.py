"""A hand-made high street for the questions family: one north-south street of 15 nodes every
15 m along the equator (s00 at the origin, s14 210 m north), blocks on both sides from x = +-6 m,
and named shops facing the street, so that boards are legible from the nodes beside them."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.worlds.folder import graph_to_json
from cityseeker_ros.core.worlds.scene import Building, Poi, Scene

M_PER_DEG_LAT = 110574.3
M_PER_DEG_LON = 6378137.0 * math.pi / 180.0
N_NODES, SPACING_M = 15, 15.0


def _box(x0: float, y0: float, x1: float, y1: float) -> tuple:
    return ((x0, y0), (x1, y0), (x1, y1), (x0, y1))


def _poi(pid: str, name: str, cls: str, side: str, y: float, building: str, brand: str | None = None) -> Poi:
    x, normal = (6.0, 270.0) if side == "east" else (-6.0, 90.0)
    key, value = cls.split("=")
    nodes = tuple(f"s{i:02d}" for i in sorted(range(N_NODES), key=lambda i: abs(i * SPACING_M - y))
                  if abs(i * SPACING_M - y) <= 50.0)
    return Poi(pid, name, brand, cls, {key: value}, y / M_PER_DEG_LAT, x / M_PER_DEG_LON, (x, y), normal, building,
               nodes)


def high_street() -> tuple[StreetGraph, Scene]:
    buildings, pois = [], []
    shops = {  # y of the board -> (name, class) on each side
        "east": [(60, "Cafe Uno", "amenity=cafe"), (90, "Farmacia Centrale", "amenity=pharmacy"),
                 (120, "Banca Rossa", "amenity=bank"), (150, "Libreria Dante", "shop=books"),
                 (180, "Hotel Lido", "tourism=hotel")],
        "west": [(75, "Trattoria Sole", "amenity=restaurant"), (105, "Panificio Bruno", "shop=bakery"),
                 (135, "Bar Centrale", "amenity=bar"), (165, "Gelateria Luna", "amenity=ice_cream")],
    }
    for side, rows in shops.items():
        sign = 1.0 if side == "east" else -1.0
        for k, (y, name, cls) in enumerate(rows):
            bid = f"{side[0]}{k}"
            levels = 3 + (k % 4)
            height = 3.1 + 3.2 * (levels - 1)
            x0, x1 = sorted((sign * 6.0, sign * 20.0))
            buildings.append(Building(bid, _box(x0, y - 14.0, x1, y + 14.0), height, levels, 2 * k + (side == "west")))
            pois.append(_poi(f"node/{side}{k}", name, cls, side, float(y), bid))
    nodes = [Node(f"s{i:02d}", i * SPACING_M / M_PER_DEG_LAT, 0.0, 0.0, tuple(h for h, ok in (
        (0.0, i < N_NODES - 1), (180.0, i > 0)) if ok)) for i in range(N_NODES)]
    edges = [Edge(f"s{i:02d}", f"s{i + 1:02d}", 0.0, SPACING_M) for i in range(N_NODES - 1)]
    edges += [Edge(f"s{i + 1:02d}", f"s{i:02d}", 180.0, SPACING_M) for i in range(N_NODES - 1)]
    return StreetGraph(nodes, edges, name="highstreet"), Scene(0.0, 0.0, buildings, pois)


@pytest.fixture(scope="session")
def street() -> tuple[StreetGraph, Scene]:
    return high_street()


@pytest.fixture(scope="session")
def street_tasks(street):
    """The family's generated tasks on the high street (every kind, seed 0)."""
    from cityseeker_ros.core.tasks.family import get_family

    graph, scene = street
    return get_family("questions").generate("highstreet", graph, scene, seed=0)


def write_world_folder(folder: Path, graph: StreetGraph, scene: Scene, tasks_doc: dict) -> Path:
    """A world folder as `cityseeker world build` leaves it, with the questions' task file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "world.json").write_text(json.dumps({"format": "cityseeker-world", "format_version": 1,
                                                   "name": graph.name, "city": graph.name}))
    (folder / "graph.json").write_text(json.dumps(graph_to_json(graph)))
    (folder / "scene.json").write_text(json.dumps(scene.to_json()))
    (folder / "tasks.json").write_text(json.dumps({"tasks": [], "category_targets": {}}))
    (folder / "tasks.questions.json").write_text(json.dumps(tasks_doc))
    return folder


@pytest.fixture(scope="session")
def street_folder(street, street_tasks, tmp_path_factory) -> Path:
    graph, scene = street
    return write_world_folder(tmp_path_factory.mktemp("world") / "highstreet", graph, scene, street_tasks.document)


def street_world(folder: Path, split: str = "test"):
    """The high street as a loaded World of the questions family (generated, written to `folder`)."""
    from cityseeker_ros.core.tasks.family import get_family
    from cityseeker_ros.core.worlds.folder import load_world

    graph, scene = high_street()
    doc = get_family("questions").generate(graph.name, graph, scene).document
    return load_world(write_world_folder(folder, graph, scene, doc), split=split, family="questions")


# --- a synthetic extract that provokes each check ------------------------------------------------------


def _at(x: float, y: float) -> tuple[float, float]:
    return y / M_PER_DEG_LAT, x / M_PER_DEG_LON


def provoking_street() -> tuple[StreetGraph, Scene, list[tuple[str, dict, float, float]]]:
    """The high street plus (1) a hotel whose board the builder moved 29 m onto its wall: by its
    board the bus stop is north of it, by the map east; (2) a named car park 36 m west of "Cafe Uno"
    and an unnamed one 83 m west that only the raw map holds. Returns the graph, the scene as built
    and the raw map's objects (id, tags, lat, lon)."""
    graph, scene = high_street()
    extra_b = [Building("w9", _box(-20.0, 181.0, -6.0, 209.0), 12.7, 4, 3),
               Building("e9", _box(6.0, 211.0, 20.0, 239.0), 9.5, 3, 4),
               Building("w8", _box(-40.0, 50.0, -26.0, 74.0), 6.3, 2, 5)]
    hotel = _poi("node/alpina", "Hotel Alpina", "tourism=hotel", "west", 195.0, "w9")
    hotel = dataclasses.replace(hotel, lat=_at(-30.0, 212.0)[0], lon=_at(-30.0, 212.0)[1])  # the map's spot
    stop = _poi("node/posta", "Fermata Posta", "highway=bus_stop", "east", 225.0, "e9")
    park = dataclasses.replace(_poi("node/park", "Parcheggio Centro", "amenity=parking", "west", 62.0, "w8"),
                               anchor=(-26.0, 62.0), lat=_at(-30.0, 62.0)[0], lon=_at(-30.0, 62.0)[1])
    pois = [dataclasses.replace(p, id=f"node/{k}") for k, p in enumerate(scene.pois + [hotel, stop, park], 1)]
    built = Scene(scene.origin_lat, scene.origin_lon, scene.buildings + extra_b, pois)
    raw = [(p.id, {**p.tags, "name": p.name}, p.lat, p.lon) for p in pois]
    raw.append((f"node/{len(pois) + 1}", {"amenity": "parking"}, *_at(-77.0, 60.0)))  # unnamed, not in the scene
    return graph, built, raw


def write_osm(path: Path, objects: list[tuple[str, dict, float, float]]) -> Path:
    """The raw map as an OSM XML file: one node per object ("node/<number>" ids)."""
    from xml.sax.saxutils import quoteattr

    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<osm version="0.6" generator="test">']
    for oid, tags, lat, lon in objects:
        lines.append(f'<node id="{oid.split("/")[1]}" version="1" lat="{lat:.9f}" lon="{lon:.9f}">')
        lines += [f"<tag k={quoteattr(a)} v={quoteattr(b)}/>" for a, b in tags.items()]
        lines.append("</node>")
    lines.append("</osm>")
    path.write_text("\n".join(lines))
    return path
