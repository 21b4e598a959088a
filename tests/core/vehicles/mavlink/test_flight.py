"""Arming, takeoff, go_to, velocity, hold, land and return, per flavour, over MAVLink to the simulator."""
import math

import pytest
from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.streets.geodesy import geodesic_m
from cityseeker_ros.core.vehicles.link import LinkError
from cityseeker_ros.core.vehicles.mavlink.simulator import MOTION_COMMANDS, SETPOINTS
from tests.core.vehicles.mavlink.conftest import HOME, airborne, north_of, wait_until

FLAVOURS = ["px4", "ardupilot"]


@pytest.mark.parametrize("flavour, result, prefix", [("px4", "MAV_RESULT_DENIED", "Preflight Fail"),
                                                     ("ardupilot", "MAV_RESULT_FAILED", "PreArm")])
def test_arming_refused_gives_the_autopilots_reason_in_one_line(vehicle, flavour, result, prefix):
    sim, link = vehicle(flavour, sim={"prearm_failure": "Compass not calibrated"})
    with pytest.raises(LinkError) as info:
        link.arm()
    assert str(info.value) == f"arming refused ({result}): {prefix}: Compass not calibrated"
    assert not sim.armed and not link.state().armed
    sim.prearm_failure = None
    link.arm()
    assert sim.armed
    wait_until(lambda: link.state().armed, 2.0, what="armed in the heartbeat")


def test_takeoff_needs_arming_and_reports_the_refusal(vehicle):
    sim, link = vehicle("px4")
    with pytest.raises(LinkError, match=r"takeoff to 5 m refused \(MAV_RESULT_DENIED\): Takeoff denied: vehicle "
                                        "not armed"):
        link.takeoff(5.0)
    with pytest.raises(LinkError, match="positive number"):
        link.takeoff(-1.0)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_takeoff_then_go_to_reaches_the_goal(vehicle, flavour):
    sim, link = vehicle(flavour)
    link.arm()
    link.takeoff(6.0, timeout_s=8.0)
    state = link.state()
    assert state.armed and abs(state.alt_m - 6.0) < 0.5
    assert state.mode == ("AUTO.LOITER" if flavour == "px4" else "GUIDED") and not state.in_control
    with pytest.raises(LinkError, match="does not hold control.*take_control"):
        link.go_to(HOME[0], HOME[1], 6.0)
    link.take_control()
    assert link.state().in_control and link.streaming
    goal = (north_of(HOME[0], 25.0), HOME[1] + 0.0001, 8.0)
    link.go_to(*goal, heading_deg=90.0, speed_m_s=9.0)
    wait_until(lambda: geodesic_m(link.state().lat, link.state().lon, goal[0], goal[1]) < 0.5
               and abs(link.state().alt_m - 8.0) < 0.3, 8.0, link, "the goal")
    lat, lon, alt = sim.position
    assert geodesic_m(lat, lon, goal[0], goal[1]) < 0.5 and abs(alt - 8.0) < 0.3
    wait_until(lambda: abs(link.state().heading_deg - 90.0) < 2.0, 3.0, link, "heading east")
    assert abs(link.state().yaw_deg) < 2.0  # ENU: east is yaw 0
    assert sim.cruise == 9.0  # MAV_CMD_DO_CHANGE_SPEED arrived
    assert sim.count(("SET_POSITION_TARGET_GLOBAL_INT",)) >= 5


def test_velocity_is_enu_and_yaw_rate_counter_clockwise(vehicle):
    sim, link = vehicle("px4")
    airborne(link)
    link.velocity(east_m_s=3.0, north_m_s=-1.0, up_m_s=0.5, yaw_rate_deg_s=20.0)
    wait_until(lambda: link.state().velocity_enu[0] > 2.9, 2.0, link, "moving east")
    east, north, up = link.state().velocity_enu
    assert abs(east - 3.0) < 0.05 and abs(north + 1.0) < 0.05 and abs(up - 0.5) < 0.05
    assert sim.yaw_rate == pytest.approx(20.0)  # counter-clockwise in ENU, so the compass heading falls
    start = link.state().heading_deg
    wait_until(lambda: (start - link.state().heading_deg) % 360.0 > 5.0, 2.0, link, "turning left")
    assert sim.count(("SET_POSITION_TARGET_LOCAL_NED",)) >= 1


@pytest.mark.parametrize("flavour, hold_mode", [("px4", "AUTO.LOITER"), ("ardupilot", "BRAKE")])
def test_hold_is_the_autopilots_own_mode_and_releases_control(vehicle, flavour, hold_mode):
    sim, link = vehicle(flavour)
    airborne(link)
    link.velocity(5.0, 0.0)
    wait_until(lambda: link.state().velocity_enu[0] > 4.0, 3.0, link, "moving")
    link.hold()
    state = link.state()
    assert state.mode == hold_mode and sim.mode == hold_mode and not state.in_control and not link.streaming
    wait_until(lambda: math.hypot(*link.state().velocity_enu[:2]) < 0.2, 3.0, what="stopped")
    with pytest.raises(LinkError, match="does not hold control"):
        link.velocity(1.0, 0.0)
    link.take_control()  # and back
    assert link.state().in_control


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_land_descends_and_disarms(vehicle, flavour):
    sim, link = vehicle(flavour)
    airborne(link, 4.0)
    link.land()
    assert link.state().mode == ("AUTO.LAND" if flavour == "px4" else "LAND") and not link.streaming
    wait_until(lambda: not link.state().armed and link.state().alt_m == 0.0, 5.0, what="landed and disarmed")
    assert sim.pos[2] == 0.0 and sim.texts[-1] == "Landing detected"


@pytest.mark.parametrize("flavour, params", [("px4", {"RTL_RETURN_ALT": 5.0}), ("ardupilot", {"RTL_ALT": 500})])
def test_return_to_launch_flies_home_and_lands(vehicle, flavour, params):
    sim, link = vehicle(flavour, sim={"params": params})
    airborne(link, 3.0)
    link.go_to(north_of(HOME[0], 10.0), HOME[1], 3.0)
    wait_until(lambda: geodesic_m(link.state().lat, link.state().lon, HOME[0], HOME[1]) > 9.0, 5.0, link, "away")
    link.return_to_launch()
    assert link.state().mode == ("AUTO.RTL" if flavour == "px4" else "RTL")
    wait_until(lambda: link.state().alt_m > 4.5, 3.0, what="climbing to the return altitude first")
    wait_until(lambda: not link.state().armed and link.state().alt_m == 0.0, 9.0, what="home and landed")
    state = link.state()
    assert geodesic_m(state.lat, state.lon, HOME[0], HOME[1]) < 0.6 and state.alt_m == 0.0


def test_every_motion_message_leaves_through_the_one_gated_send(vehicle):
    """What the connection sent of motion kinds equals what passed _send_motion, message for message."""
    sim, link = vehicle("px4")
    passed = []
    send_motion = link._send_motion

    def spy(msg):
        passed.append(msg.get_type() if msg.get_type() != "COMMAND_LONG" else msg.command)
        send_motion(msg)

    link._send_motion = spy
    airborne(link)
    link.go_to(north_of(HOME[0], 3.0), HOME[1], 5.0, speed_m_s=4.0)
    link.velocity(1.0, 0.0)
    link.hold()
    sent = link._conn.sent
    motion_commands = sum(1 for p in passed if p in MOTION_COMMANDS)
    assert sum(1 for p in passed if p in SETPOINTS) == sum(sent[t] for t in SETPOINTS) > 0
    assert motion_commands >= 5  # arm, takeoff, OFFBOARD, speed, hold
    assert sent["COMMAND_LONG"] == motion_commands + 3  # + the three SET_MESSAGE_INTERVAL requests
    assert link.motion_sent == len(passed)
    assert sim.count((), commands=frozenset({mavlink.MAV_CMD_DO_CHANGE_SPEED})) >= 1
