"""Commands the decision layer sends to the vehicle, before and after the safety gate. Plain
dataclasses so the ROS node converts them to messages and back without logic of its own."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Union


@dataclass(frozen=True)
class Goal:
    """Go to a position. `alt_m` is metres above the home/take-off point (0 for ground vehicles);
    `heading_deg` clockwise from north; `speed_m_s` None means "as fast as the limits allow"."""

    lat: float
    lon: float
    alt_m: float = 0.0
    heading_deg: Optional[float] = None
    speed_m_s: Optional[float] = None

    def valid(self) -> bool:
        values = [self.lat, self.lon, self.alt_m, self.heading_deg, self.speed_m_s]
        if not all(v is None or math.isfinite(v) for v in values):
            return False
        # speed 0 never arrives: the vehicle sits in the control mode while everything reads "moving"
        return abs(self.lat) <= 90 and abs(self.lon) <= 180 and (self.speed_m_s is None or self.speed_m_s > 0)


@dataclass(frozen=True)
class Velocity:
    """Fly/drive at a velocity in the local ENU frame (REP 103), yaw rate positive counter-clockwise."""

    east_m_s: float
    north_m_s: float
    up_m_s: float = 0.0
    yaw_rate_deg_s: float = 0.0

    def valid(self) -> bool:
        return all(math.isfinite(v) for v in (self.east_m_s, self.north_m_s, self.up_m_s, self.yaw_rate_deg_s))


@dataclass(frozen=True)
class Hold:
    """Stop and keep position (hover for a multirotor, zero twist for a ground vehicle)."""


HOLD = Hold()
Command = Union[Goal, Velocity, Hold]
