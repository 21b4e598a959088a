"""Where the AirSim map sits on the Earth: the bridge between graph nodes (lat/lon, compass
headings) and AirSim's metric NED world.

AirSim's Unreal world is flat and knows nothing of geography, so config states which point the
AirSim origin (the PlayerStart) is, and how far the map's +x axis is turned from true north. The
plane is the project's azimuthal-equidistant frame around that point (geodesy.LocalFrame):
distances and bearings from the origin are exact geodesics, so a node 2 km away lands within
millimetres of where its geodesic says. Height is plain altitude difference (a flat Unreal world
has no curvature to follow).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import LocalFrame, destination
from cityseeker_ros.core.vehicles.airsim.frames import (
    Quaternion,
    ned_frd_to_enu_flu,
    ned_to_enu,
    ned_yaw_to_compass,
    quat_from_yaw,
    quat_multiply,
    wrap_pi,
)

_FIELDS = {"lat": "latitude of the AirSim origin, degrees",
           "lon": "longitude of the AirSim origin, degrees",
           "alt": "altitude of the AirSim origin, metres (default 0)",
           "yaw_offset_deg": "compass bearing of the AirSim map's +x axis, degrees (default 0: x points north)"}


@dataclass(frozen=True)
class Anchor:
    """The AirSim origin on the Earth and the map's rotation from true north."""

    lat: float
    lon: float
    alt: float = 0.0
    yaw_offset_deg: float = 0.0

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> Anchor:
        """Validate a config mapping; every error names the field and what it should hold."""
        if not isinstance(config, Mapping):
            raise ConfigError(f"airsim anchor must be a mapping with fields {', '.join(_FIELDS)}; got {config!r}")
        unknown = sorted(set(config) - set(_FIELDS))
        if unknown:
            raise ConfigError(f"airsim anchor: unknown field(s) {', '.join(map(str, unknown))}; "
                              f"known: {', '.join(_FIELDS)}")
        values: dict[str, float] = {}
        for name, what in _FIELDS.items():
            if name not in config:
                if name in ("lat", "lon"):
                    raise ConfigError(f"airsim anchor: field '{name}' is required ({what})")
                continue
            value = config[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"airsim anchor: field '{name}' must be a finite number ({what}); got {value!r}")
            values[name] = float(value)
        if not -90.0 <= values["lat"] <= 90.0:
            raise ConfigError(f"airsim anchor: field 'lat' must lie in [-90, 90]; got {values['lat']}")
        if not -180.0 <= values["lon"] <= 180.0:
            raise ConfigError(f"airsim anchor: field 'lon' must lie in [-180, 180]; got {values['lon']}")
        return cls(**values)

    @cached_property
    def _frame(self) -> LocalFrame:
        return LocalFrame(self.lat, self.lon)

    @cached_property
    def _map_from_true(self) -> np.ndarray:
        """Rotation taking true-north NED vectors into AirSim map NED (about the down axis)."""
        c, s = math.cos(math.radians(self.yaw_offset_deg)), math.sin(math.radians(self.yaw_offset_deg))
        return np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])

    # -- positions -----------------------------------------------------------------------------

    def geo_to_airsim(self, lat: float, lon: float, alt: float) -> np.ndarray:
        """(lat, lon, alt) -> AirSim map NED metres (x, y, z)."""
        east, north = self._frame.to_xy(lat, lon)
        return self._map_from_true @ np.array([north, east, self.alt - float(alt)])

    def airsim_to_geo(self, x: float, y: float, z: float) -> tuple[float, float, float]:
        """AirSim map NED metres -> (lat, lon, alt): the geodesic from the origin, inverted."""
        north, east, down = self.airsim_to_ned([x, y, z])
        lat, lon = destination(self.lat, self.lon, math.degrees(math.atan2(east, north)), math.hypot(north, east))
        return lat, lon, self.alt - float(down)

    def airsim_to_ned(self, v) -> np.ndarray:
        """AirSim map NED vectors (..., 3) -> true-north NED at the origin (positions or velocities)."""
        return np.asarray(v, dtype=float) @ self._map_from_true  # row vectors: v @ R == (R.T @ v.T).T

    def airsim_to_enu(self, v) -> np.ndarray:
        """AirSim map NED vectors -> ROS ENU metres (east, north, up of the origin)."""
        return ned_to_enu(self.airsim_to_ned(v))

    # -- headings ------------------------------------------------------------------------------

    def heading_to_yaw(self, heading_deg: float) -> float:
        """Compass heading (degrees clockwise from true north) -> AirSim yaw (radians, map frame)."""
        return wrap_pi(math.radians(float(heading_deg) - self.yaw_offset_deg))

    def yaw_to_heading(self, yaw_rad: float) -> float:
        """AirSim yaw (map frame) -> compass heading in [0, 360)."""
        return ned_yaw_to_compass(float(yaw_rad) + math.radians(self.yaw_offset_deg))

    def airsim_quat_to_enu(self, q: Quaternion) -> Quaternion:
        """AirSim attitude (FRD in map NED) -> ROS attitude (FLU in true ENU)."""
        true_ned = quat_multiply(quat_from_yaw(math.radians(self.yaw_offset_deg)), Quaternion(*q))
        return ned_frd_to_enu_flu(true_ned)
