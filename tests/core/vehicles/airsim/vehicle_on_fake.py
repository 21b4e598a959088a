"""An AirSim vehicle for tests: a connected AirSimVehicleLink in fly mode on the protocol fake
(fake_airsim.py: AirSim's RPC layer and task rule, not the simulator), and what the vehicle saw.

    with fake_vehicle(task_s=0.03) as vehicle:
        bridge = VehicleBridge(vehicle.link, gate)
        ...
        for t, name, args in vehicle.seen(after=t0):  # every request, in the order AirSim took it
            ...

`seen()` lists every RPC the fake took, reads included (ping, getMultirotorState,
simGetVehiclePose), as `Call(t, name, args)`: t is time.monotonic() when the vehicle took it (one
step under the vehicle's lock, so the list is in that order and t never decreases), name the
method as it travels on the wire (hover, moveToPosition, moveByVelocity, rotateByYawRate,
rotateToYaw, enableApiControl, armDisarm, simSetVehiclePose...; no "Async" suffix), args its
parameters as sent, vehicle_name last. `starts_motion(name)` says whether one may set the vehicle
moving (every move*/rotate*, takeoff, goHome, a teleport, taking control); hover, land and
cancelLastTask are stops.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Optional

from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.link import AirSimVehicleLink, BridgeLink
from tests.core.vehicles.airsim.fake_airsim import Call, FakeAirSim, starts_motion

ANCHOR = Anchor(lat=43.7384, lon=7.4246, alt=40.0, yaw_offset_deg=30.0)  # AirSim's map origin, turned 30 degrees


@dataclass
class FakeVehicle:
    fake: FakeAirSim  # its task_s, latency_s, fail, position... may be changed between calls
    link: AirSimVehicleLink

    def seen(self, after: float = -math.inf) -> list[Call]:
        """Every RPC the vehicle took after time.monotonic() `after`, in the order it took them."""
        return self.fake.seen(after)

    def motion_seen(self, after: float = -math.inf) -> list[Call]:
        """Only the RPCs that may set the vehicle moving (starts_motion), in order."""
        return [call for call in self.fake.seen(after) if starts_motion(call.name)]

    def close(self) -> None:
        self.link.close()
        self.fake.close()


def airsim_vehicle(task_s: float = 0.03, latency_s: float = 0.0, seed: Optional[int] = None,
                   anchor: Anchor = ANCHOR, client: str = "auto", rpc_timeout_s: float = 5.0,
                   motion_params: Optional[Mapping[str, Any]] = None, connect: bool = True) -> FakeVehicle:
    """A fresh fake and an AirSimVehicleLink on it in fly mode (max_speed_mps 4 unless
    motion_params says otherwise), connected unless `connect=False` (a VehicleBridge connects the
    link itself, again if it already is). Each motion task lasts `task_s` unless cancelled;
    `latency_s`: see fake_airsim.py. Close it (or use fake_vehicle) to stop both."""
    fake = FakeAirSim(task_s=task_s, latency_s=latency_s, seed=seed)

    def connection(role: str) -> BridgeLink:
        return BridgeLink("127.0.0.1", fake.port, client=client, timeout_s=rpc_timeout_s).connect()

    link = AirSimVehicleLink(anchor, connection, "fly", {"max_speed_mps": 4.0, **(motion_params or {})})
    vehicle = FakeVehicle(fake, link)
    if connect:
        try:
            link.connect()
        except Exception:
            vehicle.close()
            raise
    return vehicle


@contextmanager
def fake_vehicle(**kwargs: Any) -> Iterator[FakeVehicle]:
    """`airsim_vehicle(**kwargs)`, closed on leaving the block."""
    vehicle = airsim_vehicle(**kwargs)
    try:
        yield vehicle
    finally:
        vehicle.close()
