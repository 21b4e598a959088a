"""The MAVLink adapter on real MAVLink 2 bytes (pymavlink-encoded, then parsed), both flavours, both directions."""
from __future__ import annotations

import math

import pytest
from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.vehicles.mavlink.flavours import FLAVOURS
from cityseeker_ros.core.vehicles.monitor.mavlink_wire import CONTROL_MODES, MODES, MavlinkObserver
from cityseeker_ros.core.vehicles.monitor.observations import Reported, Sent

HOME = (47.397742, 8.545594, 488.0)
AUTOPILOT = {"px4": mavlink.MAV_AUTOPILOT_PX4, "ardupilot": mavlink.MAV_AUTOPILOT_ARDUPILOTMEGA}


def test_the_mode_tables_are_the_autopilots():
    for name, flavour in FLAVOURS.items():
        assert MODES[name] == flavour.modes and CONTROL_MODES[name] == flavour.control_mode
    assert {m: v for m, v in MODES["ardupilot"].items()} == {
        e.name.removeprefix("COPTER_MODE_"): k for k, e in mavlink.enums["COPTER_MODE"].items()
        if e.name.removeprefix("COPTER_MODE_") in MODES["ardupilot"]}


class Wire:
    """Bytes from a stack (system 255) and a vehicle (system 1), parsed back as the monitor would."""

    def __init__(self, flavour: str) -> None:
        self.flavour = flavour
        self.stack = mavlink.MAVLink(None, srcSystem=255, srcComponent=190)
        self.vehicle = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
        self.parser = mavlink.MAVLink(None)
        self.observer = MavlinkObserver()
        self.t = 0.0

    def send(self, sender, msg) -> list:
        self.t += 0.1
        data = bytes(msg.pack(sender))
        return [o for m in self.parser.parse_buffer(data) or [] for o in self.observer.observe(m, self.t)]

    def heartbeat(self, mode: str, armed: bool = True) -> list:
        base = mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED | (mavlink.MAV_MODE_FLAG_SAFETY_ARMED if armed else 0)
        return self.send(self.vehicle, mavlink.MAVLink_heartbeat_message(
            mavlink.MAV_TYPE_QUADROTOR, AUTOPILOT[self.flavour], base, MODES[self.flavour][mode], 4, 3))

    def position(self, relative_m: float = 10.0, v=(1.0, 2.0, -0.5)) -> list:
        return self.send(self.vehicle, mavlink.MAVLink_global_position_int_message(
            1000, int(HOME[0] * 1e7), int(HOME[1] * 1e7), int((HOME[2] + relative_m) * 1000), int(relative_m * 1000),
            int(v[1] * 100), int(v[0] * 100), int(-v[2] * 100), 9000))

    def command(self, command: int, *params: float) -> list:
        p = list(params) + [0.0] * (7 - len(params))
        return self.send(self.stack, mavlink.MAVLink_command_long_message(1, 1, command, 0, *p))


@pytest.fixture(params=["px4", "ardupilot"])
def wire(request) -> Wire:
    w = Wire(request.param)
    hold = "AUTO.LOITER" if request.param == "px4" else "BRAKE"
    assert w.heartbeat(hold) == [Reported(0.1, mode=hold, armed=True)]
    [pos] = w.position()
    assert pos.alt_m == pytest.approx(10.0) and pos.velocity_enu == pytest.approx((1.0, 2.0, -0.5))
    assert w.observer.flavour == request.param and w.observer.home_amsl_m == pytest.approx(HOME[2])
    return w


def test_the_control_mode_both_ways(wire):
    control = CONTROL_MODES[wire.flavour]
    [hb] = wire.heartbeat(control)
    assert hb.mode == control and hb.armed is True
    value = MODES[wire.flavour][control]
    params = (value >> 16 & 0xFF, value >> 24 & 0xFF) if wire.flavour == "px4" else (value, 0)
    [sent] = wire.command(mavlink.MAV_CMD_DO_SET_MODE, mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, *params)
    assert (sent.kind, sent.mode, sent.control_mode, sent.moves) == ("mode", control, True, True)
    [by_message] = wire.send(wire.stack, mavlink.MAVLink_set_mode_message(
        1, mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, value))
    assert by_message.mode == control and by_message.control_mode


def test_hold_land_return_by_mode_and_by_command(wire):
    hold, land, rtl = (("AUTO.LOITER", "AUTO.LAND", "AUTO.RTL") if wire.flavour == "px4" else ("BRAKE", "LAND", "RTL"))
    for mode, kind in ((hold, "hold"), (land, "land"), (rtl, "rtl")):
        value = MODES[wire.flavour][mode]
        params = (value >> 16 & 0xFF, value >> 24 & 0xFF) if wire.flavour == "px4" else (value, 0)
        [sent] = wire.command(mavlink.MAV_CMD_DO_SET_MODE, mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, *params)
        assert (sent.kind, sent.mode) == (kind, mode)
    kinds = [wire.command(c)[0].kind for c in (mavlink.MAV_CMD_NAV_LOITER_UNLIM, mavlink.MAV_CMD_NAV_LAND,
                                               mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH)]
    assert kinds == ["hold", "land", "rtl"]
    assert wire.command(mavlink.MAV_CMD_DO_FLIGHTTERMINATION, 1.0)[0].kind == "terminate"
    assert wire.command(mavlink.MAV_CMD_DO_CHANGE_SPEED, 1.0, 2.5)[0].speed_m_s == 2.5
    assert [wire.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, a)[0].kind for a in (1.0, 0.0)] == ["arm", "disarm"]


def test_takeoff_height_in_each_flavours_convention(wire):
    """PX4 takes NAV_TAKEOFF's altitude above sea level, ArduPilot above home: both are 45 m above home here."""
    param7 = HOME[2] + 45.0 if wire.flavour == "px4" else 45.0
    nan = math.nan if wire.flavour == "px4" else 0.0
    [sent] = wire.command(mavlink.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, nan, nan, nan, param7)
    assert sent.kind == "takeoff" and sent.alt_m == pytest.approx(45.0) and sent.lat is None
    [by_int] = wire.send(wire.stack, mavlink.MAVLink_command_int_message(
        1, 1, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, mavlink.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, 0, 0, 0, 0, 0, 45.0))
    assert by_int.alt_m == pytest.approx(45.0)


def test_setpoints_as_the_link_sends_them(wire):
    [position] = wire.send(wire.stack, mavlink.MAVLink_set_position_target_global_int_message(
        0, 1, 1, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, 8 | 16 | 32 | 64 | 128 | 256 | 1024 | 2048,
        round(47.3985 * 1e7), round(8.5461 * 1e7), 12.5, 0, 0, 0, 0, 0, 0, 0, 0))
    assert (position.kind, position.lat, position.lon, position.alt_m) == ("position", 47.3985, 8.5461, 12.5)
    [amsl] = wire.send(wire.stack, mavlink.MAVLink_set_position_target_global_int_message(
        0, 1, 1, mavlink.MAV_FRAME_GLOBAL_INT, 8 | 16 | 32 | 64 | 128 | 256 | 1024 | 2048,
        round(47.3985 * 1e7), round(8.5461 * 1e7), HOME[2] + 20.0, 0, 0, 0, 0, 0, 0, 0, 0))
    assert amsl.alt_m == pytest.approx(20.0, abs=0.01)
    # the link's velocity: LOCAL_NED north 1, east 2, down -0.5 -> ENU (2, 1, 0.5)
    [velocity] = wire.send(wire.stack, mavlink.MAVLink_set_position_target_local_ned_message(
        0, 1, 1, mavlink.MAV_FRAME_LOCAL_NED, 1 | 2 | 4 | 64 | 128 | 256 | 1024, 0, 0, 0, 1.0, 2.0, -0.5,
        0, 0, 0, 0, 0))
    assert velocity.kind == "velocity" and velocity.velocity_enu == pytest.approx((2.0, 1.0, 0.5))
    # body frame: forward 1 m/s with the vehicle heading east (hdg 90 in the position report) is east
    [body] = wire.send(wire.stack, mavlink.MAVLink_set_position_target_local_ned_message(
        0, 1, 1, mavlink.MAV_FRAME_BODY_NED, 1 | 2 | 4 | 64 | 128 | 256 | 1024, 0, 0, 0, 1.0, 0, 0, 0, 0, 0, 0, 0))
    assert body.velocity_enu == pytest.approx((1.0, 0.0, 0.0), abs=1e-6) and body.frame == "body_ned"


def test_who_sent_it(wire):
    other_gcs = mavlink.MAVLink(None, srcSystem=254, srcComponent=190)
    assert wire.send(other_gcs, mavlink.MAVLink_command_long_message(
        1, 1, mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 0, 1, 0, 0, 0, 0, 0, 0)) == []
    gcs_heartbeat = mavlink.MAVLink_heartbeat_message(mavlink.MAV_TYPE_GCS, mavlink.MAV_AUTOPILOT_INVALID, 0, 0, 0, 3)
    assert wire.send(wire.stack, gcs_heartbeat) == []
    assert wire.send(wire.stack, mavlink.MAVLink_command_long_message(  # addressed to another vehicle
        7, 1, mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 0, 1, 0, 0, 0, 0, 0, 0)) == []
    assert wire.observer.counts["other COMMAND_LONG"] == 1 and wire.observer.counts["stack HEARTBEAT"] == 1
    custom = MavlinkObserver("px4", stack_system=254, vehicle_system=1)
    data = bytes(mavlink.MAVLink_command_long_message(1, 1, mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 0, 1, 0, 0, 0, 0,
                                                      0, 0).pack(other_gcs))
    [msg] = wire.parser.parse_buffer(data)
    assert custom.observe(msg, 1.0) == [Sent(1.0, "arm")]


def test_messages_wait_for_the_autopilot_to_be_known():
    """A monitor started mid-flight may see the stack's mode change before the vehicle's first heartbeat."""
    w = Wire("px4")
    value = MODES["px4"]["OFFBOARD"]
    assert w.command(mavlink.MAV_CMD_DO_SET_MODE, mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, value >> 16 & 0xFF) == []
    assert w.position() == []
    out = w.heartbeat("OFFBOARD")
    assert [type(o).__name__ for o in out] == ["Sent", "Reported", "Reported"]
    assert out[0].mode == "OFFBOARD" and out[0].control_mode and [o.t for o in out] == sorted(o.t for o in out)
