"""map -> odom -> base_link from what a vehicle reports (REP 105).

Two feeds, one per kind of run:
- a vehicle bridge (walker, MAVLink, AirSim) reports its fix (WGS 84) and its odometry (ENU about
  the link's own origin: home, or the first position). `odom -> base_link` is the odometry as it
  is; `map -> odom` is the correction that puts base_link where the fix says in `map`:
  map->base (from the fix, oriented by the odometry's yaw) composed with the inverse of
  odom->base. It changes only when odometry and fix disagree (drift), in jumps, as REP 105 allows.
- a replay (streetview_replay) reports its pose in `map` directly: odom is map (identity) and
  odom -> base_link is that pose.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from cityseeker_ros.core.frames.geo_origin import MapFrame
from cityseeker_ros.core.frames.transforms import Quaternion, Transform, Vector, quaternion_yaw, yaw_quaternion


@dataclass(frozen=True)
class FrameNames:
    map: str = "map"
    odom: str = "odom"
    base_link: str = "base_link"

    def __post_init__(self) -> None:
        names = (self.map, self.odom, self.base_link)
        if len(set(names)) != 3 or not all(names):
            raise ValueError(f"frame names must be three different non-empty names, got {names}")


@dataclass(frozen=True)
class Fix:
    stamp_ns: int
    lat: float
    lon: float
    alt: float = 0.0


@dataclass(frozen=True)
class OdomPose:
    """base_link in the link's odometry frame."""

    stamp_ns: int
    position: Vector
    rotation: Quaternion


class VehicleFrames:
    """The newest map->odom and odom->base_link of one vehicle."""

    def __init__(self, map_frame: MapFrame, names: FrameNames = FrameNames(), match_tolerance_ns: int = 0) -> None:
        self.map_frame, self.names = map_frame, names
        self._tolerance_ns = int(match_tolerance_ns)
        self._fix: Optional[Fix] = None
        self._odom: Optional[OdomPose] = None
        self.map_to_odom: Optional[Transform] = None
        self.odom_to_base: Optional[Transform] = None

    # -- a vehicle bridge ----------------------------------------------------------------------

    def on_fix(self, fix: Fix) -> Optional[Transform]:
        """Keep the fix; a new map->odom when odometry of the same instant is known."""
        if not (math.isfinite(fix.lat) and math.isfinite(fix.lon)):
            return None  # no position: the last correction stays
        self._fix = fix
        return self._correct()

    def on_odometry(self, odom: OdomPose) -> Transform:
        self._odom = odom
        self.odom_to_base = Transform(self.names.odom, self.names.base_link, odom.position, odom.rotation,
                                      odom.stamp_ns)
        self._correct()
        return self.odom_to_base

    def _correct(self) -> Optional[Transform]:
        fix, odom = self._fix, self._odom
        if fix is None or odom is None or abs(fix.stamp_ns - odom.stamp_ns) > self._tolerance_ns:
            return None
        east, north, _ = self.map_frame.to_enu(fix.lat, fix.lon, fix.alt)
        # Height: the odometry's, which is about the link's home; the fix's datum differs per link.
        map_to_base = Transform(self.names.map, self.names.base_link, (east, north, odom.position[2]),
                                odom.rotation, odom.stamp_ns)
        odom_to_base = Transform(self.names.odom, self.names.base_link, odom.position, odom.rotation, odom.stamp_ns)
        # map->odom = map->base then base->odom
        corrected = map_to_base.then(odom_to_base.inverse())
        self.map_to_odom = Transform(self.names.map, self.names.odom, corrected.translation, corrected.rotation,
                                     odom.stamp_ns)
        return self.map_to_odom

    # -- a replay ------------------------------------------------------------------------------

    def on_map_pose(self, stamp_ns: int, east: float, north: float, yaw_rad: float) -> tuple[Transform, Transform]:
        """A pose already in `map` (the replay's): odom coincides with map."""
        self.map_to_odom = Transform(self.names.map, self.names.odom, stamp_ns=stamp_ns)
        self.odom_to_base = Transform(self.names.odom, self.names.base_link, (east, north, 0.0),
                                      yaw_quaternion(yaw_rad), stamp_ns)
        return self.map_to_odom, self.odom_to_base

    def base_in_map(self) -> Optional[Transform]:
        if self.map_to_odom is None or self.odom_to_base is None:
            return None
        return self.map_to_odom.then(self.odom_to_base)

    @staticmethod
    def yaw_of(rotation: Quaternion) -> float:
        return quaternion_yaw(rotation)
