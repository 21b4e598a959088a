"""What a world looks like: buildings and points of interest in a local metric frame.

The OSM builder and the HongKong_6 dresser write a Scene; the renderer reads one. Coordinates
are metres east (x) and north (y) of `origin` on a WGS84 azimuthal-equidistant plane
(geodesy.LocalFrame), so distances and bearings near the origin are true to well under a
centimetre over a city district.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from cityseeker_ros.core.streets.geodesy import LocalFrame

XY = tuple[float, float]


@dataclass(frozen=True)
class Building:
    """An extruded footprint. `footprint` is the outer ring without the closing point, in
    counter-clockwise order. `synthetic` marks boxes we invented (a kiosk behind a POI that
    OSM maps without a building, or a dressed facade), never real geometry; `inferred` ones
    (also synthetic) stand where landuse is built-up but the extract maps no footprint."""

    id: str
    footprint: tuple[XY, ...]
    height_m: float
    levels: int
    style: int  # palette/texture variant, chosen deterministically from the id
    synthetic: bool = False
    inferred: bool = False  # filled in along a street where landuse says built-up but OSM maps no footprint


@dataclass(frozen=True)
class Poi:
    """A point of interest on a street-facing facade.

    `poi_class` is the primary OSM tag as "key=value" (for example "amenity=cafe",
    "shop=convenience", "highway=bus_stop"); needs map to these and to brands.
    `anchor` is the point on the facade where the sign is centred and `normal_deg` the
    azimuth the sign faces (towards the street). `visible_nodes` are the street-graph nodes
    within the paper's 50 m visibility radius, nearest first. `signed` is False when the
    storefront carries no readable sign (OSM objects without a name, or a difficulty knob).
    """

    id: str
    name: str
    brand: Optional[str]
    poi_class: str
    tags: dict[str, str]
    lat: float
    lon: float
    anchor: XY
    normal_deg: float
    building_id: Optional[str]
    visible_nodes: tuple[str, ...]
    signed: bool = True

    @property
    def label(self) -> str:
        """The text a sign shows: the name, else the brand."""
        return self.name or (self.brand or "")


@dataclass(frozen=True)
class Road:
    """A way drawn on the ground at its width: every highway of the extract, not only the walkable
    graph (motorways, mapped sidewalks and tracks show in views too). `surface` is "asphalt",
    "paving" or "gravel"; `kerb` adds kerb stones and a sidewalk of `sidewalk_m` on both sides,
    else a grass verge of `verge_m`."""

    id: str
    kind: str  # the highway value
    width_m: float
    line: tuple[XY, ...]
    surface: str = "asphalt"
    kerb: bool = False
    sidewalk_m: float = 0.0
    verge_m: float = 0.0


GROUND_COVERS = ("grass", "field", "forest", "parking", "water", "sand", "paving", "bare",
                 "residential", "commercial", "retail", "industrial")


@dataclass(frozen=True)
class Area:
    """A landuse, natural or leisure polygon: what the ground looks like inside it (`cover`, one of
    GROUND_COVERS; the built-up ones also tell the builder where footprints are missing)."""

    id: str
    cover: str
    ring: tuple[XY, ...]


@dataclass(frozen=True)
class Tree:
    """A tree standing at (x, y): mapped (natural=tree, tree_row) or implied by landuse."""

    x: float
    y: float
    height_m: float


@dataclass(frozen=True)
class Landmark:
    """A named, tall or distinctive feature seen from afar (a tower, church, station, monument,
    one of the tallest buildings): what landmark goals are described by. `colour` is its
    identity, the colour the renderer paints its crown in (no two landmarks of a world share
    one), so a camera can tell landmarks apart; `visible_nodes` are the street-graph nodes from
    which its crown shows above the nearer buildings, nearest first."""

    id: str
    name: str
    kind: str  # "tower", "church", "station", "monument", "tall_building", ...
    lat: float
    lon: float
    xy: XY
    height_m: float
    width_m: float
    colour: tuple[int, int, int]
    building_id: Optional[str] = None
    visible_nodes: tuple[str, ...] = ()
    crown_m: float = 6.0  # the top `crown_m` of `height_m` is painted flat in `colour`


@dataclass
class Scene:
    origin_lat: float
    origin_lon: float
    buildings: list[Building] = field(default_factory=list)
    pois: list[Poi] = field(default_factory=list)
    landmarks: list[Landmark] = field(default_factory=list)
    roads: list[Road] = field(default_factory=list)
    areas: list[Area] = field(default_factory=list)
    trees: list[Tree] = field(default_factory=list)

    @property
    def frame(self) -> LocalFrame:
        return LocalFrame(self.origin_lat, self.origin_lon)

    def to_json(self) -> dict[str, Any]:
        """Older readers ignore the keys they do not know; trees are [x, y, height] triples (a
        wooded extract has tens of thousands)."""
        return {
            "origin": {"lat": self.origin_lat, "lon": self.origin_lon},
            "buildings": [asdict(b) for b in self.buildings],
            "pois": [asdict(p) for p in self.pois],
            "landmarks": [asdict(m) for m in self.landmarks],
            "roads": [asdict(r) for r in self.roads],
            "areas": [asdict(a) for a in self.areas],
            "trees": [[t.x, t.y, t.height_m] for t in self.trees],
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Scene:
        """Plain construction; world_folder validates the document and names bad fields. Keys
        added after the first format (landmarks, roads, areas, trees) may be absent."""
        buildings = [Building(**{**b, "footprint": _points(b["footprint"])}) for b in doc["buildings"]]
        pois = [Poi(**{**p, "anchor": tuple(p["anchor"]), "visible_nodes": tuple(p["visible_nodes"])})
                for p in doc["pois"]]
        landmarks = [Landmark(**{**m, "xy": tuple(m["xy"]), "colour": tuple(m["colour"]),
                                 "visible_nodes": tuple(m.get("visible_nodes", ()))})
                     for m in doc.get("landmarks", [])]
        roads = [Road(**{**r, "line": _points(r["line"])}) for r in doc.get("roads", [])]
        areas = [Area(**{**a, "ring": _points(a["ring"])}) for a in doc.get("areas", [])]
        trees = [Tree(float(t[0]), float(t[1]), float(t[2])) for t in doc.get("trees", [])]
        return cls(doc["origin"]["lat"], doc["origin"]["lon"], buildings, pois, landmarks, roads, areas, trees)


def _points(points: Any) -> tuple[XY, ...]:
    return tuple((p[0], p[1]) for p in points)
