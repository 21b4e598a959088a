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
    OSM maps without a building, or a dressed facade), never real geometry."""

    id: str
    footprint: tuple[XY, ...]
    height_m: float
    levels: int
    style: int  # palette/texture variant, chosen deterministically from the id
    synthetic: bool = False


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


@dataclass
class Scene:
    origin_lat: float
    origin_lon: float
    buildings: list[Building] = field(default_factory=list)
    pois: list[Poi] = field(default_factory=list)
    landmarks: list[Landmark] = field(default_factory=list)

    @property
    def frame(self) -> LocalFrame:
        return LocalFrame(self.origin_lat, self.origin_lon)

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": {"lat": self.origin_lat, "lon": self.origin_lon},
            "buildings": [asdict(b) for b in self.buildings],
            "pois": [asdict(p) for p in self.pois],
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Scene:
        """Plain construction; world_folder validates the document and names bad fields."""
        buildings = [Building(**{**b, "footprint": tuple(tuple(p) for p in b["footprint"])})
                     for b in doc["buildings"]]
        pois = [Poi(**{**p, "anchor": tuple(p["anchor"]), "visible_nodes": tuple(p["visible_nodes"])})
                for p in doc["pois"]]
        return cls(doc["origin"]["lat"], doc["origin"]["lon"], buildings, pois)
