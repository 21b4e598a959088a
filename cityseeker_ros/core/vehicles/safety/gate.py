"""The one place a command passes on its way to the vehicle. The decision layer is slow and may
stall; the flight loop calls `tick` at its own rate (e.g. 20 Hz) and publishes whatever comes out,
HOLD included, with the code and reason, so an operator always sees why the vehicle stopped.

Checks in order: e-stop (latching), supervisor heartbeat, decision watchdog, then the command
itself (finite, inside the geofence, under the ceiling, speed clamped)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

from cityseeker_ros.core.vehicles.safety.codes import Check, SafetyCode
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Command, Goal, Hold, Velocity
from cityseeker_ros.core.vehicles.safety.config import SafetyConfig
from cityseeker_ros.core.vehicles.safety.estop import EStop
from cityseeker_ros.core.vehicles.safety.geofence import Geofence
from cityseeker_ros.core.vehicles.safety.limits import Limits
from cityseeker_ros.core.vehicles.safety.watchdog import Clock, DecisionWatchdog, Heartbeat


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

    def decision(self, command: Command, now: Optional[float] = None) -> Verdict:
        """A decision arrived: feed the watchdog, remember it for `tick`, and say what it becomes."""
        now = self.clock() if now is None else now
        self.watchdog.feed(now)
        self.latest = command
        return self.filter(command, now)

    def beat(self, now: Optional[float] = None) -> None:
        """The supervisor's heartbeat."""
        if self.heartbeat is not None:
            self.heartbeat.feed(now)

    def tick(self, now: Optional[float] = None, altitude_m: Optional[float] = None) -> Verdict:
        """What the vehicle should do right now: the latest decision, filtered."""
        return self.filter(self.latest, now, altitude_m)

    def filter(self, command: Command, now: Optional[float] = None, altitude_m: Optional[float] = None) -> Verdict:
        now = self.clock() if now is None else now
        for check in self._monitors(now):
            if not check.ok:
                return Verdict(HOLD, check.code, check.reason)
        if isinstance(command, Hold):
            return Verdict(HOLD, SafetyCode.HOLD_REQUESTED, "hold requested by the decision")
        if not isinstance(command, (Goal, Velocity)) or not command.valid():
            return Verdict(HOLD, SafetyCode.INVALID_COMMAND, f"invalid command {command!r}")
        if isinstance(command, Goal):
            fence = self.geofence.check_goal(command.lat, command.lon, command.alt_m)
            if not fence.ok:
                return Verdict(HOLD, fence.code, fence.reason)
            allowed, note = self.limits.clamp_goal(command)
        else:
            allowed, note = self.limits.clamp_velocity(command, altitude_m)
        if note:
            return Verdict(allowed, SafetyCode.SPEED_CLAMPED, note)
        return Verdict(allowed, SafetyCode.OK, "ok")

    def _monitors(self, now: float) -> list[Check]:
        checks = [self.estop.check()]
        if self.heartbeat is not None:
            checks.append(self.heartbeat.check(now))
        checks.append(self.watchdog.check(now))
        return checks
