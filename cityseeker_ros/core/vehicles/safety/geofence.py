"""Where a live vehicle may go: a circle or a polygon on the ground, and a ceiling. Goals outside
are refused rather than clipped, because a clipped goal is a place nobody decided on."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from shapely.geometry import LineString, Point, Polygon

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import LocalFrame, geodesic_m
from cityseeker_ros.core.vehicles.safety.bounds import SAFETY_BOUNDS, in_bounds, is_number, shown
from cityseeker_ros.core.vehicles.safety.codes import OK, Check, SafetyCode


class Geofence:
    """Base: subclasses say how far outside a point lies (0 inside, boundary included)."""

    kind = "geofence"

    def __init__(self, max_altitude_m: float) -> None:
        self.max_altitude_m = float(max_altitude_m)

    def outside_by_m(self, lat: float, lon: float) -> float:
        raise NotImplementedError

    def contains(self, lat: float, lon: float) -> bool:
        return self.outside_by_m(lat, lon) == 0.0

    def check_goal(self, lat: float, lon: float, alt_m: float = 0.0) -> Check:
        out = self.outside_by_m(lat, lon)
        if out > 0.0:
            return Check(False, SafetyCode.OUTSIDE_GEOFENCE,
                         f"goal ({lat:.6f}, {lon:.6f}) is {out:.1f} m outside the {self.kind} geofence")
        if alt_m > self.max_altitude_m:
            return Check(False, SafetyCode.ABOVE_MAX_ALTITUDE,
                         f"goal altitude {alt_m:.1f} m is above the {self.max_altitude_m:g} m ceiling")
        return OK

    def check_path(self, start: tuple[float, float], goal: tuple[float, float], step_m: float = 1.0) -> Check:
        """The straight line a vehicle flies from `start` to `goal` stays inside (sampled every
        `step_m`; subclasses may answer exactly). From outside, the path may only head back in: once
        inside, it must stay inside."""
        span = geodesic_m(*start, *goal)
        n = max(1, math.ceil(span / step_m))
        entered = False
        previous = self.outside_by_m(*start)
        for i in range(1, n + 1):
            f = i / n
            out = self.outside_by_m(start[0] + f * (goal[0] - start[0]), start[1] + f * (goal[1] - start[1]))
            if out == 0.0:
                entered = True
            elif entered or out > previous:
                return self._crossing(start, goal)
            previous = out
        return OK

    def _crossing(self, start: tuple[float, float], goal: tuple[float, float]) -> Check:
        return Check(False, SafetyCode.OUTSIDE_GEOFENCE,
                     f"the straight path from ({start[0]:.6f}, {start[1]:.6f}) to ({goal[0]:.6f}, {goal[1]:.6f}) "
                     f"leaves the {self.kind} geofence")


class CircleFence(Geofence):
    kind = "circle"

    def __init__(self, lat: float, lon: float, radius_m: float, max_altitude_m: float) -> None:
        super().__init__(max_altitude_m)
        self.lat, self.lon, self.radius_m = float(lat), float(lon), float(radius_m)

    def outside_by_m(self, lat: float, lon: float) -> float:
        return max(0.0, geodesic_m(self.lat, self.lon, lat, lon) - self.radius_m)


class PolygonFence(Geofence):
    """Vertices as (lat, lon), in either winding; tested in a local metric plane (exact to cm
    over a few km), so the distance outside is in metres."""

    kind = "polygon"

    def __init__(self, points: Sequence[tuple[float, float]], max_altitude_m: float) -> None:
        super().__init__(max_altitude_m)
        self.points = [(float(a), float(b)) for a, b in points]
        if len(self.points) < 3:
            raise ConfigError(f"geofence polygon needs at least 3 vertices, got {len(self.points)}")
        lats, lons = zip(*self.points)
        self.frame = LocalFrame(sum(lats) / len(lats), sum(lons) / len(lons))
        self.polygon = Polygon(self.frame.to_xy(lats, lons))
        if not self.polygon.is_valid or self.polygon.area <= 0:
            raise ConfigError("geofence polygon must not cross itself or have zero area")

    def outside_by_m(self, lat: float, lon: float) -> float:
        p = Point(self.frame.to_xy(lat, lon))
        return 0.0 if self.polygon.covers(p) else float(self.polygon.exterior.distance(p))

    def check_path(self, start: tuple[float, float], goal: tuple[float, float], step_m: float = 1.0) -> Check:
        """Exact: the segment against the polygon's edges. From outside, the part after it first
        enters must lie inside."""
        a, b = Point(self.frame.to_xy(*start)), Point(self.frame.to_xy(*goal))
        line = LineString([a, b])
        if self.polygon.covers(line):
            return OK
        if self.polygon.covers(a) or not self.polygon.covers(b):
            return self._crossing(start, goal)
        crossing = line.intersection(self.polygon.exterior)
        parts = getattr(crossing, "geoms", [crossing])
        entry = min(line.project(Point(c)) for part in parts for c in part.coords)
        rest = LineString([line.interpolate(entry), b])
        return OK if rest.length == 0 or self.polygon.buffer(1e-6).covers(rest) else self._crossing(start, goal)


class Unfenced(Geofence):
    """No fence: for teleport benchmarks without a safety config, where the simulator has no
    airframe to protect and the e-stop is the only guard left."""

    kind = "none"

    def __init__(self) -> None:
        super().__init__(math.inf)

    def outside_by_m(self, lat: float, lon: float) -> float:
        return 0.0

    def check_path(self, start: tuple[float, float], goal: tuple[float, float], step_m: float = 1.0) -> Check:
        return OK


def _latlon(value: Any, field: str) -> tuple[float, float]:
    ok = (isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2
          and all(is_number(v) for v in value))
    if not ok or abs(value[0]) > 90 or abs(value[1]) > 180:
        raise ConfigError(f"{field} must be [lat, lon] in degrees, got {shown(value)}")
    return float(value[0]), float(value[1])


def geofence_from_dict(d: Any, max_altitude_m: float, field: str = "geofence") -> Geofence:
    """`{"circle": {"center": [lat, lon], "radius_m": r}}` or `{"polygon": [[lat, lon], ...]}`;
    the radius, and each vertex's distance from the polygon's centre, within bounds.SAFETY_BOUNDS."""
    if not isinstance(d, Mapping) or len(d) != 1 or next(iter(d)) not in ("circle", "polygon"):
        raise ConfigError(f"{field} must have exactly one of 'circle' or 'polygon', got {shown(d)}")
    if "circle" in d:
        c = d["circle"]
        if not isinstance(c, Mapping) or set(c) != {"center", "radius_m"}:
            raise ConfigError(f"{field}.circle must have exactly 'center' and 'radius_m', got {shown(c)}")
        r = in_bounds(f"{field}.circle.radius_m", c["radius_m"], SAFETY_BOUNDS["geofence.circle.radius_m"])
        return CircleFence(*_latlon(c["center"], f"{field}.circle.center"), r, max_altitude_m)
    pts = d["polygon"]
    if not isinstance(pts, Sequence) or isinstance(pts, str) or len(pts) < 3:
        raise ConfigError(f"{field}.polygon must be a list of at least 3 [lat, lon] vertices, got {shown(pts)}")
    points = [_latlon(p, f"{field}.polygon[{i}]") for i, p in enumerate(pts)]
    _check_extent(points, f"{field}.polygon")
    try:
        return PolygonFence(points, max_altitude_m)
    except ConfigError as e:
        raise ConfigError(f"{field}.polygon: {e}") from None


def _check_extent(points: Sequence[tuple[float, float]], field: str) -> None:
    """Every vertex within the bound of the vertices' mean, as a circle's radius is: the polygon is
    tested in a plane around that mean, exact only over a few km. A polygon across the antimeridian
    has its mean half a world away, and is refused here too."""
    bound = SAFETY_BOUNDS["geofence.polygon"]
    lat0 = sum(p[0] for p in points) / len(points)
    lon0 = sum(p[1] for p in points) / len(points)
    for i, (lat, lon) in enumerate(points):
        d = geodesic_m(lat0, lon0, lat, lon)
        if d > bound.high:
            raise ConfigError(f"{field}[{i}] lies {d:.0f} m from the polygon's centre ({lat0:.6f}, {lon0:.6f}); "
                              f"every vertex must lie at most {bound.high:g} m from it ({bound.why})")
