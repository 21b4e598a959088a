"""Vehicle conversions (ros/convert_vehicle.py) without a graph: message classes are plain Python."""
from __future__ import annotations

import math

import numpy as np
import pytest

from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.vehicles.airsim.bridge import BridgeStatus
from cityseeker_ros.core.vehicles.airsim.client import Kinematics
from cityseeker_ros.core.vehicles.airsim.frames import quat_from_yaw
from cityseeker_ros.core.vehicles.safety import HOLD, Goal, Velocity
from cityseeker_ros.ros import convert_vehicle as cv
from cityseeker_ros.ros.schema import CommandMsg, parse, to_json

STAMP = Stamp(sec=12, nanosec=5)


def kinematics(yaw_enu: float, velocity=(1.0, 0.0, 0.5)) -> Kinematics:
    return Kinematics(lat=43.7, lon=7.4, alt=12.5, position_enu=(3.0, -4.0, 2.5), velocity_enu=velocity,
                      orientation_enu=quat_from_yaw(yaw_enu), heading_deg=0.0, timestamp_s=0.0)


def test_fix_and_odometry():
    k = kinematics(math.pi / 2)  # facing north
    fix = cv.fix_from_kinematics(k, STAMP)
    assert (fix.latitude, fix.longitude, fix.altitude, fix.header.frame_id) == (43.7, 7.4, 12.5, "base_link")
    odom = cv.odometry_from_kinematics(k, STAMP)
    p = odom.pose.pose.position
    assert (p.x, p.y, p.z) == (3.0, -4.0, 2.5) and odom.header.frame_id == "map"
    assert odom.child_frame_id == "base_link"
    t = odom.twist.twist.linear  # flying east while facing north: to the body's right (-y, FLU)
    assert (t.x, t.y, t.z) == pytest.approx((0.0, -1.0, 0.5), abs=1e-12)


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
