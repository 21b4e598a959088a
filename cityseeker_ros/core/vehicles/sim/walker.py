"""A walking user (or a ground robot) with a GNSS receiver, simulated: it goes where the motion
goals say, stops where it stands on a hold, and reports fixes.

`speed_m_s` None teleports to each goal at once (reproducible runs, like the AirSim bridge's
teleport mode); a speed walks the great circle towards it, so fixes between nodes exercise the
localiser's hysteresis and the supervisor's stall check. `noise_m` adds uniform GNSS jitter of
up to that many metres to each fix (seeded). `follow_goals` N: after N goals that would move it,
it ignores the rest (a walker who stops listening: the stall case); a goal where it already
stands never counts, so a late start does not change what it does. Velocity commands are not a
walker's: it holds on them and counts them.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Optional

import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import destination, geodesic_m, initial_bearing_deg
from cityseeker_ros.core.vehicles.safety.commands import Command, Goal, Hold

ARRIVED_M = 0.01  # closer than this to the goal is there


class SimulatedWalker:
    def __init__(self, lat: float, lon: float, *, speed_m_s: Optional[float] = None, noise_m: float = 0.0,
                 seed: int = 0, follow_goals: Optional[int] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not (math.isfinite(lat) and math.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
            raise ConfigError(f"walker start must be a finite (lat, lon) in degrees, got ({lat!r}, {lon!r})")
        if speed_m_s is not None and not (math.isfinite(speed_m_s) and speed_m_s > 0):
            raise ConfigError(f"walker speed_m_s must be a positive number (or none: teleport), got {speed_m_s!r}")
        if not (math.isfinite(noise_m) and noise_m >= 0):
            raise ConfigError(f"walker noise_m must be >= 0 metres, got {noise_m!r}")
        if follow_goals is not None and (isinstance(follow_goals, bool) or not isinstance(follow_goals, int)
                                         or follow_goals < 0):
            raise ConfigError(f"walker follow_goals must be an integer >= 0, got {follow_goals!r}")
        self.position = (float(lat), float(lon))
        self.speed_m_s, self.noise_m, self.follow_goals = speed_m_s, float(noise_m), follow_goals
        self.clock = clock
        self.goal: Optional[tuple[float, float]] = None  # where it is walking to; None: standing
        self.moves = 0  # goals received that were not where it stood
        self.holds = 0
        self.refused = 0  # commands it does not take (velocity)
        self.travelled_m = 0.0
        self._rng = np.random.default_rng(seed)
        self._at = clock()
        # a link's telemetry reads fixes while its bridge sends goals and holds, on other threads
        self._lock = threading.RLock()

    @property
    def moving(self) -> bool:
        return self.goal is not None

    def command(self, command: Command) -> None:
        """A motion command as a safety gate let it through: the in-process simulated field's gate
        (sim/field.py); a WalkerLink behind the generic bridge moves it through go_to and hold."""
        with self._lock:
            if isinstance(command, Goal):
                self._walk_to(command.lat, command.lon)
            elif isinstance(command, Hold):
                self._stand()
            else:
                self._advance()
                self.refused += 1
                self.goal = None

    def _walk_to(self, lat: float, lon: float) -> None:
        """The walker's one motion sender (WalkerLink.go_to)."""
        with self._lock:
            self._advance()
            goal = (lat, lon)
            if goal == self.position:
                return
            self.moves += 1
            if self.follow_goals is not None and self.moves > self.follow_goals:
                return
            self.goal = goal
            if self.speed_m_s is None:
                self._move_to(goal)

    def _stand(self) -> None:
        """Stop where it stands (WalkerLink.hold)."""
        with self._lock:
            self._advance()
            self.holds += 1
            self.goal = None

    def fix(self) -> tuple[float, float]:
        """The GNSS fix now: the true position after walking since the last call, plus noise."""
        with self._lock:
            self._advance()
            lat, lon = self.position
            if self.noise_m == 0.0:
                return lat, lon
            r = self.noise_m * math.sqrt(self._rng.uniform())  # uniform over the disc
            return destination(lat, lon, float(self._rng.uniform(0.0, 360.0)), r)

    def _advance(self) -> None:
        now = self.clock()
        elapsed, self._at = now - self._at, now
        if self.goal is None or self.speed_m_s is None or elapsed <= 0:
            return
        lat, lon = self.position
        left = geodesic_m(lat, lon, *self.goal)
        step = self.speed_m_s * elapsed
        if step >= left - ARRIVED_M:
            self._move_to(self.goal)
            return
        self.position = destination(lat, lon, initial_bearing_deg(lat, lon, *self.goal), step)
        self.travelled_m += step

    def _move_to(self, goal: tuple[float, float]) -> None:
        self.travelled_m += geodesic_m(*self.position, *goal)
        self.position, self.goal = goal, None
