"""Landmark selection: kinds, identity colours, spread, line of sight, and their place in scene.json."""
from __future__ import annotations

import json

import numpy as np
import pytest

from cityseeker_ros.core.infra.errors import DataError
from cityseeker_ros.core.streets.geodesy import LocalFrame
from cityseeker_ros.core.worlds.folder import load_scene
from cityseeker_ros.core.worlds.landmarks import IDENTITY_COLOURS, landmark_kind, select_landmarks
from cityseeker_ros.core.worlds.scene import Building, Scene

FRAME = LocalFrame(0.0, 0.0)
M_PER_DEG = 110574.3


def _ring(x: float, y: float) -> list[list[tuple[float, float]]]:
    """A lat/lon point as a one-point ring, the way the OSM reader hands over nodes."""
    return [[(y / M_PER_DEG, x / 111319.5)]]


def _box(x0, y0, x1, y1):
    return ((x0, y0), (x1, y0), (x1, y1), (x0, y1))


def test_kinds_need_a_name_and_something_tall_or_distinctive():
    assert landmark_kind({"man_made": "tower", "name": "Tour"}) == "tower"
    assert landmark_kind({"man_made": "tower"}) is None  # unnamed
    assert landmark_kind({"amenity": "place_of_worship", "name": "St Paul"}) == "church"
    assert landmark_kind({"railway": "station", "name": "Central"}) == "station"
    assert landmark_kind({"historic": "memorial", "memorial": "plaque", "name": "x"}) is None
    assert landmark_kind({"historic": "monument", "name": "Obelisk"}) == "monument"
    assert landmark_kind({"shop": "bakery", "name": "Bread"}) is None


def test_selection_spreads_colours_and_sees_over_low_buildings_only():
    node_xy = np.array([[0.0, float(y)] for y in range(0, 200, 20)])
    node_ids = [f"n{i}" for i in range(len(node_xy))]
    wall = Building("wall", _box(-50, 300, 50, 310), 80.0, 20, 0)  # a tall slab north of every node
    scene = Scene(0.0, 0.0, [wall])
    raw = [
        ("node/1", {"man_made": "tower", "name": "Big Tower", "height": "60"}, _ring(100.0, 100.0)),
        ("node/2", {"man_made": "tower", "name": "Twin", "height": "50"}, _ring(120.0, 100.0)),  # too close
        ("node/3", {"amenity": "place_of_worship", "name": "St Anne"}, _ring(-150.0, 50.0)),
        ("node/4", {"historic": "monument", "name": "Hidden", "height": "20"}, _ring(0.0, 400.0)),  # behind wall
    ]
    got = select_landmarks(raw, scene, node_ids, node_xy)
    names = [m.name for m in got]
    assert names == ["Big Tower", "St Anne"]
    assert [m.colour for m in got] == list(IDENTITY_COLOURS[:2])
    assert len(set(IDENTITY_COLOURS)) == len(IDENTITY_COLOURS)
    tower = got[0]
    assert tower.visible_nodes[0] == "n5" and set(tower.visible_nodes) == set(node_ids)  # nearest first
    assert tower.height_m == 60.0 and tower.crown_m > 0


def test_a_building_in_front_hides_a_landmark_from_the_nodes_behind_it():
    node_xy = np.array([[0.0, 0.0], [0.0, 100.0]])
    block = Building("blk", _box(-20, 20, 20, 40), 30.0, 9, 0)
    scene = Scene(0.0, 0.0, [block])
    raw = [("node/1", {"man_made": "tower", "name": "T", "height": "25"}, _ring(0.0, 150.0))]
    got = select_landmarks(raw, scene, ["south", "north"], node_xy)
    assert got[0].visible_nodes == ("north",)


def test_scene_json_round_trips_landmarks_and_old_files_load(tmp_path, line_world):
    graph, scene = line_world
    raw = [("node/1", {"man_made": "tower", "name": "Tall", "height": "40"}, _ring(200.0, 30.0))]
    node_xy = FRAME.to_xy(*graph.latlon(list(graph.nodes)).T)
    scene.landmarks = select_landmarks(raw, scene, list(graph.nodes), node_xy)
    assert scene.landmarks
    assert Scene.from_json(json.loads(json.dumps(scene.to_json()))) == scene
    doc = scene.to_json()
    for key in ("landmarks", "roads", "areas", "trees"):
        del doc[key]
    (tmp_path / "scene.json").write_text(json.dumps(doc))
    assert load_scene(tmp_path).landmarks == []


@pytest.mark.parametrize("field, value, why", [
    ("colour", [300, 0, 0], "colour"), ("xy", [1.0], "xy"), ("height_m", "tall", "height_m"),
    ("visible_nodes", "n1", "visible_nodes")])
def test_bad_landmark_fields_are_named(tmp_path, line_world, field, value, why):
    _, scene = line_world
    doc = scene.to_json()
    doc["landmarks"] = [{"id": "node/1", "name": "T", "kind": "tower", "lat": 0.0, "lon": 0.0, "xy": [0.0, 0.0],
                         "height_m": 30.0, "width_m": 5.0, "colour": [1, 2, 3], field: value}]
    (tmp_path / "scene.json").write_text(json.dumps(doc))
    with pytest.raises(DataError) as err:
        load_scene(tmp_path)
    assert why in str(err.value) and "landmarks[0]" in str(err.value)
