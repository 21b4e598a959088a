"""Thin OSM data filled in: roads at their width, stand-in sizes, inferred buildings along the
streets of built-up landuse, and the share of start views with nothing above the horizon."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from shapely.geometry import LineString, Point, Polygon

from cityseeker_ros.core.worlds.fidelity import (
    ground_cover,
    horizon_share,
    is_ground_road,
    road,
    stand_in_size,
)
from cityseeker_ros.core.worlds.osm import build_osm_world

M_PER_DEG = 111_320.0


def thin_town(path: Path, landuse: bool) -> Path:
    """A 4x4 grid of residential streets 120 m apart (no footprints at all), optionally inside a
    landuse=residential polygon, as sparse early OSM maps a suburb."""
    nodes, ways = [], []
    nid = 1
    ids = {}
    for i in range(5):
        for j in range(5):
            ids[i, j] = nid
            nodes.append(f'<node id="{nid}" version="1" lat="{60 + j * 120 / M_PER_DEG:.7f}" '
                         f'lon="{25 + i * 120 / (M_PER_DEG * math.cos(math.radians(60))):.7f}"/>')
            nid += 1
    wid = 1
    for k in range(5):
        for refs in ([ids[i, k] for i in range(5)], [ids[k, j] for j in range(5)]):
            nds = "".join(f'<nd ref="{r}"/>' for r in refs)
            ways.append(f'<way id="{wid}" version="1">{nds}<tag k="highway" v="residential"/></way>')
            wid += 1
    if landuse:
        ring = [ids[0, 0], ids[4, 0], ids[4, 4], ids[0, 4], ids[0, 0]]
        nds = "".join(f'<nd ref="{r}"/>' for r in ring)
        ways.append(f'<way id="{wid}" version="1">{nds}<tag k="landuse" v="residential"/></way>')
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<osm version="0.6">\n' + "\n".join(nodes + ways)
                    + "\n</osm>\n")
    return path


def test_roads_take_their_width_from_width_then_lanes_then_class():
    line = ((0.0, 0.0), (10.0, 0.0))
    assert road(1, {"highway": "residential", "width": "7.5"}, line).width_m == 7.5
    assert road(1, {"highway": "primary", "lanes": "4"}, line).width_m == pytest.approx(4 * 3.2 + 0.5)
    assert road(1, {"highway": "secondary"}, line).width_m > road(1, {"highway": "service"}, line).width_m
    street = road(1, {"highway": "residential"}, line)
    assert street.kerb and street.sidewalk_m > 0 and street.surface == "asphalt"
    path = road(1, {"highway": "path", "surface": "gravel"}, line)
    assert not path.kerb and path.surface == "gravel"
    assert road(1, {"highway": "tertiary", "sidewalk": "separate"}, line).sidewalk_m == 0
    assert not is_ground_road({"highway": "primary", "tunnel": "yes"})
    assert ground_cover({"natural": "wood"}) == "forest" and ground_cover({"amenity": "parking"}) == "parking"
    assert ground_cover({"landuse": "residential"}) == "residential" and ground_cover({"shop": "bakery"}) is None


def test_a_poi_without_footprint_stands_in_a_building_of_its_kind():
    hospital, supermarket, kiosk, cafe = (stand_in_size(c) for c in (
        "amenity=hospital", "shop=supermarket", "shop=kiosk", "amenity=cafe"))
    assert hospital[0] * hospital[1] > supermarket[0] * supermarket[1] > cafe[0] * cafe[1] > kiosk[0] * kiosk[1]
    assert hospital[2] > 3 * kiosk[2]
    assert stand_in_size("amenity=vending_machine") == kiosk


def test_a_thin_extract_gets_inferred_buildings_and_a_filled_horizon(tmp_path):
    bare = build_osm_world(thin_town(tmp_path / "bare.osm", landuse=False), name="bare")
    town = build_osm_world(thin_town(tmp_path / "town.osm", landuse=True), name="town")
    assert not any(b.inferred for b in bare.scene.buildings)
    inferred = [b for b in town.scene.buildings if b.inferred]
    assert len(inferred) > 40 and all(b.synthetic for b in inferred)
    assert town.stats["buildings"]["inferred"] == len(inferred)
    assert len(town.scene.roads) == 10 and all(r.width_m == 6.0 for r in town.scene.roads)
    roads = [LineString(r.line) for r in town.scene.roads]
    for b in inferred:  # set back from the kerb, never on a street
        assert min(Polygon(b.footprint).distance(r) for r in roads) >= 3.0 + 2.0
    for t in town.scene.trees:
        assert min(Point(t.x, t.y).distance(r) for r in roads) > 3.0
    nodes = list(town.graph.nodes)
    before = horizon_share(bare.scene, bare.graph, nodes)
    after = horizon_share(town.scene, town.graph, nodes)
    assert before["share"] > 0.5, before
    assert after["share"] < 0.1, after
    again = build_osm_world(thin_town(tmp_path / "again.osm", landuse=True), name="town")
    assert again.scene.to_json() == town.scene.to_json()  # deterministic
