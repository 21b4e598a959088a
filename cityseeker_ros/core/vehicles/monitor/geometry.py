"""The monitor's own fence geometry: a circle by geodesic distance, a polygon by ray casting and edge
distance in a local plane. Written apart from the bridge's geofence (shapely) on purpose: an oracle
that shared the bridge's geometry would share its bugs."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cityseeker_ros.core.streets.geodesy import geodesic_m

_A = 6378137.0  # WGS84 semi-major axis, m
_E2 = 6.69437999014e-3  # WGS84 first eccentricity squared


def _radii(lat_deg: float) -> tuple[float, float]:
    """Metres per radian north (meridian) and east (prime vertical, before the cos(lat) factor)."""
    s = math.sin(math.radians(lat_deg))
    w = math.sqrt(1.0 - _E2 * s * s)
    return _A * (1.0 - _E2) / w ** 3, _A / w


def offset(lat: float, lon: float, east_m: float, north_m: float) -> tuple[float, float]:
    """The point `east_m`, `north_m` away (a local flat step: exact to millimetres over tens of metres)."""
    m, n = _radii(lat)
    return (lat + math.degrees(north_m / m),
            lon + math.degrees(east_m / (n * max(math.cos(math.radians(lat)), 1e-9))))


def distance_m(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    return geodesic_m(lat1, lon1, lat2, lon2)


@dataclass(frozen=True)
class Circle:
    lat: float
    lon: float
    radius_m: float

    def outside_by_m(self, lat: float, lon: float) -> float:
        return max(0.0, distance_m(self.lat, self.lon, lat, lon) - self.radius_m)

    def describe(self) -> str:
        return f"circle of {self.radius_m:g} m around ({self.lat:.6f}, {self.lon:.6f})"


@dataclass(frozen=True)
class Polygon:
    vertices: tuple[tuple[float, float], ...]  # (lat, lon), either winding

    def __post_init__(self) -> None:
        lats = [v[0] for v in self.vertices]
        lons = [v[1] for v in self.vertices]
        object.__setattr__(self, "_origin", (sum(lats) / len(lats), sum(lons) / len(lons)))
        object.__setattr__(self, "_xy", tuple(self._plane(*v) for v in self.vertices))

    def _plane(self, lat: float, lon: float) -> tuple[float, float]:
        lat0, lon0 = self._origin  # type: ignore[attr-defined]
        m, n = _radii(lat0)
        return math.radians(lon - lon0) * n * math.cos(math.radians(lat0)), math.radians(lat - lat0) * m

    def outside_by_m(self, lat: float, lon: float) -> float:
        x, y = self._plane(lat, lon)
        xy = self._xy  # type: ignore[attr-defined]
        edges = list(zip(xy, xy[1:] + xy[:1]))
        inside = False
        for (x1, y1), (x2, y2) in edges:
            if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
                inside = not inside
        nearest = min(_segment_distance(x, y, a, b) for a, b in edges)
        return 0.0 if inside or nearest < 1e-6 else nearest

    def describe(self) -> str:
        return f"polygon of {len(self.vertices)} vertices"


def _segment_distance(x: float, y: float, a: tuple[float, float], b: tuple[float, float]) -> float:
    dx, dy = b[0] - a[0], b[1] - a[1]
    length2 = dx * dx + dy * dy
    f = 0.0 if length2 == 0 else max(0.0, min(1.0, ((x - a[0]) * dx + (y - a[1]) * dy) / length2))
    return math.hypot(x - (a[0] + f * dx), y - (a[1] + f * dy))


Area = Circle | Polygon


def polygon(points: Sequence[tuple[float, float]]) -> Polygon:
    return Polygon(tuple((float(a), float(b)) for a, b in points))
