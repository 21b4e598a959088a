"""The offline map of a world folder: the graph, streets, buildings, fence and target in the
`map` plane the vehicle and the frames node use, from a hand-made grid world whose scene has
its own origin (so a shift between the two planes would show)."""
from __future__ import annotations

import json

import pytest

from cityseeker_ros.core.console.world_map import node_positions, world_map
from cityseeker_ros.core.frames.geo_origin import MapFrame
from cityseeker_ros.core.frames.scene_geometry import target_area
from cityseeker_ros.core.streets.geodesy import LocalFrame
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.vehicles.safety.geofence import CircleFence, PolygonFence, Unfenced
from cityseeker_ros.core.worlds.scene import Building, Road, Scene
from tests.core.tasks.landmarks.gridtown import LAT0, LON0, grid_graph, node_id, point, write_world_folder


@pytest.fixture
def grid(tmp_path):
    graph = grid_graph(n=4)
    frame = LocalFrame(LAT0, LON0)
    corner = [tuple(float(v) for v in frame.to_xy(*point(e, n))) for e, n in ((5, 5), (15, 5), (15, 15), (5, 15))]
    road = tuple(tuple(float(v) for v in frame.to_xy(*point(e, 0.0))) for e in (0.0, 60.0))
    scene = Scene(LAT0, LON0, [Building("way/7", tuple(corner), 12.0, 4, 0)], [], [],
                  [Road("way/8", "residential", 6.0, road)])
    folder = write_world_folder(tmp_path / "grid", graph, scene, {"tasks": []})
    return folder, graph


def test_the_graph_streets_and_buildings_in_the_map_plane(grid):
    folder, graph = grid
    doc = json.loads(json.dumps(world_map(folder)))  # what the page receives
    map_frame = MapFrame.of_graph(graph)
    nodes = node_positions(doc)
    assert len(nodes) == 16 and len(doc["graph"]["edges"]) == 2 * 24  # a 4 x 4 grid has 24 streets
    for nid in (node_id(0, 0), node_id(3, 2)):
        x, y, _ = map_frame.to_enu(graph.nodes[nid].lat, graph.nodes[nid].lon)
        assert nodes[nid] == pytest.approx((x, y), abs=0.06)
    x, y, _ = map_frame.to_enu(*point(5.0, 5.0))  # the building's first corner, from the scene's own plane
    assert doc["buildings"][0][:2] == pytest.approx([x, y], abs=0.06)
    assert doc["streets"] == [{"kind": "residential", "width_m": 6.0, "xy": pytest.approx(
        [*map_frame.to_enu(*point(0, 0))[:2], *map_frame.to_enu(*point(60, 0))[:2]], abs=0.06)}]
    lo_x, lo_y, hi_x, hi_y = doc["bounds"]
    assert lo_x <= nodes[node_id(0, 0)][0] and hi_y >= nodes[node_id(3, 3)][1]
    assert doc["geofence"] is None and doc["target"] is None and doc["credit"]


def test_the_fence_and_a_tasks_target_area(grid):
    folder, graph = grid
    map_frame = MapFrame.of_graph(graph)
    centre = graph.nodes[node_id(1, 1)]
    circle = world_map(folder, CircleFence(centre.lat, centre.lon, 50.0, 30.0))["geofence"]
    cx, cy, _ = map_frame.to_enu(centre.lat, centre.lon)
    ring = list(zip(circle["xy"][::2], circle["xy"][1::2]))
    assert circle["kind"] == "circle" and all(((x - cx) ** 2 + (y - cy) ** 2) ** 0.5 == pytest.approx(50, abs=0.1)
                                              for x, y in ring)
    corners = [point(-10, -10), point(70, -10), point(70, 70), point(-10, 70)]
    poly = world_map(folder, PolygonFence(corners, 30.0))["geofence"]
    assert poly["kind"] == "polygon" and len(poly["xy"]) == 2 * 5  # closed
    assert poly["xy"][:2] == pytest.approx(list(map_frame.to_enu(*corners[0])[:2]), abs=0.06)
    assert world_map(folder, Unfenced())["geofence"] is None
    world = World("gridtown", graph, [], {"cafe": frozenset({node_id(3, 3), node_id(2, 3)})})
    episode = Episode("e1", "gridtown", "Basic POI", "easy", "I am thirsty", "cafe", node_id(0, 0), node_id(3, 3),
                      (node_id(0, 0), node_id(3, 3)))
    target = world_map(folder, target=target_area(world, episode, map_frame, 15.0))["target"]
    tx, ty, _ = map_frame.to_enu(graph.nodes[node_id(3, 3)].lat, graph.nodes[node_id(3, 3)].lon)
    assert target["xy"] == pytest.approx([tx, ty], abs=0.06) and target["radius_m"] == 15.0
    assert len(target["satisfying"]) == 2  # the other node of the same request
