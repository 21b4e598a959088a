"""The AirSim protocol fake (fake_airsim.py: a protocol fake, not the simulator) with the
multirotor calls the bridge adds (hover, moveByVelocity, cancelLastTask) and a monotonic time
stamp on every call, so tests measure how soon the vehicle was told to hold.

time.monotonic is CLOCK_MONOTONIC, one clock for every process on the host: a driver process's
stamps compare with these.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Optional

from tests.core.airsim.fake_airsim import FakeAirSim, vec


class TimedCalls(list):
    """The fake's call list, with the arrival time of each call beside it."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []
        self.lock = threading.Lock()

    def append(self, item: Any) -> None:
        with self.lock:
            self.times.append(time.monotonic())
            super().append(item)


class FlightFake(FakeAirSim):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls = TimedCalls()

    def timed(self, method: Optional[str] = None, after: float = -1.0) -> list[tuple[float, str, list[Any]]]:
        """(time, method, params) of the calls named `method` (all if None) that came after `after`."""
        with self.calls.lock:
            rows = list(zip(self.calls.times, self.calls))
        return [(t, name, params) for t, (name, params) in rows
                if t > after and (method is None or name == method)]

    def rpc_hover(self, vehicle_name: str) -> bool:
        self.velocity = vec()
        return True

    def rpc_cancelLastTask(self, vehicle_name: str) -> None:
        return None

    def rpc_moveByVelocity(self, vx, vy, vz, duration, drivetrain, yaw_mode, vehicle_name) -> bool:
        self.velocity = vec(vx, vy, vz)
        return True
