"""How the vehicle gets to a graph node and faces a heading: teleport or fly, one interface.

Teleport (simSetVehiclePose) is what benchmarks want: the same node always yields the same
pose, as CityEQA does. Fly (moveToPosition + yaw) exercises the real flight controller, for
demos and closed-loop runs; its speed and yaw rate are capped by config.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.registry import Registry
from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.client import AirSimLink
from cityseeker_ros.core.vehicles.airsim.frames import wrap_pi


@dataclass(frozen=True)
class GeoPose:
    """A geographic pose: altitude in metres (same datum as the anchor), compass heading in degrees."""

    lat: float
    lon: float
    alt: float
    heading_deg: float


def _positive(mode: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < math.inf:
        raise ConfigError(f"airsim motion '{mode}': '{name}' must be a positive number; got {value!r}")
    return float(value)


class MotionMode(ABC):
    """Moves the vehicle to goals given geographically; the anchor turns them into AirSim NED."""

    name: str = ""

    def __init__(self, link: AirSimLink, anchor: Anchor, altitude_m: float | None = None) -> None:
        """altitude_m, when set, replaces every goal's altitude with that height above the anchor:
        street-level views want one eye height whatever the node's terrain says."""
        if altitude_m is not None and (isinstance(altitude_m, bool) or not isinstance(altitude_m, (int, float))
                                       or not math.isfinite(altitude_m)):
            raise ConfigError(f"airsim motion '{self.name}': 'altitude_m' must be a number; got {altitude_m!r}")
        self.link, self.anchor = link, anchor
        self.altitude_m = None if altitude_m is None else float(altitude_m)

    def target(self, goal: GeoPose) -> tuple[np.ndarray, float]:
        """The goal as (map-NED position, AirSim yaw in radians)."""
        alt = goal.alt if self.altitude_m is None else self.anchor.alt + self.altitude_m
        return self.anchor.geo_to_airsim(goal.lat, goal.lon, alt), self.anchor.heading_to_yaw(goal.heading_deg)

    @abstractmethod
    def go_to(self, goal: GeoPose) -> None:
        """Arrive at the goal's position facing its heading (blocks until there)."""

    @abstractmethod
    def turn_to(self, heading_deg: float) -> None:
        """Face a compass heading without leaving the spot."""

    def describe(self) -> dict[str, Any]:
        return {"motion": self.name, "altitude_m": self.altitude_m}


MotionFactory = type[MotionMode]
MOTION_MODES: Registry[MotionFactory] = Registry("airsim motion mode")


def make_motion_mode(name: str, link: AirSimLink, anchor: Anchor, **params: Any) -> MotionMode:
    return MOTION_MODES.create(name, link, anchor, **params)


@MOTION_MODES.register("teleport")
class TeleportMotion(MotionMode):
    """simSetVehiclePose: exact and repeatable; collisions ignored so a pose inside a tree still sets."""

    name = "teleport"

    def __init__(self, link: AirSimLink, anchor: Anchor, altitude_m: float | None = None) -> None:
        super().__init__(link, anchor, altitude_m)
        self._xyz: np.ndarray | None = None

    def go_to(self, goal: GeoPose) -> None:
        xyz, yaw = self.target(goal)
        self.link.set_pose(xyz, yaw)
        self._xyz = xyz

    def turn_to(self, heading_deg: float) -> None:
        xyz = self._xyz if self._xyz is not None else self.link.pose_ned()[0]
        self.link.set_pose(xyz, self.anchor.heading_to_yaw(heading_deg))
        self._xyz = xyz


@MOTION_MODES.register("fly")
class FlyMotion(MotionMode):
    """Through the flight controller: fly at up to max_speed_mps holding yaw, then turn at up to
    max_yaw_rate_dps (rotateToYaw alone turns at the controller's own rate, so a rate-limited turn
    comes first and rotateToYaw closes the last degrees)."""

    name = "fly"

    def __init__(self, link: AirSimLink, anchor: Anchor, altitude_m: float | None = None,
                 max_speed_mps: float = 3.0, max_yaw_rate_dps: float = 45.0, yaw_margin_deg: float = 2.0,
                 timeout_s: float = 120.0) -> None:
        super().__init__(link, anchor, altitude_m)
        self.max_speed_mps = _positive(self.name, "max_speed_mps", max_speed_mps)
        self.max_yaw_rate_dps = _positive(self.name, "max_yaw_rate_dps", max_yaw_rate_dps)
        self.yaw_margin_deg = _positive(self.name, "yaw_margin_deg", yaw_margin_deg)
        self.timeout_s = _positive(self.name, "timeout_s", timeout_s)
        self._armed = False

    def _arm(self) -> None:
        if not self._armed:
            self.link.take_control()
            self._armed = True

    def go_to(self, goal: GeoPose) -> None:
        self._arm()
        xyz, _ = self.target(goal)
        self.link.move_to(xyz, self.max_speed_mps, self.timeout_s)
        self.turn_to(goal.heading_deg)

    def turn_to(self, heading_deg: float) -> None:
        self._arm()
        yaw = self.anchor.heading_to_yaw(heading_deg)
        delta_deg = math.degrees(wrap_pi(yaw - self.link.pose_ned()[1]))
        if abs(delta_deg) > self.yaw_margin_deg:
            rate = math.copysign(self.max_yaw_rate_dps, delta_deg)
            self.link.rotate_at_rate(rate, abs(delta_deg) / self.max_yaw_rate_dps)
        self.link.rotate_to(yaw, self.timeout_s, self.yaw_margin_deg)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "max_speed_mps": self.max_speed_mps,
                "max_yaw_rate_dps": self.max_yaw_rate_dps, "yaw_margin_deg": self.yaw_margin_deg}
