"""The one place a command passes on its way to the vehicle. The decision layer is slow and may
stall; the flight loop calls `tick` at its own rate (e.g. 20 Hz) and publishes whatever comes out,
HOLD included, with the code and reason, so an operator always sees why the vehicle stopped.

Checks in order: e-stop (latching), supervisor heartbeat, decision watchdog, then the command
itself: finite; a goal's straight path from where the vehicle is inside the geofence, its
altitude between the floor and the ceiling, its speed clamped (lower on a climb); a velocity
fenced too (where it leads in VELOCITY_LOOKAHEAD_S must be inside, or closer to it), no climb
while the altitude is unknown, speeds and yaw rate clamped."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Optional

from cityseeker_ros.core.streets.geodesy import destination, geodesic_m
from cityseeker_ros.core.vehicles.safety.codes import Check, SafetyCode
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Command, Goal, Hold, Velocity
from cityseeker_ros.core.vehicles.safety.config import SafetyConfig
from cityseeker_ros.core.vehicles.safety.estop import EStop
from cityseeker_ros.core.vehicles.safety.geofence import Geofence, Unfenced
from cityseeker_ros.core.vehicles.safety.limits import Limits, known
from cityseeker_ros.core.vehicles.safety.watchdog import Clock, DecisionWatchdog, Heartbeat

# Where a velocity is fenced: the point it reaches in this long (the bridge re-checks it every tick).
VELOCITY_LOOKAHEAD_S = 1.0
# (lat, lon, alt above home); any part may be None (or NaN) while the vehicle has not said.
Position = tuple[Optional[float], Optional[float], Optional[float]]


@dataclass(frozen=True)
class Verdict:
    """What to send (the command as allowed, or HOLD) and why."""

    command: Command
    code: SafetyCode
    reason: str

    @property
    def moving(self) -> bool:
        return not isinstance(self.command, Hold)


class SafetyGate:
    def __init__(self, geofence: Geofence, limits: Limits, watchdog: DecisionWatchdog,
                 heartbeat: Optional[Heartbeat] = None, estop: Optional[EStop] = None,
                 clock: Clock = time.monotonic) -> None:
        self.geofence, self.limits, self.watchdog, self.heartbeat = geofence, limits, watchdog, heartbeat
        self.estop = estop if estop is not None else EStop()
        self.clock = clock
        self.latest: Command = HOLD  # the last decided command, re-filtered on every tick

    @classmethod
    def from_config(cls, config: SafetyConfig, clock: Clock = time.monotonic,
                    estop: Optional[EStop] = None) -> SafetyGate:
        """`estop` with a LatchFile keeps the latch across restarts; a bare EStop() is in memory only."""
        heartbeat = None if config.heartbeat_timeout_s is None else Heartbeat(config.heartbeat_timeout_s, clock)
        return cls(config.geofence, config.limits, DecisionWatchdog(config.decision_timeout_s, clock),
                   heartbeat, estop if estop is not None else EStop(), clock)

    def decision(self, command: Command, now: Optional[float] = None,
                 position: Optional[Position] = None) -> Verdict:
        """A decision arrived: feed the watchdog, remember it for `tick`, and say what it becomes."""
        now = self.clock() if now is None else now
        self.watchdog.feed(now)
        self.latest = command
        return self.filter(command, now, position=position)

    def beat(self, now: Optional[float] = None) -> None:
        """The supervisor's heartbeat."""
        if self.heartbeat is not None:
            self.heartbeat.feed(now)

    def tick(self, now: Optional[float] = None, altitude_m: Optional[float] = None,
             position: Optional[Position] = None) -> Verdict:
        """What the vehicle should do right now: the latest decision, filtered."""
        return self.filter(self.latest, now, altitude_m, position)

    def filter(self, command: Command, now: Optional[float] = None, altitude_m: Optional[float] = None,
               position: Optional[Position] = None) -> Verdict:
        """`position` is where the vehicle is (its altitude wins over `altitude_m`, kept for callers
        that know only the altitude)."""
        now = self.clock() if now is None else now
        lat, lon, alt = position if position is not None else (None, None, altitude_m)
        if alt is None:
            alt = altitude_m
        here = (lat, lon) if known(lat) and known(lon) else None
        for check in self._monitors(now):
            if not check.ok:
                return Verdict(HOLD, check.code, check.reason)
        if isinstance(command, Hold):
            return Verdict(HOLD, SafetyCode.HOLD_REQUESTED, "hold requested by the decision")
        if not isinstance(command, (Goal, Velocity)) or not command.valid():
            return Verdict(HOLD, SafetyCode.INVALID_COMMAND, f"invalid command {command!r}")
        if isinstance(command, Goal):
            fence = self.geofence.check_goal(command.lat, command.lon, command.alt_m)
            if fence.ok and command.alt_m < self.limits.min_altitude_m:
                fence = Check(False, SafetyCode.BELOW_MIN_ALTITUDE, f"goal altitude {command.alt_m:.1f} m is below "
                              f"the {self.limits.min_altitude_m:g} m floor")
            if fence.ok and here is not None:
                fence = self.geofence.check_path(here, (command.lat, command.lon))
            if not fence.ok:
                return Verdict(HOLD, fence.code, fence.reason)
            horizontal = None if here is None else geodesic_m(*here, command.lat, command.lon)
            allowed, note = self.limits.clamp_goal(command, alt, horizontal)
        else:
            fence = self._fence_velocity(command, here)
            if not fence.ok:
                return Verdict(HOLD, fence.code, fence.reason)
            allowed, note = self.limits.clamp_velocity(command, alt)
        if note:
            return Verdict(allowed, SafetyCode.SPEED_CLAMPED, note)
        return Verdict(allowed, SafetyCode.OK, "ok")

    def _fence_velocity(self, v: Velocity, here: Optional[tuple[float, float]]) -> Check:
        """Where the velocity leads in VELOCITY_LOOKAHEAD_S is inside the fence, or nearer to it
        than the vehicle is now (so a vehicle outside may only head back)."""
        if isinstance(self.geofence, Unfenced):
            return Check(True, SafetyCode.OK, "no fence")
        if here is None:
            return Check(False, SafetyCode.OUTSIDE_GEOFENCE,
                         "velocity refused: the vehicle's position is unknown, so the geofence cannot be checked")
        speed = math.hypot(v.east_m_s, v.north_m_s)
        if speed == 0.0:
            return Check(True, SafetyCode.OK, "ok")
        bearing = math.degrees(math.atan2(v.east_m_s, v.north_m_s)) % 360.0
        ahead = destination(*here, bearing, speed * VELOCITY_LOOKAHEAD_S)
        out_ahead, out_now = self.geofence.outside_by_m(*ahead), self.geofence.outside_by_m(*here)
        if out_ahead == 0.0 or out_ahead < out_now:
            return Check(True, SafetyCode.OK, "ok")
        return Check(False, SafetyCode.OUTSIDE_GEOFENCE,
                     f"velocity refused: in {VELOCITY_LOOKAHEAD_S:g} s it would be {out_ahead:.1f} m outside the "
                     f"{self.geofence.kind} geofence")

    def _monitors(self, now: float) -> list[Check]:
        checks = [self.estop.check()]
        if self.heartbeat is not None:
            checks.append(self.heartbeat.check(now))
        checks.append(self.watchdog.check(now))
        return checks
