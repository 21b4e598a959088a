"""A hand-made world: one street of 40 nodes running east along the equator, 20 m apart,
with a cafe seen from n30 and a convenience store seen from n05."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.worlds.scene import Building, Poi, Scene


def line_graph(n: int = 40, spacing_m: float = 20.0) -> StreetGraph:
    ids = [f"n{i:02d}" for i in range(n)]
    coords = [destination(0.0, 0.0, 90.0, i * spacing_m) for i in range(n)]
    edges = []
    for i in range(n - 1):
        edges += [Edge(ids[i], ids[i + 1], 90.0, spacing_m), Edge(ids[i + 1], ids[i], 270.0, spacing_m)]
    nodes = [Node(ids[i], coords[i][0], coords[i][1], 90.0,
                  tuple(h for h, ok in ((90.0, i < n - 1), (270.0, i > 0)) if ok)) for i in range(n)]
    return StreetGraph(nodes, edges, name="lineville")


def poi(pid: str, poi_class: str, seen_from: list[int], name: str = "", brand: str | None = None,
        **tags: str) -> Poi:
    key, value = poi_class.split("=")
    return Poi(pid, name, brand, poi_class, {key: value, **tags}, 0.0001, 0.0, (0.0, 10.0), 180.0, None,
               tuple(f"n{i:02d}" for i in seen_from))


@pytest.fixture
def line_world() -> tuple[StreetGraph, Scene]:
    graph = line_graph()
    pois = [poi("node/1", "amenity=cafe", [30, 29, 31], name="Cafe Uno", outdoor_seating="yes"),
            poi("node/2", "shop=convenience", [5, 4, 6], name="Corner Shop", brand="7-Eleven"),
            poi("node/3", "amenity=toilets", [38, 37, 39], wheelchair="yes")]
    buildings = [Building("way/9", ((0.0, 12.0), (10.0, 12.0), (10.0, 20.0), (0.0, 20.0)), 12.0, 4, 1)]
    return graph, Scene(graph.frame.lat0, graph.frame.lon0, buildings, pois)
