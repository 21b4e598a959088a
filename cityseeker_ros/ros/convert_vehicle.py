"""Vehicle messages <-> core types, as pure functions: kinematics to NavSatFix/Odometry (REP 103),
camera frames to Image, core commands stamped into a CommandMsg and back. The bridge status
(core BridgeStatus) is the safety message itself: ros/typed.py converts it.

Message classes are plain Python (no rclpy, no running graph), so unit tests call these directly.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import numpy as np
from nav_msgs.msg import Odometry
from sensor_msgs.msg import CompressedImage, Image, NavSatFix, NavSatStatus
from std_msgs.msg import Header

from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.vehicles.airsim.bridge import BridgeStatus
from cityseeker_ros.core.vehicles.airsim.client import Kinematics
from cityseeker_ros.core.vehicles.airsim.frames import quat_to_matrix
from cityseeker_ros.core.vehicles.safety.commands import Command, Goal, Hold, Velocity
from cityseeker_ros.ros.convert import image_to_msg, stamp_to_msg
from cityseeker_ros.ros.schema import CommandMsg


def header(stamp: Stamp, frame_id: str) -> Header:
    return Header(stamp=stamp_to_msg(stamp), frame_id=frame_id)


def fix_from_kinematics(k: Kinematics, stamp: Stamp, frame_id: str = "base_link") -> NavSatFix:
    """WGS84 position from the anchored simulator pose; altitude in the anchor's datum, covariance
    unknown (the simulator's pose is exact, but nothing here claims a sensor model)."""
    return NavSatFix(header=header(stamp, frame_id),
                     status=NavSatStatus(status=NavSatStatus.STATUS_FIX, service=NavSatStatus.SERVICE_GPS),
                     latitude=float(k.lat), longitude=float(k.lon), altitude=float(k.alt),
                     position_covariance_type=NavSatFix.COVARIANCE_TYPE_UNKNOWN)


def odometry_from_kinematics(k: Kinematics, stamp: Stamp, frame_id: str = "map",
                             child_frame_id: str = "base_link") -> Odometry:
    """Pose in ENU metres about the anchor (REP 103), FLU body; the twist is in the child frame
    (body), as nav_msgs/Odometry defines it, so the world ENU velocity is rotated into the body."""
    msg = Odometry(header=header(stamp, frame_id), child_frame_id=child_frame_id)
    p = msg.pose.pose.position
    p.x, p.y, p.z = (float(c) for c in k.position_enu)
    q = k.orientation_enu
    o = msg.pose.pose.orientation
    o.w, o.x, o.y, o.z = float(q.w), float(q.x), float(q.y), float(q.z)
    body = quat_to_matrix(q).T @ np.asarray(k.velocity_enu, dtype=float)
    t = msg.twist.twist.linear
    t.x, t.y, t.z = (float(c) for c in body)
    return msg


def camera_image(rgb: np.ndarray, stamp: Stamp, frame_id: str, image_format: str) -> Image | CompressedImage:
    """`raw` gives sensor_msgs/Image; `jpeg`/`png` give CompressedImage (smaller on the wire)."""
    return image_to_msg(rgb, stamp, frame_id, image_format)


def depth_image(depth_m: np.ndarray, stamp: Stamp, frame_id: str) -> Image:
    """32FC1 metres, REP 118's depth encoding."""
    array = np.ascontiguousarray(depth_m, dtype=np.float32)
    h, w = array.shape
    msg = Image(header=header(stamp, frame_id), height=h, width=w, encoding="32FC1",
                is_bigendian=int(array.dtype.byteorder == ">"), step=w * 4)
    msg.data = array.tobytes()
    return msg


def command_from_msg(msg: CommandMsg) -> Command:
    return msg.command


def command_to_msg(command: Command, stamp: Stamp, reason: str = "", view_set_id: Optional[str] = None) -> CommandMsg:
    if not isinstance(command, (Goal, Velocity, Hold)):
        raise TypeError(f"not a command: {command!r}")
    return CommandMsg(stamp=stamp, command=command, reason=reason, view_set_id=view_set_id)


def safety_msg(status: BridgeStatus, stamp: Stamp) -> BridgeStatus:
    """The bridge status as published: stamped."""
    return replace(status, stamp=stamp)
