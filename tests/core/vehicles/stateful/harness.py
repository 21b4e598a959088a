"""Randomized stateful safety tests: what the driver does, what the vehicle saw, and the verdict.

The driver (a Hypothesis rule-based state machine, `SafetyMachine`) drives a real `VehicleBridge`
over one link through random interleavings: goals and velocities (valid and not: outside the
fence, below the floor, above the ceiling, too fast, in the wrong frame, stale; far goals left to
fly for seconds, so the speed rule sees a target flown long enough to judge), holds, e-stop
trips and resets at random instants, a pilot's mode switch in whatever state the bridge is in, link
drops and returns, a stalled safety thread, RTL, low battery, a bridge restart, a Seek's end.

The oracle is the flight-rules monitor (core/vehicles/monitor), which shares no code with the
bridge: it is fed what the vehicle saw (each link's rig taps the vehicle side: the walker's calls,
the MAVLink simulator's datagrams, the fake AirSim server's RPCs) and the driver's own markers
(decisions with their frame and stamp, operator actions, link drops, session ends). A scenario
passes when the monitor finds no violation.

Decisions go through the same envelope check the vehicle-bridge node applies to a MotionCommand
(core/vehicles/safety/envelope.py): a wrong frame or a stale stamp never reaches the bridge.
"""
from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.vehicles.monitor import (
    Decision,
    FlightMonitor,
    Marker,
    MonitorSettings,
    Observation,
    Reported,
    Violation,
    limits_from_dict,
)
from cityseeker_ros.core.vehicles.safety import EStop, LatchFile
from tests.core.vehicles.test_bridge import wait_for  # noqa: F401 - the rigs' and the machine's

HOME = (43.7384, 7.4246)
SAFETY = {"geofence": {"circle": {"center": list(HOME), "radius_m": 120.0}}, "decision_timeout_s": 3.0,
          "heartbeat_timeout_s": None, "max_speed_m_s": 3.0, "max_vertical_speed_m_s": 1.0,
          "max_altitude_m": 30.0, "min_altitude_m": -5.0}


class Tap:
    """What the vehicle saw and what the driver did, time-stamped on one monotonic clock; and the
    scenario's folder (its e-stop latch file survives a bridge restart, as the node's does)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="safety-scenario-"))
        self._lock = threading.Lock()
        self.observations: list[Observation] = []
        self.counts: Counter[str] = Counter()  # how often each dangerous interleaving happened

    def add(self, obs: Observation) -> None:
        with self._lock:
            self.observations.append(obs)

    def mark(self, kind: str, detail: str = "") -> None:
        self.add(Marker(time.monotonic(), kind, detail))

    def remove_folder(self) -> None:
        """At the scenario's end: a soak of thousands would leave as many folders behind."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def ordered(self) -> list[Observation]:
        with self._lock:
            return sorted(self.observations, key=lambda o: o.t)


def latched_estop(tap: Tap) -> EStop:
    """The e-stop with its latch file in the scenario's folder: a restarted bridge finds it latched."""
    return EStop(LatchFile(tap.folder / "estop.json"))


def around(tap: Tap, t: float, before_s: float = 1.5, after_s: float = 0.5) -> list[str]:
    """What was sent, decided and marked near `t`, one line each, with each mode the vehicle reported
    as it changed (a judge's verdict on a mode turns on when it showed; positions are left out)."""
    lines, shown = [], None
    for o in tap.ordered():
        if isinstance(o, Reported):
            changed = o.mode is not None and o.mode != shown
            shown = o.mode if o.mode is not None else shown
            if not changed:
                continue
        if t - before_s <= o.t <= t + after_s:
            lines.append(f"  {o.t:.3f} {f'the vehicle reports {o.mode}' if isinstance(o, Reported) else o}")
    return lines


def judge(tap: Tap, safety: dict, settings: Optional[MonitorSettings] = None) -> list[Violation]:
    monitor = FlightMonitor(limits_from_dict(safety), settings)
    observations = tap.ordered()
    for obs in observations:
        monitor.feed(obs)
    monitor.finish((observations[-1].t if observations else time.monotonic()) + 5.0)
    return monitor.violations


def goal_at(home: tuple[float, float], bearing_deg: float, metres: float, alt_m: float) -> tuple[float, float, float]:
    lat, lon = destination(home[0], home[1], bearing_deg, metres)
    return lat, lon, alt_m


def safety_around(home: tuple[float, float], **extra) -> dict:
    """SAFETY with its fence centred on `home`."""
    return {**SAFETY, "geofence": {"circle": {"center": [home[0], home[1]], "radius_m": 120.0}}, **extra}


@dataclass
class Counts:
    """Dangerous interleavings seen across scenarios (the soak prints them)."""

    scenarios: int = 0
    events: int = 0
    seen: Counter = field(default_factory=Counter)

    def merge(self, other: Counter) -> None:
        self.seen.update(other)


def decision(tap: Tap, command: str, *, frame: str = "enu", stamp: Optional[float] = None,
             goal: Any = None, velocity: Any = None) -> None:
    tap.add(Decision(time.monotonic(), command, frame=frame, stamp=stamp, goal=goal, velocity=velocity))
