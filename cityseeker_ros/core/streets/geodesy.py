"""WGS84 geodesy: every distance the metrics report is a geodesic in metres."""
from __future__ import annotations

import math

import numpy as np
from pyproj import Geod, Transformer

WGS84 = Geod(ellps="WGS84")


def mercator_units_to_metres(units: float, latitude_deg: float) -> float:
    """CitySeeker stores lengths in Web-Mercator units, which overstate metres by 1/cos(lat)."""
    return units * math.cos(math.radians(latitude_deg))


def metres_to_mercator_units(metres: float, latitude_deg: float) -> float:
    """Inverse of mercator_units_to_metres, for writing files in the release's units."""
    return metres / math.cos(math.radians(latitude_deg))


def geodesic_m(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    _, _, dist = WGS84.inv(lon1, lat1, lon2, lat2)
    return float(dist)


def pairwise_geodesic_m(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distances between every row of `a` and every row of `b` (rows are lat, lon)."""
    a = np.asarray(a, dtype=float).reshape(-1, 2)
    b = np.asarray(b, dtype=float).reshape(-1, 2)
    lat1 = np.repeat(a[:, 0], len(b))
    lon1 = np.repeat(a[:, 1], len(b))
    lat2 = np.tile(b[:, 0], len(a))
    lon2 = np.tile(b[:, 1], len(a))
    _, _, dist = WGS84.inv(lon1, lat1, lon2, lat2)
    return np.asarray(dist, dtype=float).reshape(len(a), len(b))


def path_length_m(latlon: np.ndarray) -> float:
    """Length of a polyline of (lat, lon) rows, summed hop by hop."""
    latlon = np.asarray(latlon, dtype=float).reshape(-1, 2)
    if len(latlon) < 2:
        return 0.0
    _, _, dist = WGS84.inv(latlon[:-1, 1], latlon[:-1, 0], latlon[1:, 1], latlon[1:, 0])
    return float(np.sum(dist))


def destination(lat: float, lon: float, azimuth_deg: float, distance_m: float) -> tuple[float, float]:
    lon2, lat2, _ = WGS84.fwd(lon, lat, azimuth_deg, distance_m)
    return float(lat2), float(lon2)


def initial_bearing_deg(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    az, _, _ = WGS84.inv(lon1, lat1, lon2, lat2)
    return float(az) % 360.0


def normalize_heading(deg: float) -> float:
    """Map any angle to [0, 360)."""
    h = float(deg) % 360.0
    return 0.0 if h == 360.0 else h


def circular_difference(a_deg: float, b_deg: float) -> float:
    """Signed a - b wrapped to (-180, 180]: positive means a lies clockwise (right) of b."""
    d = (float(a_deg) - float(b_deg)) % 360.0
    return d - 360.0 if d > 180.0 else d


class LocalFrame:
    """A metric east/north plane around one origin, for nearest-node queries."""

    def __init__(self, lat0: float, lon0: float) -> None:
        self.lat0, self.lon0 = lat0, lon0
        self._to_xy = Transformer.from_crs(
            "EPSG:4326",
            f"+proj=aeqd +lat_0={lat0} +lon_0={lon0} +ellps=WGS84 +units=m",
            always_xy=True,
        )

    def to_xy(self, lat, lon) -> np.ndarray:
        x, y = self._to_xy.transform(np.asarray(lon, dtype=float), np.asarray(lat, dtype=float))
        return np.stack([np.asarray(x, dtype=float), np.asarray(y, dtype=float)], axis=-1)
