"""Vehicle conversions (ros/convert_vehicle.py) without a graph: message classes are plain Python."""
from __future__ import annotations

import math

import numpy as np
import pytest

from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.vehicles.bridge import BridgeStatus
from cityseeker_ros.core.vehicles.link import VehicleState
from cityseeker_ros.core.vehicles.safety import HOLD, Goal, Velocity
from cityseeker_ros.ros import convert_vehicle as cv
from cityseeker_ros.ros.schema import CommandMsg, parse, to_json

STAMP = Stamp(sec=12, nanosec=5)


ORIGIN = (43.7, 7.4, 10.0)


def state(yaw_enu_deg: float, velocity=(1.0, 0.0, 0.5)) -> VehicleState:
    lat, lon = destination(ORIGIN[0], ORIGIN[1], 90.0 + 53.13010235415598, 5.0)  # 3 m east, 4 m south
    return VehicleState(lat=lat, lon=lon, alt_m=2.5, heading_deg=None, roll_deg=None, pitch_deg=None,
                        yaw_deg=yaw_enu_deg, velocity_enu=velocity, armed=True, mode="x", in_control=True,
                        battery_fraction=None, autopilot_time_s=None, heartbeat_age_s=0.0, link_lost=False)


def test_fix_and_odometry_from_any_links_state():
    s = state(90.0)  # facing north
    fix = cv.fix_from_state(s, STAMP, datum_alt_m=ORIGIN[2])
    assert (fix.latitude, fix.longitude, fix.altitude, fix.header.frame_id) == (s.lat, s.lon, 12.5, "base_link")
    odom = cv.odometry_from_state(s, ORIGIN, STAMP)
    p = odom.pose.pose.position
    assert (p.x, p.y, p.z) == pytest.approx((3.0, -4.0, 2.5), abs=1e-3) and odom.header.frame_id == "map"
    assert odom.child_frame_id == "base_link"
    o = odom.pose.pose.orientation
    assert (o.w, o.x, o.y, o.z) == pytest.approx((math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)))
    t = odom.twist.twist.linear  # flying east while facing north: to the body's right (-y, FLU)
    assert (t.x, t.y, t.z) == pytest.approx((0.0, -1.0, 0.5), abs=1e-12)
    unknown = VehicleState(None, None, None, None, None, None, None, (0.0, 0.0, 0.0), False, "", False, None, None,
                           math.inf, False)
    assert cv.fix_from_state(unknown, STAMP) is None and cv.odometry_from_state(unknown, ORIGIN, STAMP) is None


@pytest.mark.parametrize("command", [Goal(1.0, 2.0, 3.0, 90.0, 2.0), Goal(1.0, 2.0), Velocity(1.0, -2.0, 0.5, 10.0),
                                     HOLD])
def test_command_round_trip(command):
    msg = cv.command_to_msg(command, STAMP, reason="why", view_set_id="v1")
    assert cv.command_from_msg(parse(CommandMsg, msg.to_json())) == command


def test_images():
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    raw = cv.camera_image(rgb, STAMP, "base_link", "raw")
    assert (raw.encoding, raw.height, raw.width, raw.step) == ("rgb8", 2, 3, 9) and bytes(raw.data) == rgb.tobytes()
    assert cv.camera_image(rgb, STAMP, "base_link", "png").format == "rgb8; png compressed bgr8"
    depth = cv.depth_image(np.full((2, 3), 4.5, np.float32), STAMP, "base_link")
    assert depth.encoding == "32FC1" and np.frombuffer(bytes(depth.data), np.float32).tolist() == [4.5] * 6


def test_safety_msg():
    msg = cv.safety_msg(BridgeStatus(False, "estop", "e-stop from /estop", True, True), STAMP)
    assert parse(BridgeStatus, to_json(msg)) == BridgeStatus(False, "estop", "e-stop from /estop", True, True, STAMP)
