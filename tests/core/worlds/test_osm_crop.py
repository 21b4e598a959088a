"""The --bbox crop: land use, roads and tree rows are kept by true overlap with the box and cut
at its edge, so land use that does not reach the box cannot change the town inside it."""
from __future__ import annotations

import time

import numpy as np
import pytest
from shapely.geometry import Polygon, box

from cityseeker_ros.core.worlds.osm import _read, build_osm_world, clip_line, clip_ring, crop, overlaps
from tests.core.worlds.test_osm import M_LAT, M_LON, _node, _way, town_xml

# The town's cross spans x -110..210 m, y -110..110 m (test_osm.town_xml); the box holds it.
BOX_M = (-150.0, -150.0, 250.0, 150.0)  # x0, y0, x1, y1 in metres
BBOX = (BOX_M[0] / M_LON, BOX_M[1] / M_LAT, BOX_M[2] / M_LON, BOX_M[3] / M_LAT)


def _ll(points_m: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """(x, y) metres to this module's (lat, lon) vertices."""
    return [(y / M_LAT, x / M_LON) for x, y in points_m]


def _m(ring_ll: list[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(lo * M_LON, la * M_LAT) for la, lo in ring_ll]


# Land use around the box that never enters it: a C of residential land whose bounding box holds
# the box and whose hole holds the town (no vertex inside, no overlap), residential land 5-15 km
# east, and a residential multipolygon relation 3 km north.
C_SHAPE = [(-2000, 50), (-2000, 2000), (2000, 2000), (2000, -2000), (-2000, -2000), (-2000, -50), (-400, -50),
           (-400, -400), (400, -400), (400, 400), (-400, 400), (-400, 50)]
FAR_EAST = [(5000, -5000), (15000, -5000), (15000, 5000), (5000, 5000)]
FAR_NORTH = [(-500, 3000), (500, 3000), (500, 3600), (-500, 3600)]
# A wood reaching into the box's south-east corner: cut to x 200..250, y -150..-100.
WOOD = [(200, -1000), (1000, -1000), (1000, -100), (200, -100)]


def _closed(first_id: int, points: list[tuple[float, float]]) -> tuple[list[str], list[int]]:
    ids = [first_id + i for i in range(len(points))]
    return [_node(i, x, y) for i, (x, y) in zip(ids, points)], ids + ids[:1]


def town_with(far_away: bool) -> str:
    """test_osm's town plus the wood; with `far_away`, the land use that never enters the box too."""
    lines = town_xml().splitlines()
    head, body, tail = lines[:2], lines[2:-1], lines[-1:]
    nodes = [line for line in body if line.startswith("<node")]
    ways = [line for line in body if line.startswith("<way")]
    wood_nodes, wood_ring = _closed(10_000, WOOD)
    nodes += wood_nodes
    ways.append(_way(9000, wood_ring, natural="wood"))
    relations = []
    if far_away:
        for first, (points, way_id, tags) in zip((11_000, 12_000, 13_000), (
                (C_SHAPE, 9001, {"landuse": "residential"}), (FAR_EAST, 9002, {"landuse": "residential"}),
                (FAR_NORTH, 9003, {}))):
            extra_nodes, ring = _closed(first, points)
            nodes += extra_nodes
            ways.append(_way(way_id, ring, **tags))
        relations.append('<relation id="9100" version="1"><member type="way" ref="9003" role="outer"/>'
                         '<tag k="type" v="multipolygon"/><tag k="landuse" v="residential"/></relation>')
    return "\n".join(head + nodes + ways + relations + tail) + "\n"


@pytest.fixture
def towns(tmp_path):
    out = {}
    for far_away in (False, True):
        path = tmp_path / f"town-{'far' if far_away else 'near'}.osm"
        path.write_text(town_with(far_away), encoding="utf-8")
        out[far_away] = path
    return out


def test_land_use_that_never_enters_the_box_does_not_change_the_town(towns):
    near = build_osm_world(towns[False], name="town", bbox=BBOX)
    far = build_osm_world(towns[True], name="town", bbox=BBOX)
    assert far.scene.to_json() == near.scene.to_json()
    assert far.graph.edges == near.graph.edges and far.graph.nodes == near.graph.nodes
    assert {k: v for k, v in far.stats.items() if k != "seconds"} == \
        {k: v for k, v in near.stats.items() if k != "seconds"}
    # The town is thin (two buildings, no built-up landuse), so buildings are inferred along its
    # streets; kept, the far residential land would switch that off, as the whole file shows.
    assert near.stats["buildings"]["inferred"] > 0
    whole = build_osm_world(towns[True], name="town")
    assert whole.stats["areas"].get("residential") == 3 and whole.stats["buildings"]["inferred"] == 0
    # The wood is cut at the box: only its 50 m x 50 m corner is left, inside the box.
    assert near.stats["areas"] == {"forest": 1}
    wood = near.scene.areas[0]
    frame = near.scene.frame
    x0, y0 = frame.to_xy(BBOX[1], BBOX[0])
    x1, y1 = frame.to_xy(BBOX[3], BBOX[2])
    assert Polygon(wood.ring).area == pytest.approx(50 * 50, rel=0.01)
    assert box(x0, y0, x1, y1).buffer(0.01).contains(Polygon(wood.ring))


def test_overlap_is_geometric_not_by_vertex_or_bounding_box():
    c_shape, covering = _ll(C_SHAPE + C_SHAPE[:1]), _ll([(-900, -900), (900, -900), (900, 900), (-900, 900),
                                                           (-900, -900)])
    assert not overlaps(c_shape, BBOX) and clip_ring(c_shape, BBOX) == []  # bounding box holds the box, no overlap
    assert overlaps(covering, BBOX)  # no vertex inside, covers it all: the whole box is kept
    (whole,) = clip_ring(covering, BBOX)
    assert Polygon(_m(whole)).area == pytest.approx((BOX_M[2] - BOX_M[0]) * (BOX_M[3] - BOX_M[1]), rel=1e-9)
    # A diagonal band crossing the box with every vertex outside it.
    band = _ll([(-1000, -1010), (-990, -1010), (1010, 990), (1000, 990), (-1000, -1010)])
    assert overlaps(band, BBOX)
    (cut,) = clip_ring(band, BBOX)
    expected = Polygon(_m(band)).intersection(box(*BOX_M)).area
    assert Polygon(_m(cut)).area == pytest.approx(expected, rel=1e-6)
    touching = _ll([(250, 0), (300, 0), (300, 50), (250, 50), (250, 0)])  # shares only the box's east edge
    assert overlaps(touching, BBOX) and clip_ring(touching, BBOX) == []  # touches; no ground to draw
    assert overlaps(_ll([(0, 0)]), BBOX) and not overlaps(_ll([(300, 0)]), BBOX)  # a node landmark
    bowtie = _ll([(-300, -300), (300, 300), (300, -300), (-300, 300), (-300, -300)])  # self-crossing
    pieces = clip_ring(bowtie, BBOX)
    assert pieces and all(box(*BOX_M).buffer(0.01).contains(Polygon(_m(p))) for p in pieces)


def test_lines_are_cut_at_the_box_edge_into_runs():
    across = _ll([(-1000, 0), (1000, 0)])  # no vertex inside
    (run,) = clip_line(across, BBOX)
    assert [round(x, 6) for x, _ in _m(run)] == [BOX_M[0], BOX_M[2]]
    out_and_back = _ll([(0, 0), (0, 500), (100, 500), (100, 0)])  # leaves north and comes back
    runs = clip_line(out_and_back, BBOX)
    assert len(runs) == 2 and [round(y, 6) for _, y in _m(runs[0])] == [0.0, BOX_M[3]]
    assert clip_line(_ll([(1000, 0), (2000, 0)]), BBOX) == []
    inside = _ll([(0, 0), (10, 10)])
    assert clip_line(inside, BBOX) == [inside]


def test_a_road_cut_into_pieces_gives_each_piece_its_own_id(tmp_path):
    lines = town_xml().splitlines()
    body = lines[2:-1]
    nodes = [line for line in body if line.startswith("<node")] + [
        _node(20_000 + i, x, y) for i, (x, y) in enumerate([(-100, 100), (-100, 400), (100, 400), (100, 100)])]
    ways = [line for line in body if line.startswith("<way")] + [
        _way(9500, [20_000, 20_001, 20_002, 20_003], highway="track")]
    path = tmp_path / "loop.osm"
    path.write_text("\n".join(lines[:2] + nodes + ways + lines[-1:]) + "\n", encoding="utf-8")
    world = build_osm_world(path, name="loop", bbox=BBOX)
    pieces = sorted(r.id for r in world.scene.roads if r.id.startswith("way/9500"))
    assert pieces == ["way/9500", "way/9500/1"]
    frame = world.scene.frame
    _, top = frame.to_xy(BBOX[3], 0.0)
    assert all(max(y for _, y in r.line) <= top + 0.01 for r in world.scene.roads)


def _comb(teeth: int, points_per_tooth: int) -> list[tuple[float, float]]:
    """Residential land north of y=100 m with `teeth` slots up to y=400 m cut into it, so that the
    box's north edge (y=150 m) crosses it 2 x `teeth` times: `teeth` + 1 pieces inside the box,
    from teeth x points_per_tooth vertices."""
    width = (BOX_M[2] - BOX_M[0]) / teeth
    pts: list[tuple[float, float]] = []
    for k in range(teeth):
        x = BOX_M[0] + k * width
        up = np.linspace(100.0, 400.0, points_per_tooth // 2)
        pts += [(x + 0.1 * width, y) for y in up] + [(x + 0.5 * width, y) for y in up[::-1]]
    return pts + [(BOX_M[2], 100.0), (BOX_M[2], 1000.0), (BOX_M[0], 1000.0), (BOX_M[0], 100.0), pts[0]]


def test_the_worst_ring_is_cropped_in_bounded_time(tmp_path):
    """200,000 vertices in one ring crossing the box 1,000 times and 200,000 more far away: the
    whole read and crop stays within seconds (the crop is linear in vertices, pieces are not
    re-tested against each other)."""
    comb = _comb(teeth=1000, points_per_tooth=200)
    far = [(5000 + 4000 * np.cos(t), 4000 * np.sin(t)) for t in np.linspace(0, 2 * np.pi, 200_000)[:-1]]
    lines = town_xml().splitlines()
    body = lines[2:-1]
    comb_nodes, comb_ring = _closed(100_000, comb[:-1])
    far_nodes, far_ring = _closed(400_000, far)
    nodes = [line for line in body if line.startswith("<node")] + comb_nodes + far_nodes
    ways = [line for line in body if line.startswith("<way")] + [
        _way(9600, comb_ring, landuse="residential"), _way(9601, far_ring, landuse="residential")]
    path = tmp_path / "worst.osm"
    path.write_text("\n".join(lines[:2] + nodes + ways + lines[-1:]) + "\n", encoding="utf-8")
    started = time.perf_counter()
    whole = _read(path, None)
    read_s = time.perf_counter() - started
    started = time.perf_counter()
    cropped = crop(whole, BBOX)
    crop_s = time.perf_counter() - started
    comb_pieces = [a for a in cropped.areas if a[0].split("/")[:2] == ["way", "9600"]]
    assert len(comb_pieces) == 1001 and not any(a[0].startswith("way/9601") for a in cropped.areas)
    print(f"read {read_s:.2f} s, crop {crop_s:.2f} s")
    assert crop_s < 5.0 and read_s < 60.0, (read_s, crop_s)
    started = time.perf_counter()
    world = build_osm_world(path, name="worst", bbox=BBOX)
    build_s = time.perf_counter() - started
    print(f"build {build_s:.2f} s")
    assert 0 < world.stats["areas"]["residential"] <= 1001
    assert build_s < read_s + 60.0
