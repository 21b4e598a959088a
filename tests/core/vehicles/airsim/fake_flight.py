"""The AirSim protocol fake under the name the flight tests import (fake_airsim.py: a protocol
fake, not the simulator). Its task semantics (one task per vehicle, every task call cancels the
running one, a cancelled call answers at once), `task_s`, `latency_s`, `tasks` and the timed call
log live in FakeAirSim itself."""
from __future__ import annotations

from tests.core.vehicles.airsim.fake_airsim import FakeAirSim, Task, is_task

FlightFake = FakeAirSim

# Calls that move the vehicle (the bridge must never send one after a hold).
MOTION = frozenset({"moveToPosition", "moveByVelocity", "rotateByYawRate", "rotateToYaw", "simSetVehiclePose"})
# Calls that run as the vehicle's one task: each cancels the one running (AirSim's multirotor API).
TASKS = frozenset(name for name in ("moveToPosition", "moveByVelocity", "rotateByYawRate", "rotateToYaw", "hover")
                  if is_task(name))

__all__ = ["MOTION", "TASKS", "FlightFake", "Task"]
