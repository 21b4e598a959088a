"""PX4 or ArduPilot over real MAVLink 2 on loopback UDP, on the shipped simulator, tapped at the
simulator: every datagram it received from the stack and every one it sent (decoded by the
monitor's own MavlinkObserver, which shares nothing with the link), so the monitor judges exactly
what the vehicle saw. A pilot's switch is the simulator's RC mode switch, a link drop its radio
going silent, low battery its battery reading.

One simulator per flavour lives across scenarios (the vehicle stays in the air between them, as a
real one would between two runs; a scenario that landed it flies it up again); each scenario makes
its own link and bridge, and begins by flying to a few metres through the bridge (the flying start
is part of what is judged)."""
from __future__ import annotations

import atexit
import threading
import time
from typing import Any, Optional

from cityseeker_ros.core.vehicles.bridge import PILOT_OVERRIDE, VehicleBridge
from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink
from cityseeker_ros.core.vehicles.mavlink.simulator import MavlinkSimulator
from cityseeker_ros.core.vehicles.monitor.mavlink_wire import MavlinkObserver
from cityseeker_ros.core.vehicles.safety import Goal, SafetyConfig, SafetyGate
from cityseeker_ros.core.vehicles.safety.commands import HOLD
from tests.core.vehicles.mavlink.conftest import free_udp_port
from tests.core.vehicles.stateful.harness import Tap, decision, latched_estop, safety_around, wait_for
from tests.core.vehicles.stateful.rig_walker import stall

HOME = (47.397742, 8.545594, 488.0)
PILOT = {"px4": "POSCTL", "ardupilot": "LOITER"}
# Within the safety file's limits (3 m/s, 1 m/s vertical) so the speed rule judges the stack, not the
# simulator's own climbs and returns (the autopilot's parameters must be set so in the field too).
VEHICLE = {"max_climb_m_s": 1.0, "max_descent_m_s": 1.0, "cruise_m_s": 3.0, "max_speed_m_s": 3.0}
TAKEOFF_M = 3.0


class TappedSimulator(MavlinkSimulator):
    """The shipped simulator, keeping (t, message) of each datagram taken from the stack and each sent."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.wire: list[tuple[float, Any]] = []
        self.wire_lock = threading.Lock()

    def _handle(self, msg: Any) -> None:
        with self.wire_lock:
            self.wire.append((time.monotonic(), msg))
        super()._handle(msg)

    def _transmit(self, msg: Any) -> None:
        deaf = self.deaf
        super()._transmit(msg)
        if not deaf:
            with self.wire_lock:
                self.wire.append((time.monotonic(), msg))

    def take_wire(self) -> list[tuple[float, Any]]:
        with self.wire_lock:
            wire, self.wire = self.wire, []
        return wire


_SIMULATORS: dict[tuple, tuple[TappedSimulator, int]] = {}


def simulator(flavour: str, vehicle: dict, tag: str = "") -> tuple[TappedSimulator, int]:
    """The flavour's simulator for this vehicle (and `tag`: a rig that needs one of its own), made once."""
    key = (flavour, tag, *sorted(vehicle.items()))
    if key not in _SIMULATORS:
        port = free_udp_port()
        sim = TappedSimulator(flavour, port, home=HOME, **vehicle).start()
        atexit.register(sim.close)
        _SIMULATORS[key] = (sim, port)
    return _SIMULATORS[key]


class MavlinkRig:
    pilot = battery = velocity = link_drop = rtl = True
    flavour = "px4"
    vehicle = VEHICLE
    simulator_tag = ""  # a rig with a tag of its own gets a simulator of its own

    def __init__(self, tap: Tap, safety: Optional[dict] = None) -> None:
        self.tap, self.home = tap, HOME[:2]
        self.safety = dict(safety or safety_around(self.home))
        self.sim, self.port = simulator(self.flavour, self.vehicle, self.simulator_tag)
        self.sim.drop_link(0.0)
        self.sim.battery = 1.0
        self.sim.take_wire()
        self.observer = MavlinkObserver(self.flavour)
        if self.sim.armed and self.sim.mode != self.sim.flavour.hold_mode:
            self.sim.mode_switch(self.sim.flavour.hold_mode)  # the last scenario's pilot let go
            time.sleep(1.1)  # one 1 Hz heartbeat, so the new link does not start from the pilot's mode
        self.bridge = self._bridge()
        self._airborne()

    def _bridge(self, wait: bool = True) -> VehicleBridge:
        gate = SafetyGate.from_config(SafetyConfig.from_dict(self.safety), estop=latched_estop(self.tap))
        link = MavlinkLink(f"udp://127.0.0.1:{self.port}", takeoff_alt_m=TAKEOFF_M)
        bridge = VehicleBridge(link, gate, rtl_battery_fraction=0.2, safety_period_s=0.02, state_period_s=0.05,
                               link_timeout_s=0.5, reconnect_period_s=0.3, connect_timeout_s=6.0)
        if wait:  # a bridge restarted while the radio is down connects once it is back; one restarted
            # while a pilot flies the vehicle sends nothing (not even a hold) and says so
            assert wait_for(lambda: bridge.holds >= 1 or bridge.status().code == PILOT_OVERRIDE, 15.0), \
                bridge.status()
        return bridge

    def _airborne(self) -> None:
        """Fly up to the takeoff height through the bridge (a decision, judged like the rest), then hold."""
        if self.sim.armed and self.sim.position[2] > 1.5:
            return
        lat, lon = self.home
        deadline = time.monotonic() + 20.0
        while self.sim.position[2] < TAKEOFF_M - 0.5:  # the goal repeated as the supervisor does (1 s)
            assert time.monotonic() < deadline, (self.bridge.status(), self.bridge.events)
            decision(self.tap, "goal", goal=(lat, lon, TAKEOFF_M), stamp=time.monotonic())
            self.bridge.command(Goal(lat, lon, TAKEOFF_M))
            wait_for(lambda: self.sim.position[2] > TAKEOFF_M - 0.5, 0.7)
        decision(self.tap, "hold", stamp=time.monotonic())
        self.bridge.command(HOLD)

    def altitude(self, alt_m: float) -> float:
        return alt_m

    def pilot_switch(self) -> None:
        self.sim.mode_switch(PILOT[self.flavour])

    def low_battery(self) -> None:
        self.sim.low_battery(0.1)

    def drop_link(self) -> None:
        self.sim.drop_link(3600.0)

    def restore_link(self) -> None:
        self.sim.drop_link(0.0)

    def stall(self, seconds: float) -> None:
        stall(self.bridge, seconds)

    def restart(self) -> None:
        self.bridge.close()
        self.bridge = self._bridge(wait=not self.sim.deaf)

    def close(self) -> None:
        self.bridge.close()

    def shutdown(self) -> None:
        self.sim.drop_link(0.0)
        for t, msg in self.sim.take_wire():
            for obs in self.observer.observe(msg, t):
                self.tap.add(obs)
