"""A synthetic OSM extract built to provoke each check of the question generator, for the
project's own builder (`build_world`) to turn into a world: one 300 m north-south high street
(x = 0, y -150..150 m, x east and y north in metres) with a block of shops on each side, and

- a moved board: Hotel Alpina's node stands 24 m inside a 120 m long building, so the builder
  draws its board on the street wall; by the map Fermata Posta is east of the hotel (70 degrees),
  by the boards north-east (45 degrees);
- two car parks: Parcheggio Centro beside the street, and an unnamed car park area 75 m west of
  the street that no street node sees (the builder leaves it out of the scene; only the raw map
  has it);
- far-away land use (`far_away=True`): residential land 3 km north and a second "Parcheggio
  Centro" 2.5 km north, outside the town's bbox.
"""
from __future__ import annotations

import math
from pathlib import Path

M_LON = 6378137.0 * math.pi / 180.0
M_LAT = 110574.2727
BLOCK_M = 30.0
BLOCKS = 10  # per side, from y = -150 m
TOWN_BBOX = (-300.0 / M_LON, -250.0 / M_LAT, 300.0 / M_LON, 250.0 / M_LAT)
EAST = ["Cafe Uno:amenity=cafe", "Farmacia Centrale:amenity=pharmacy", "Banca Rossa:amenity=bank",
        "Libreria Dante:shop=books", "Panificio Bruno:shop=bakery", "Bar Centrale:amenity=bar",
        "Trattoria Sole:amenity=restaurant", "Gelateria Luna:amenity=ice_cream", "Conad:shop=supermarket",
        "Moda Bella:shop=clothes"]
WEST = ["Osteria Vecchia:amenity=restaurant", "Farmacia Nord:amenity=pharmacy", "Banca Verde:amenity=bank",
        "Hotel Alpina:tourism=hotel", "", "", "", "Bar Sport:amenity=bar", "Fiori Belli:shop=florist",
        "Scarpe Rosse:shop=shoes"]  # the hotel's building fills blocks 3-6
HOTEL_BLOCKS = (3, 7)
PARK_Y = -105.0  # the car parks stand level with Farmacia Centrale, across the street


def _node(nid: int, x: float, y: float, **tags: str) -> str:
    body = "".join(f'<tag k="{k.replace("__", ":")}" v="{v}"/>' for k, v in tags.items())
    return f'<node id="{nid}" version="1" lat="{y / M_LAT:.9f}" lon="{x / M_LON:.9f}">{body}</node>'


def _way(wid: int, refs: list[int], **tags: str) -> str:
    nds = "".join(f'<nd ref="{r}"/>' for r in refs)
    body = "".join(f'<tag k="{k.replace("__", ":")}" v="{v}"/>' for k, v in tags.items())
    return f'<way id="{wid}" version="1">{nds}{body}</way>'


def _ring(first: int, x0: float, y0: float, x1: float, y1: float) -> tuple[list[str], list[int]]:
    corners = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    ids = [first + i for i in range(4)]
    return [_node(i, x, y) for i, (x, y) in zip(ids, corners)], ids + ids[:1]


def block_y(k: int) -> float:
    """The middle of block k (0 southmost) along the street."""
    return -150.0 + BLOCK_M * k + BLOCK_M / 2.0


def hotel_xy() -> tuple[float, float]:
    return -30.0, 0.0


def bus_stop_xy() -> tuple[float, float]:
    return 3.0, 12.0


def extract_xml(far_away: bool = False) -> str:
    nodes: list[str] = []
    ways: list[str] = []
    street = []
    for i, y in enumerate(range(-150, 151, 30)):
        nodes.append(_node(1 + i, 0.0, float(y)))
        street.append(1 + i)
    ways.append(_way(1, street, highway="residential", name="Via Roma"))
    poi_id, ring_id, way_id = 5000, 1000, 100
    for side, shops in ((1.0, EAST), (-1.0, WEST)):
        for k, shop in enumerate(shops):
            if not shop:
                continue
            name, cls = shop.split(":")
            key, value = cls.split("=")
            y0, y1 = block_y(k) - 13.0, block_y(k) + 13.0
            depth = 20.0
            if name == "Hotel Alpina":  # deep and long: its only wall facing a street is the street's
                y0, y1, depth = -150.0 + BLOCK_M * HOTEL_BLOCKS[0], -150.0 + BLOCK_M * HOTEL_BLOCKS[1], 45.0
            xs = sorted((side * 6.0, side * depth))
            ring_nodes, ring = _ring(ring_id, xs[0], y0, xs[1], y1)
            nodes += ring_nodes
            ways.append(_way(way_id, ring, building="yes", building__levels=str(3 + k % 3),
                             height=f"{3.1 + 3.2 * (2 + k % 3):.1f}"))
            ring_id, way_id = ring_id + 10, way_id + 1
            x, y = (hotel_xy() if name == "Hotel Alpina" else (side * 7.0, block_y(k)))
            nodes.append(_node(poi_id, x, y, **{key: value, "name": name}))
            poi_id += 1
    nodes.append(_node(poi_id, *bus_stop_xy(), highway="bus_stop", name="Fermata Posta"))
    nodes.append(_node(poi_id + 1, -4.0, PARK_Y + 4.0, amenity="parking", name="Parcheggio Centro"))
    park_nodes, park_ring = _ring(9000, -85.0, PARK_Y - 10.0, -70.0, PARK_Y + 10.0)
    nodes += park_nodes
    ways.append(_way(900, park_ring, amenity="parking"))  # unnamed, seen from no street node
    if far_away:
        land_nodes, land_ring = _ring(9100, -500.0, 3000.0, 500.0, 3600.0)
        nodes += land_nodes
        ways.append(_way(901, land_ring, landuse="residential"))
        nodes.append(_node(poi_id + 2, 0.0, 2500.0, amenity="parking", name="Parcheggio Centro"))
    body = "\n".join(nodes + ways)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<osm version="0.6" generator="test">\n{body}\n</osm>\n'


def write_extract(path: Path, far_away: bool = False) -> Path:
    path.write_text(extract_xml(far_away), encoding="utf-8")
    return path
