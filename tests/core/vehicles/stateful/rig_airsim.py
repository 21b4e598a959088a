"""AirSim in fly mode behind the bridge, on the AirSim protocol fake (tests/core/vehicles/airsim/
fake_airsim.py: AirSim's RPC layer and its task rule, one running task per vehicle, every call
cancelling the one before; AirSim itself cannot run here). What the vehicle saw is the fake's RPC
log, turned into the monitor's observations here, in test code that shares nothing with the link.

Faked, so not judged here: AirSim's physics (the fake's vehicle jumps to a move's end when its task
ends), hence no positions are reported to the monitor and the speed rule is judged on the MAVLink
simulator and the walker; AirSim has no RC pilot and no battery in this link, and the fake cannot
drop its connection, so pilot switches, low battery and link drops are not drawn for this rig."""
from __future__ import annotations

from typing import Optional

from cityseeker_ros.core.vehicles.bridge import VehicleBridge
from cityseeker_ros.core.vehicles.monitor import MonitorSettings, Sent
from cityseeker_ros.core.vehicles.safety import SafetyConfig, SafetyGate
from tests.core.vehicles.airsim.vehicle_on_fake import ANCHOR, airsim_vehicle
from tests.core.vehicles.stateful.harness import HOME, SAFETY, Tap, latched_estop, wait_for
from tests.core.vehicles.stateful.rig_walker import stall

STOPS = {"hover": "hold", "land": "land", "goHome": "rtl"}


def observations(calls) -> list[Sent]:
    """The fake's RPC log as the monitor's observations: moves as setpoints (a turn moves too: a zero
    velocity), taking API control as entering the control mode, hover/land/goHome as stops."""
    out: list[Sent] = []
    for t, name, args in calls:
        if name == "moveToPosition":
            lat, lon, alt = ANCHOR.airsim_to_geo(*args[:3])
            out.append(Sent(t, "position", lat=lat, lon=lon, alt_m=alt - ANCHOR.alt))
        elif name == "moveByVelocity":
            east, north, up = (float(c) for c in ANCHOR.airsim_to_enu(args[:3]))
            out.append(Sent(t, "velocity", velocity_enu=(east, north, up), frame="enu"))
        elif name in ("rotateByYawRate", "rotateToYaw"):
            out.append(Sent(t, "velocity", velocity_enu=(0.0, 0.0, 0.0), frame="yaw"))
        elif name == "simSetVehiclePose":
            position = args[0]["position"]
            lat, lon, alt = ANCHOR.airsim_to_geo(position["x_val"], position["y_val"], position["z_val"])
            out.append(Sent(t, "position", lat=lat, lon=lon, alt_m=alt - ANCHOR.alt))
        elif name == "enableApiControl" and args[0]:
            out.append(Sent(t, "mode", mode="api", control_mode=True))
        elif name == "armDisarm" and args[0]:
            out.append(Sent(t, "arm"))
        elif name == "takeoff":
            out.append(Sent(t, "takeoff"))
        elif name in STOPS:
            out.append(Sent(t, STOPS[name]))
    return out


class AirSimRig:
    pilot = battery = False
    velocity = True
    link_drop = False
    # The fake stamps a call when its server takes it; the client's IO loop delivers a call checked
    # before an event up to a few ms after it on a loaded machine (6 ms seen in the soak).
    monitor_settings = MonitorSettings(transport_s=0.02)

    def __init__(self, tap: Tap, safety: Optional[dict] = None) -> None:
        self.tap, self.safety, self.home = tap, dict(safety or SAFETY), HOME
        self.vehicle = airsim_vehicle(task_s=0.05, connect=False)
        self.bridge = self._bridge()

    def _bridge(self) -> VehicleBridge:
        gate = SafetyGate.from_config(SafetyConfig.from_dict(self.safety), estop=latched_estop(self.tap))
        bridge = VehicleBridge(self.vehicle.link, gate, safety_period_s=0.02, state_period_s=0.05,
                               link_timeout_s=0.5, reconnect_period_s=0.2)
        assert wait_for(lambda: bridge.holds >= 1, 10.0), bridge.status()
        return bridge

    def altitude(self, alt_m: float) -> float:
        return alt_m

    def stall(self, seconds: float) -> None:
        stall(self.bridge, seconds)

    def restart(self) -> None:
        self.bridge.close()
        self.bridge = self._bridge()

    def close(self) -> None:
        self.bridge.close()

    def shutdown(self) -> None:
        for obs in observations(self.vehicle.seen()):
            self.tap.add(obs)
        self.vehicle.close()
