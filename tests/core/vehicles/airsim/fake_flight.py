"""The AirSim protocol fake (fake_airsim.py: a protocol fake, not the simulator) with the
multirotor calls the bridge adds (hover, moveByVelocity, cancelLastTask), a monotonic time
stamp on every call, and, when asked, AirSim's task semantics and RPC latency:

- `task_s > 0`: each motion call (moveTo*, moveByVelocity, rotate*) runs that long before it
  answers; every motion call, hover included, cancels the task running on the vehicle, and a
  cancelled call returns early without an error (as AirSim's waitOnLastTask does);
- `latency_s > 0`: every request waits a random 0..latency_s before the vehicle sees it, in
  arrival order per connection (TCP), so requests on two connections may overtake each other.

`calls` lists requests in the order the vehicle took them; `tasks` records each task's span.

time.monotonic is CLOCK_MONOTONIC, one clock for every process on the host: a driver process's
stamps compare with these.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Optional

from tests.core.vehicles.airsim.fake_airsim import FakeAirSim, vec

# Calls that move the vehicle (the bridge must never send one after a hold).
MOTION = frozenset({"moveToPosition", "moveByVelocity", "rotateByYawRate", "rotateToYaw", "simSetVehiclePose"})
# Calls that run as the vehicle's one task: each cancels the one running (AirSim's multirotor API).
TASKS = frozenset({"moveToPosition", "moveByVelocity", "rotateByYawRate", "rotateToYaw", "hover"})


class TimedCalls(list):
    """The fake's call list, with the arrival time of each call beside it."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []
        self.lock = threading.RLock()

    def append(self, item: Any) -> None:
        with self.lock:
            self.times.append(time.monotonic())
            super().append(item)


@dataclass
class Task:
    method: str
    start: float
    end: Optional[float] = None  # None while it runs
    cancelled: bool = False


class FlightFake(FakeAirSim):
    def __init__(self, task_s: float = 0.0, latency_s: float = 0.0, seed: Optional[int] = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls = TimedCalls()
        self.task_s, self.latency_s = float(task_s), float(latency_s)
        self.tasks: list[Task] = []
        self._running: Optional[tuple[Task, threading.Event]] = None
        self._rng = random.Random(seed)

    def timed(self, method: Optional[str] = None, after: float = -1.0) -> list[tuple[float, str, list[Any]]]:
        """(time, method, params) of the calls named `method` (all if None) that came after `after`."""
        with self.calls.lock:
            rows = list(zip(self.calls.times, self.calls))
        return [(t, name, params) for t, (name, params) in rows
                if t > after and (method is None or name == method)]

    def _dispatch(self, method: str, params: list[Any]) -> tuple[Any, Any]:
        if self.latency_s > 0:
            time.sleep(self._rng.uniform(0.0, self.latency_s))
        if method not in TASKS:
            return super()._dispatch(method, params)
        with self.calls.lock:  # cancel the running task and start this one, as one step
            if self._running is not None:
                self._running[0].cancelled = True
                self._running[1].set()
            task, cancel = Task(method, time.monotonic()), threading.Event()
            self._running = (task, cancel)
            self.tasks.append(task)
            self.calls.append((method, params))
        try:
            if method in self.fail:
                return f"{method} failed on purpose", None
            if method != "hover" and self.task_s > 0 and cancel.wait(self.task_s):
                return None, True  # cancelled: back early, no error, and it never got there
            return self._handle(method, params)
        finally:
            with self.calls.lock:
                task.end = time.monotonic()
                if self._running is not None and self._running[0] is task:
                    self._running = None

    def rpc_hover(self, vehicle_name: str) -> bool:
        self.velocity = vec()
        return True

    def rpc_cancelLastTask(self, vehicle_name: str) -> None:
        return None

    def rpc_moveByVelocity(self, vx, vy, vz, duration, drivetrain, yaw_mode, vehicle_name) -> bool:
        self.velocity = vec(vx, vy, vz)
        return True
