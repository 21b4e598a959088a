"""A pilot's RC mode switch: the link notices, refuses every motion (take_control() included), sends
nothing, and never switches back until the owner stops the vehicle itself (hold, land, return: the
bridge's hold after an operator's take-control; see test_foreign_mode.py)."""
import time

import pytest

from cityseeker_ros.core.vehicles.link import PilotOverride
from tests.core.vehicles.mavlink.conftest import HOME, airborne, north_of, wait_until


@pytest.mark.parametrize("flavour, pilot_mode", [("px4", "POSCTL"), ("ardupilot", "LOITER")])
def test_pilot_takeover_is_detected_and_no_motion_follows(vehicle, flavour, pilot_mode):
    sim, link = vehicle(flavour)
    airborne(link)
    link.go_to(north_of(HOME[0], 30.0), HOME[1], 5.0)
    wait_until(lambda: link.state().velocity_enu[1] > 1.0, 2.0, link, "flying north")
    switched = time.monotonic()
    sim.rc_mode_switch(pilot_mode)
    detected_after = wait_until(lambda: not link.state().in_control, 2.0, link, "the takeover noticed")
    detected = time.monotonic()
    assert detected_after < 1.2 and link.state().mode == pilot_mode
    assert pilot_mode in link.override_reason and not link.streaming
    assert link.state().foreign_mode == pilot_mode
    calls = [lambda: link.go_to(HOME[0], HOME[1], 5.0), lambda: link.go_to(HOME[0], HOME[1], 5.0, speed_m_s=2.0),
             lambda: link.velocity(1.0, 0.0), link.arm, lambda: link.takeoff(5.0)]
    for call in calls:
        with pytest.raises(PilotOverride, match=f"left .* for {pilot_mode} by itself"):
            call()
    # the owner's loop keeps running; the vehicle hears no motion and stays in the pilot's mode
    heartbeats = link._conn.target_heartbeats
    wait_until(lambda: link._conn.target_heartbeats >= heartbeats + 2, 3.0, link, "two more heartbeats")
    assert sim.count_motion(since=detected) == 0
    assert sim.mode == pilot_mode and sim.modes[-1][2] == "RC mode switch"
    assert sim.count_motion(since=switched - 1.0) > 0  # it was streaming before
    with pytest.raises(PilotOverride):
        link.take_control()  # a late call never switches the vehicle back
    link.operator_takes_control()
    link.hold()  # the way back: a stop from the owner, then the control mode for a new decision
    link.take_control()
    assert link.state().in_control and sim.mode == link.flavour.control_mode and link.override_reason is None
