"""A tiny world folder with a scene, so views can be rendered: a street n0-n1-n2-n3 running east
along the equator every 20 m, a side street from n1 north to m1, shop blocks along both.

    m1
    |
    n0 - n1 - n2 - n3
"""
from __future__ import annotations

from pathlib import Path

import pytest

from cityseeker_ros.core.sensing.localisation import GraphLocaliser
from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.worlds.folder import write_world
from cityseeker_ros.core.worlds.scene import Building, Poi, Scene
from cityseeker_ros.core.worlds.tasks import TaskSet, TaskSettings, WorldTask

SPACING_M = 20.0


def tiny_graph() -> StreetGraph:
    pos = {f"n{i}": destination(0.0, 0.0, 90.0, i * SPACING_M) for i in range(4)}
    pos["m1"] = destination(*pos["n1"], 0.0, SPACING_M)
    walk = {"n0": (90.0,), "n1": (270.0, 90.0, 0.0), "n2": (270.0, 90.0), "n3": (270.0,), "m1": (180.0,)}
    nodes = [Node(k, lat, lon, 90.0, walk[k]) for k, (lat, lon) in pos.items()]
    edges = []
    for a, b, az in (("n0", "n1", 90.0), ("n1", "n2", 90.0), ("n2", "n3", 90.0), ("n1", "m1", 0.0)):
        edges += [Edge(a, b, az, SPACING_M), Edge(b, a, (az + 180.0) % 360.0, SPACING_M)]
    return StreetGraph(nodes, edges, name="tinyville")


def _box(x0: float, y0: float, x1: float, y1: float) -> tuple:
    return ((x0, y0), (x1, y0), (x1, y1), (x0, y1))


def write_tiny_world(folder: Path) -> Path:
    graph = tiny_graph()
    f = graph.frame
    buildings = [Building("s0", _box(-15, -20, 45, -6), 12.0, 4, 1), Building("s1", _box(45, -20, 80, -6), 15.0, 5, 2),
                 Building("w0", _box(-15, 6, 14, 30), 14.0, 4, 3), Building("e0", _box(26, 6, 80, 30), 10.0, 3, 4)]

    def poi(pid: str, name: str, cls: str, x: float, y: float, normal: float, building: str) -> Poi:
        lat, lon = f.lat0 + y / 110574.3, f.lon0 + x / 111319.5  # near enough on the equator
        return Poi(pid, name, None, cls, {cls.split("=")[0]: cls.split("=")[1]}, lat, lon, (x, y), normal,
                   building, ())

    pois = [poi("cafe", "Cafe Uno", "amenity=cafe", 40.0, 6.0, 180.0, "e0"),
            poi("pharmacy", "Farmacia", "amenity=pharmacy", 10.0, -6.0, 0.0, "s0")]
    scene = Scene(f.lat0, f.lon0, buildings, pois)
    # One hand-made test task: a world folder without any is refused when loaded.
    task = WorldTask("tinyville-0000", "question1", "pharmacy", "Find a pharmacy.", "easy", "n3", "n1", "pharmacy",
                ("n3", "n2", "n1"), 2 * SPACING_M, split="test")
    return write_world(folder, name="tinyville", graph=graph, scene=scene,
                       tasks=TaskSet(TaskSettings(), [task], {"pharmacy": ["n1"]}), metadata={})


@pytest.fixture(scope="session")
def tiny_world_dir(tmp_path_factory) -> Path:
    return write_tiny_world(tmp_path_factory.mktemp("tinyville") / "tinyville")


@pytest.fixture
def tiny_world(tiny_world_dir):
    from cityseeker_ros.core.datasets import load_dataset

    return load_dataset(tiny_world_dir)[0]


def localise_at(graph: StreetGraph, node: str, heading: float | None = 90.0, stamp: float | None = None):
    """A fresh localiser's answer for a fix exactly on `node`."""
    n = graph.nodes[node]
    return GraphLocaliser(graph).update(n.lat, n.lon, heading, stamp)
