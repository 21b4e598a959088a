"""The simulated walker as a `VehicleLink` (registered as "walker"), so it runs behind the generic
bridge like every vehicle: a ground vehicle, go_to walks at its speed, hold stops it where it
stands; no takeoff, no velocity, no fence upload."""
from __future__ import annotations

import time
from typing import Any, Optional

from cityseeker_ros.core.vehicles.link import LINKS, Capabilities, ConnectReport, LinkError, VehicleLink, VehicleState
from cityseeker_ros.core.vehicles.sim.walker import SimulatedWalker


class WalkerLink(VehicleLink):
    name = "walker"

    def __init__(self, walker: SimulatedWalker) -> None:
        self.walker = walker
        self.connected = False

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(go_to=True, hold=True)

    def connect(self, timeout_s: float = 3.0) -> ConnectReport:
        self.connected = True
        return ConnectReport("simulated walker", "none", 0, 0, "walker", 0, (), 0, 0.0)

    def state(self) -> VehicleState:
        lat, lon = self.walker.fix()
        return VehicleState(lat=lat, lon=lon, alt_m=0.0, heading_deg=None, roll_deg=None, pitch_deg=None,
                            yaw_deg=None, velocity_enu=(0.0, 0.0, 0.0), armed=True, mode="walk", in_control=True,
                            battery_fraction=None, autopilot_time_s=time.monotonic(), heartbeat_age_s=0.0,
                            link_lost=False)

    @property
    def link_lost(self) -> bool:
        return False

    def arm(self) -> None:
        return None

    def takeoff(self, alt_m: Optional[float] = None, timeout_s: float = 30.0) -> None:
        raise LinkError("a walker does not take off")

    def go_to(self, lat: float, lon: float, alt_m: float, heading_deg: Optional[float] = None,
              speed_m_s: Optional[float] = None) -> None:
        self.walker._walk_to(lat, lon)

    def velocity(self, east_m_s: float, north_m_s: float, up_m_s: float = 0.0, yaw_rate_deg_s: float = 0.0) -> None:
        raise LinkError("a walker takes goals, not velocities")

    def hold(self) -> None:
        self.walker._stand()

    def land(self) -> None:
        raise LinkError("a walker does not land")

    def return_to_launch(self) -> None:
        raise LinkError("a walker does not return to launch")

    def close(self) -> None:
        self.connected = False


@LINKS.register("walker")
def make_walker_link(**params: Any) -> VehicleLink:
    """`WalkerLink(SimulatedWalker(lat, lon, **rest))`, or around a given `walker`."""
    walker = params.pop("walker", None)
    return WalkerLink(walker if walker is not None else SimulatedWalker(params.pop("lat"), params.pop("lon"), **params))
