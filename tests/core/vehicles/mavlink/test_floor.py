"""A velocity descent below home's height stops at the safety file's floor, judged on the vehicle.

The red team's fault (issue 30): with the floor at -5 m, a 1 m/s velocity descent went to -15 m.
Below 0.5 m above home the bridge's flying-start path dropped every velocity job, "up" and "zero"
included, while the last descending setpoint kept streaming, and the status said "descent stopped".
Here the simulator's home is on a roof (ground_m: the ground 20 m below home away from it), so the
vehicle can fly below home as that one could; what is judged is the simulator's own position over
time (`track`) and the setpoints it took, not what the bridge reports.
"""
from __future__ import annotations

import time
from typing import Any

import pytest

from cityseeker_ros.core.vehicles.bridge import VehicleBridge
from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink
from cityseeker_ros.core.vehicles.mavlink.simulator import ControlError, MavlinkSimulator
from cityseeker_ros.core.vehicles.safety import Goal, SafetyConfig, SafetyGate
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Velocity
from tests.core.vehicles.mavlink.conftest import FAST, HOME, free_udp_port, north_of, wait_until

FLOOR_M = -5.0
TAKEOFF_M = 3.0
SAFETY = {"geofence": {"circle": {"center": [HOME[0], HOME[1]], "radius_m": 200.0}}, "heartbeat_timeout_s": None,
          "decision_timeout_s": 60.0, "max_speed_m_s": 5.0, "max_vertical_speed_m_s": 1.0,
          "max_altitude_m": 30.0, "min_altitude_m": FLOOR_M}


class SetpointLog(MavlinkSimulator):
    """The shipped simulator, keeping (t, goal) for each setpoint it took (goal as in `last_setpoint`:
    ("velocity", east, north, up, yaw rate) or ("position", ...))."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.setpoints: list[tuple[float, tuple]] = []

    def _setpoint(self, msg: Any, now: float) -> None:
        super()._setpoint(msg, now)
        self.setpoints.append((now, self.last_setpoint))

    def heights(self, since: float) -> list[float]:
        return [up for t, _, _, up in list(self.track) if t >= since]

    def steady(self, seconds: float) -> bool:
        """The height moved less than 5 cm over the last `seconds`."""
        recent = self.heights(time.monotonic() - seconds)
        return len(recent) >= 5 and max(recent) - min(recent) < 0.05

    def velocities(self, since: float) -> list[tuple[float, float, float]]:
        return [goal[1:4] for t, goal in list(self.setpoints) if t >= since and goal[0] == "velocity"]


@pytest.mark.parametrize("flavour", ["px4", "ardupilot"])
def test_a_velocity_descent_below_home_stops_at_the_floor_and_later_velocities_still_fly(flavour):
    port = free_udp_port()
    with SetpointLog(flavour, port, home=HOME, ground_m=-20.0, **FAST) as sim:
        bridge = VehicleBridge(MavlinkLink(f"udp://127.0.0.1:{port}", takeoff_alt_m=TAKEOFF_M),
                               SafetyGate.from_config(SafetyConfig.from_dict(SAFETY)), safety_period_s=0.02,
                               state_period_s=0.05, reconnect_period_s=0.5)
        try:
            assert wait_until(lambda: bridge.holds >= 1, 10.0, what="the first connect's hold") >= 0
            off_the_roof = Goal(north_of(HOME[0], 10.0), HOME[1], TAKEOFF_M)
            deadline = time.monotonic() + 20.0
            while not (sim.position[2] > TAKEOFF_M - 0.3 and sim.pos[1] > 9.5):  # repeated as the supervisor does
                assert time.monotonic() < deadline, (bridge.status(), bridge.events[-5:])
                bridge.command(off_the_roof)
                time.sleep(0.5)

            descending = time.monotonic()
            bridge.command(Velocity(0.0, 0.0, -1.0))  # once, and left streaming: 8 m to the floor at 1 m/s
            wait_until(lambda: sim.position[2] < 0.0, 6.0, what="below home")
            wait_until(lambda: sim.steady(1.0), 10.0, what="the descent's end")
            time.sleep(1.0)  # and it stays there
            heights = sim.heights(descending)
            assert min(heights) >= FLOOR_M, f"went to {min(heights):.2f} m with the floor at {FLOOR_M:g} m"
            assert min(heights) <= FLOOR_M + 1.5, f"stopped at {min(heights):.2f} m, short of the floor"
            settled = sim.heights(time.monotonic() - 2.0)
            assert max(settled) - min(settled) < 0.2, f"still moving at the floor: {settled}"

            sideways = time.monotonic()  # the stream is the clamp's zero now: a new velocity must replace it
            east_before = sim.pos[0]
            bridge.command(Velocity(0.5, 0.0, 0.0))  # at the floor, below home's 0.5 m: flown
            wait_until(lambda: (0.5, 0.0, 0.0) in sim.velocities(sideways), 2.0, what="the sideways velocity sent")
            time.sleep(1.0)
            assert sim.pos[0] - east_before > 0.3 and min(sim.heights(sideways)) >= FLOOR_M

            climbing = time.monotonic()
            bridge.command(Velocity(0.0, 0.0, 1.0))
            wait_until(lambda: any(up > 0.5 for _, _, up in sim.velocities(climbing)), 2.0, what="the climb sent")
            time.sleep(2.0)
            climbed = sim.heights(climbing)
            assert climbed[-1] - climbed[0] > 1.0, f"no climb from below home: {climbed[0]:.2f} -> {climbed[-1]:.2f}"
            assert climbed[-1] < 0.5  # still below home's 0.5 m: the climb flew there, not after a new start

            stopping = time.monotonic()
            bridge.command(Velocity(0.0, 0.0, 0.0))  # a zero velocity below home: flown, the vehicle stops
            wait_until(lambda: (0.0, 0.0, 0.0) in sim.velocities(stopping), 2.0, what="the zero velocity sent")
            time.sleep(1.0)
            still = sim.heights(time.monotonic() - 0.5)
            assert max(still) - min(still) < 0.2 and max(still) < 0.5, still
            bridge.command(HOLD)
        finally:
            bridge.close()


def test_the_ground_below_home_is_a_switch_with_a_checked_value():
    with pytest.raises(ControlError, match=r"^ground_m: must be a number of metres <= 0 .*got 3"):
        MavlinkSimulator("px4", free_udp_port(), ground_m=3.0)
