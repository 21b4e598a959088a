"""Speed, yaw-rate and altitude clamps. Over-fast commands are slowed rather than refused: the
decision (where to go) stays valid, only how fast is the gate's business."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional

from cityseeker_ros.core.vehicles.safety.commands import Goal, Velocity

VERTICAL_LOOKAHEAD_S = 0.5  # a vertical velocity stops this long before it would pass the floor or ceiling


def known(value: Optional[float]) -> bool:
    return value is not None and math.isfinite(value)


@dataclass(frozen=True)
class Limits:
    max_speed_m_s: float  # horizontal
    max_vertical_speed_m_s: float
    max_altitude_m: float
    max_yaw_rate_deg_s: float = 45.0
    min_altitude_m: float = -5.0  # the floor: goals below it (metres above home) are refused

    def clamp_goal(self, goal: Goal, start_alt_m: Optional[float] = None,
                   horizontal_m: Optional[float] = None) -> tuple[Goal, Optional[str]]:
        """Goal speed capped at max_speed_m_s (None becomes the cap, so the vehicle is always told
        a limit), and lower on a climb or descent: a vehicle flies the straight line at that speed, so
        its vertical part must stay under max_vertical_speed_m_s. With the start unknown, the lower
        of the two caps. Goal altitude is not clamped here: the gate refuses goals above the ceiling."""
        cap, why = self.max_speed_m_s, f"{self.max_speed_m_s:g} m/s"
        if known(start_alt_m) and horizontal_m is not None:
            climb = abs(goal.alt_m - start_alt_m)
            if climb > 0:
                along = self.max_vertical_speed_m_s * math.hypot(horizontal_m, climb) / climb
                if along < cap:
                    cap, why = along, f"{along:.2f} m/s (vertical {self.max_vertical_speed_m_s:g} m/s)"
        elif self.max_vertical_speed_m_s < cap:
            cap, why = self.max_vertical_speed_m_s, f"{cap:g} m/s (vertical limit: start altitude unknown)"
        if goal.speed_m_s is None:
            return replace(goal, speed_m_s=cap), None
        if goal.speed_m_s > cap:
            return replace(goal, speed_m_s=cap), f"speed {goal.speed_m_s:.2f} m/s clamped to {why}"
        return goal, None

    def clamp_velocity(self, v: Velocity, altitude_m: Optional[float] = None) -> tuple[Velocity, Optional[str]]:
        """Horizontal speed scaled down to its cap keeping the direction; vertical and yaw rate capped;
        no climb that would pass the ceiling, nor descent that would pass the floor, within
        VERTICAL_LOOKAHEAD_S (the altitude is read at 10 Hz and a setpoint keeps streaming until the
        next one: stopping only once past the line let a 1 m/s descent overshoot), and neither while
        the altitude is unknown (None or NaN)."""
        notes = []
        east, north, up, yaw = v.east_m_s, v.north_m_s, v.up_m_s, v.yaw_rate_deg_s
        horizontal = math.hypot(east, north)
        if horizontal > self.max_speed_m_s:
            scale = self.max_speed_m_s / horizontal
            east, north = east * scale, north * scale
            notes.append(f"speed {horizontal:.2f} m/s clamped to {self.max_speed_m_s:g} m/s")
        if abs(up) > self.max_vertical_speed_m_s:
            notes.append(f"vertical speed {up:.2f} m/s clamped to {self.max_vertical_speed_m_s:g} m/s")
            up = math.copysign(self.max_vertical_speed_m_s, up)
        if abs(yaw) > self.max_yaw_rate_deg_s:
            notes.append(f"yaw rate {abs(yaw):.1f} deg/s clamped to {self.max_yaw_rate_deg_s:g} deg/s")
            yaw = math.copysign(self.max_yaw_rate_deg_s, yaw)
        if up != 0 and not known(altitude_m):
            notes.append(f"{'climb' if up > 0 else 'descent'} stopped: altitude unknown")
            up = 0.0
        elif up > 0 and altitude_m + up * VERTICAL_LOOKAHEAD_S >= self.max_altitude_m:
            notes.append(f"climb stopped at {altitude_m:.1f} m (ceiling {self.max_altitude_m:g} m)")
            up = 0.0
        elif up < 0 and altitude_m + up * VERTICAL_LOOKAHEAD_S <= self.min_altitude_m:
            notes.append(f"descent stopped at {altitude_m:.1f} m (floor {self.min_altitude_m:g} m)")
            up = 0.0
        if not notes:
            return v, None
        return replace(v, east_m_s=east, north_m_s=north, up_m_s=up, yaw_rate_deg_s=yaw), "; ".join(notes)
