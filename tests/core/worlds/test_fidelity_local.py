"""The thin-data fallback decided stretch by stretch: a town core with built-up landuse far away
must not keep a thinly mapped street strip empty, and open landuse beside the strip stays open."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
from shapely.geometry import LineString, Polygon

from cityseeker_ros.core.worlds.fidelity import (
    SETTLED_M,
    SETTLED_MIN,
    THIN_BUILDINGS_PER_KM2,
    UNMAPPED_M,
    horizon_share,
    implied_zones,
    unmapped_frontage,
)
from cityseeker_ros.core.worlds.osm import build_osm_world
from cityseeker_ros.core.worlds.scene import Area, Building, Road

M_PER_DEG = 111_320.0
LAT0, LON0 = 60.0, 25.0
STRIP_Y, STRIP_X = 150.0, (1500.0, 1900.0)
# Open land along the strip (x range, north or south of it, tags): none of it may get a building.
# (Meadow and park imply scattered trees, which fill views by themselves: kept small here.)
OPEN = [((1500.0, 1750.0), +1, {"landuse": "farmland"}), ((1750.0, 1800.0), +1, {"landuse": "meadow"}),
        ((1800.0, 1900.0), +1, {"natural": "water"}), ((1500.0, 1540.0), -1, {"leisure": "park"})]
EVIDENCE_Y = STRIP_Y - 70.0  # the strip's only mapped houses stand 70 m back from it (over UNMAPPED_M)


class _Osm:
    """A tiny OSM XML writer in local metres (x east, y north of LAT0, LON0)."""

    def __init__(self) -> None:
        self.nodes: list[str] = []
        self.ways: list[str] = []
        self.next_id = 1

    def node(self, x: float, y: float) -> int:
        nid = self.next_id
        self.next_id += 1
        lon = LON0 + x / (M_PER_DEG * math.cos(math.radians(LAT0)))
        self.nodes.append(f'<node id="{nid}" version="1" lat="{LAT0 + y / M_PER_DEG:.7f}" lon="{lon:.7f}"/>')
        return nid

    def way(self, refs: list[int], tags: dict[str, str]) -> None:
        nds = "".join(f'<nd ref="{r}"/>' for r in refs)
        kv = "".join(f'<tag k="{k}" v="{v}"/>' for k, v in tags.items())
        self.ways.append(f'<way id="{self.next_id}" version="1">{nds}{kv}</way>')
        self.next_id += 1

    def ring(self, corners: list[tuple[float, float]], tags: dict[str, str]) -> None:
        refs = [self.node(x, y) for x, y in corners]
        self.way(refs + refs[:1], tags)

    def write(self, path: Path) -> Path:
        path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<osm version="0.6">\n'
                        + "\n".join(self.nodes + self.ways) + "\n</osm>\n")
        return path


def town_and_strip(path: Path, core: bool = True) -> Path:
    """A built-up town core (a 4x4 street grid 100 m apart inside landuse=residential, with
    mapped houses) and, 1.2 km east along a footpath, a 400 m residential street whose only
    mapped buildings are six houses 70 m back from it, with farmland, meadow and water on its
    north side and a park on part of its south side. `core=False` leaves the core out."""
    osm = _Osm()
    if core:
        grid = {(i, j): osm.node(i * 100.0, j * 100.0) for i in range(4) for j in range(4)}
        for k in range(4):
            osm.way([grid[i, k] for i in range(4)], {"highway": "residential"})
            osm.way([grid[k, j] for j in range(4)], {"highway": "residential"})
        osm.ring([(-20, -20), (320, -20), (320, 320), (-20, 320)], {"landuse": "residential"})
        for i in range(3):
            for j in range(3):
                x, y = i * 100.0 + 30.0, j * 100.0 + 30.0
                osm.ring([(x, y), (x + 14, y), (x + 14, y + 12), (x, y + 12)], {"building": "house"})
        path_nodes = [grid[3, 1]] + [osm.node(x, STRIP_Y) for x in (600.0, 1000.0, 1400.0)]
    strip = [osm.node(x, STRIP_Y) for x in np.arange(STRIP_X[0], STRIP_X[1] + 1.0, 50.0)]
    if core:
        osm.way(path_nodes + strip[:1], {"highway": "footway"})
    osm.way(strip, {"highway": "residential"})
    for (x0, x1), side, tags in OPEN:
        y0, y1 = (STRIP_Y + 8.0, STRIP_Y + 200.0) if side > 0 else (STRIP_Y - 200.0, STRIP_Y - 8.0)
        osm.ring([(x0, y0), (x1, y0), (x1, y1), (x0, y1)], tags)
    for k in range(6):
        x = 1640.0 + 25.0 * k
        osm.ring([(x, EVIDENCE_Y - 4), (x + 8, EVIDENCE_Y - 4), (x + 8, EVIDENCE_Y + 4), (x, EVIDENCE_Y + 4)],
                 {"building": "house", "building:levels": "1"})
    return osm.write(path)


def _strip_nodes(world) -> list[str]:
    ids = list(world.graph.nodes)
    latlon = world.graph.latlon(ids)
    x = (latlon[:, 1] - LON0) * M_PER_DEG * math.cos(math.radians(LAT0))
    return [n for n, xi in zip(ids, x) if xi >= STRIP_X[0] - 1.0]


def _where(world, building: Building) -> tuple[float, float]:
    """The building's centre in the extract's own metres (x east, y north of LAT0, LON0)."""
    centre = np.mean(building.footprint, axis=0) - world.scene.frame.to_xy(LAT0, LON0)
    return float(centre[0]), float(centre[1])


def _on_strip(world, building: Building) -> bool:
    return _where(world, building)[0] >= STRIP_X[0] - 60.0


def test_a_thin_strip_far_from_a_built_up_core_gets_buildings_and_open_land_stays_open(tmp_path):
    world = build_osm_world(town_and_strip(tmp_path / "town.osm"), name="town")
    scene = world.scene
    # The old all-or-nothing rule: built-up landuse anywhere switches the fallback off everywhere.
    assert implied_zones(scene.areas, np.array([[0.0, 0.0]]), scene.roads, np.zeros((1, 2)), 0) == []
    strip_built = [b for b in scene.buildings if b.inferred and _on_strip(world, b)]
    assert len(strip_built) >= 8, len(strip_built)
    nodes = _strip_nodes(world)
    assert len(nodes) >= 15
    before = dataclasses.replace(scene, buildings=[b for b in scene.buildings if b not in strip_built])
    empty_before = horizon_share(before, world.graph, nodes)
    empty_after = horizon_share(scene, world.graph, nodes)
    assert empty_before["share"] > 0.5, empty_before
    assert empty_after["share"] < 0.1, empty_after
    # Open land use stays open: no inferred building touches the farmland, meadow, water or park.
    open_covers = {"field", "grass", "water"}
    open_land = [Polygon(a.ring) for a in scene.areas if a.cover in open_covers]
    assert len(open_land) == len(OPEN)
    assert not any(Polygon(b.footprint).intersects(p) for b in strip_built for p in open_land)
    # ... so along the strip they stand only on its south side, east of the park.
    roads = [r for r in scene.roads if r.kind == "residential"]
    strip_line = max((LineString(r.line) for r in roads), key=lambda g: g.bounds[0])
    y_strip = strip_line.coords[0][1]
    assert all(np.mean(b.footprint, axis=0)[1] < y_strip for b in strip_built)
    # Never within 6 m of a mapped house, never on the street.
    houses = [Polygon(b.footprint) for b in scene.buildings if not b.synthetic]
    assert all(Polygon(b.footprint).distance(h) >= 6.0 for b in strip_built for h in houses)
    assert all(Polygon(b.footprint).distance(strip_line) >= 3.0 + 2.0 for b in strip_built)


def test_the_strip_gets_the_same_buildings_with_or_without_the_core(tmp_path):
    """Local means local: what the core maps changes nothing 1.2 km away."""
    with_core = build_osm_world(town_and_strip(tmp_path / "a.osm"), name="a")
    alone = build_osm_world(town_and_strip(tmp_path / "b.osm", core=False), name="b")

    def strip(world) -> list[tuple[str, tuple[float, float]]]:  # (place along the strip and side, centre)
        return sorted((b.id.split("/", 3)[3], _where(world, b)) for b in world.scene.buildings
                      if b.inferred and _on_strip(world, b))

    a, b = strip(with_core), strip(alone)
    assert a and [k[0] for k in a] == [k[0] for k in b]
    # The same places: the two worlds' frames (centred on their own graphs) differ by under a metre here.
    assert all(math.dist(p[1], q[1]) < 1.5 for p, q in zip(a, b))
    again = build_osm_world(town_and_strip(tmp_path / "c.osm"), name="a")
    assert again.scene.to_json() == with_core.scene.to_json()  # deterministic


def _street(y: float = 0.0, kind: str = "residential") -> Road:
    return Road("way/1", kind, 6.0, ((0.0, y), (400.0, y)), "asphalt", True, 2.0, 1.5)


def _house(k: int, x: float, y: float) -> Building:
    return Building(f"way/{100 + k}", ((x, y), (x + 8, y), (x + 8, y + 8), (x, y + 8)), 4.2, 1, 0)


def test_unmapped_frontage_needs_a_settled_place_and_a_blank_frontage():
    street = _street()
    far_houses = [_house(k, 150.0 + 20 * k, -120.0) for k in range(SETTLED_MIN)]
    assert unmapped_frontage([], [street], far_houses[:-1]) == []  # one short of settled: nothing
    zones = unmapped_frontage([], [street], far_houses)
    assert zones and all(z.intersects(LineString(street.line)) for z in zones)
    # Houses within UNMAPPED_M of the whole street: the map covers its frontage; nothing added.
    close = [_house(k, 50.0 * k, UNMAPPED_M - 15.0) for k in range(9)]
    assert unmapped_frontage([], [street], close) == []
    # Built-up landuse beside it: the ordinary fallback fills it, not this one.
    zone = Area("way/9", "residential", ((-10.0, -60.0), (410.0, -60.0), (410.0, 60.0), (-10.0, 60.0)))
    assert unmapped_frontage([zone], [street], far_houses) == []
    # Buildings mapped as densely as the thin floor around it: the blank is taken to be really open.
    dense = [_house(k, 10.0 * (k % 40), -70.0 - 12.0 * (k // 40)) for k in range(80)]
    assert len(dense) > THIN_BUILDINGS_PER_KM2 * math.pi * (SETTLED_M / 1000) ** 2
    assert unmapped_frontage([], [street], dense) == []
    assert unmapped_frontage([], [street], dense[:30])  # the same place with fewer of them mapped
    # Places count as evidence as well as buildings; a path or a motorway has no frontage.
    places = np.array([[200.0 + 10 * k, -150.0] for k in range(SETTLED_MIN)])
    assert unmapped_frontage([], [street], [], places)
    assert unmapped_frontage([], [_street(kind="footway"), _street(kind="motorway")], far_houses) == []


def test_unmapped_frontage_never_covers_mapped_open_ground():
    street = _street()
    houses = [_house(k, 150.0 + 20 * k, -120.0) for k in range(SETTLED_MIN)]
    field = Area("way/7", "field", ((-10.0, 4.0), (410.0, 4.0), (410.0, 90.0), (-10.0, 90.0)))
    water = Area("way/8", "water", ((-10.0, -90.0), (200.0, -90.0), (200.0, -4.0), (-10.0, -4.0)))
    zones = unmapped_frontage([field, water], [street], houses)
    assert zones
    for z in zones:
        assert z.intersection(Polygon(field.ring)).area < 1e-6
        assert z.intersection(Polygon(water.ring)).area < 1e-6
    # Off the carriageway, only the south side east of the water is left.
    carriageway = LineString(street.line).buffer(4.0 + 1e-6, cap_style="flat")
    assert min(z.difference(carriageway).bounds[0] for z in zones) >= 200.0 - 1e-6
