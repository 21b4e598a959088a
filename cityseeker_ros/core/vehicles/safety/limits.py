"""Speed and altitude clamps. Over-fast commands are slowed rather than refused: the decision
(where to go) stays valid, only how fast is the gate's business."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional

from cityseeker_ros.core.vehicles.safety.commands import Goal, Velocity


@dataclass(frozen=True)
class Limits:
    max_speed_m_s: float  # horizontal
    max_vertical_speed_m_s: float
    max_altitude_m: float

    def clamp_goal(self, goal: Goal) -> tuple[Goal, Optional[str]]:
        """Goal speed capped at max_speed_m_s (None becomes the cap, so the vehicle is always told
        a limit). Goal altitude is not clamped here: the geofence refuses goals above the ceiling."""
        if goal.speed_m_s is None:
            return replace(goal, speed_m_s=self.max_speed_m_s), None
        if goal.speed_m_s > self.max_speed_m_s:
            return (replace(goal, speed_m_s=self.max_speed_m_s),
                    f"speed {goal.speed_m_s:.2f} m/s clamped to {self.max_speed_m_s:g} m/s")
        return goal, None

    def clamp_velocity(self, v: Velocity, altitude_m: Optional[float] = None) -> tuple[Velocity, Optional[str]]:
        """Horizontal speed scaled down to its cap keeping the direction; vertical capped; no climbing
        at or above the ceiling when the vehicle's altitude is known."""
        notes = []
        east, north, up = v.east_m_s, v.north_m_s, v.up_m_s
        horizontal = math.hypot(east, north)
        if horizontal > self.max_speed_m_s:
            scale = self.max_speed_m_s / horizontal
            east, north = east * scale, north * scale
            notes.append(f"speed {horizontal:.2f} m/s clamped to {self.max_speed_m_s:g} m/s")
        if abs(up) > self.max_vertical_speed_m_s:
            notes.append(f"vertical speed {up:.2f} m/s clamped to {self.max_vertical_speed_m_s:g} m/s")
            up = math.copysign(self.max_vertical_speed_m_s, up)
        if altitude_m is not None and altitude_m >= self.max_altitude_m and up > 0:
            notes.append(f"climb stopped at {altitude_m:.1f} m (ceiling {self.max_altitude_m:g} m)")
            up = 0.0
        if not notes:
            return v, None
        return replace(v, east_m_s=east, north_m_s=north, up_m_s=up), "; ".join(notes)
