"""The `map` frame: east/north/up metres about the world's geographic origin (REP 103, REP 105).

The origin is the street graph's own (StreetGraph.frame), so a graph node and the vehicle land on
the same metres: the replay's pose topics, the graph markers and the transforms share one plane."""
from __future__ import annotations

import math
from dataclasses import dataclass

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import LocalFrame


@dataclass(frozen=True)
class GeoOrigin:
    """WGS 84 latitude and longitude in degrees, altitude in metres (0 where unknown)."""

    lat: float
    lon: float
    alt: float = 0.0

    def __post_init__(self) -> None:
        for name, value, limit in (("lat", self.lat, 90.0), ("lon", self.lon, 180.0)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or abs(value) > limit:
                raise ConfigError(f"geographic origin {name} must be a number within ±{limit:g}°, got {value!r}")
        if isinstance(self.alt, bool) or not isinstance(self.alt, (int, float)) or not math.isfinite(self.alt):
            raise ConfigError(f"geographic origin alt must be a finite number of metres, got {self.alt!r}")


class MapFrame:
    """ENU metres about one GeoOrigin, with the same projection as the street graph's frame."""

    def __init__(self, origin: GeoOrigin) -> None:
        self.origin = origin
        self._plane = LocalFrame(origin.lat, origin.lon)

    @classmethod
    def of_graph(cls, graph) -> MapFrame:
        """The map frame of a street graph: its own origin, so node positions agree to the millimetre."""
        return cls(GeoOrigin(float(graph.frame.lat0), float(graph.frame.lon0)))

    def to_enu(self, lat: float, lon: float, alt: float = 0.0) -> tuple[float, float, float]:
        """East, north and up of a WGS 84 point; a non-finite coordinate is refused (a fix without
        a position must not put the vehicle at the origin)."""
        if not all(math.isfinite(float(v)) for v in (lat, lon)):
            raise ValueError(f"no position: lat {lat!r}, lon {lon!r}")
        east, north = (float(v) for v in self._plane.to_xy(lat, lon))
        up = float(alt) - self.origin.alt if math.isfinite(float(alt)) else 0.0
        return east, north, up
