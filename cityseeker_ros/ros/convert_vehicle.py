"""Vehicle messages <-> core types, as pure functions: kinematics to NavSatFix/Odometry (REP 103),
camera frames to Image, CommandMsg <-> core.vehicles.safety.commands, bridge status to SafetyMsg.

Message classes are plain Python (no rclpy, no running graph), so unit tests call these directly.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from nav_msgs.msg import Odometry
from sensor_msgs.msg import CompressedImage, Image, NavSatFix, NavSatStatus
from std_msgs.msg import Header

from cityseeker_ros.core.vehicles.airsim.bridge import BridgeStatus
from cityseeker_ros.core.vehicles.airsim.client import Kinematics
from cityseeker_ros.core.vehicles.airsim.frames import quat_to_matrix
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Command, Goal, Hold, Velocity
from cityseeker_ros.ros.convert import image_to_msg, stamp_to_msg
from cityseeker_ros.ros.schema import CommandMsg, GoalField, HoldField, SafetyMsg, Stamp, VelocityField


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
    c = msg.command
    if isinstance(c, GoalField):
        return Goal(lat=c.lat, lon=c.lon, alt_m=c.alt_m, heading_deg=c.heading_deg, speed_m_s=c.speed_m_s)
    if isinstance(c, VelocityField):
        return Velocity(east_m_s=c.east_m_s, north_m_s=c.north_m_s, up_m_s=c.up_m_s, yaw_rate_deg_s=c.yaw_rate_deg_s)
    return HOLD


def command_to_msg(command: Command, stamp: Stamp, reason: str = "", view_set_id: Optional[str] = None) -> CommandMsg:
    if isinstance(command, Goal):
        field = GoalField(lat=command.lat, lon=command.lon, alt_m=command.alt_m, heading_deg=command.heading_deg,
                          speed_m_s=command.speed_m_s)
    elif isinstance(command, Velocity):
        field = VelocityField(east_m_s=command.east_m_s, north_m_s=command.north_m_s, up_m_s=command.up_m_s,
                              yaw_rate_deg_s=command.yaw_rate_deg_s)
    elif isinstance(command, Hold):
        field = HoldField()
    else:
        raise TypeError(f"not a command: {command!r}")
    return CommandMsg(stamp=stamp, command=field, reason=reason, view_set_id=view_set_id)


def safety_msg(status: BridgeStatus, stamp: Stamp) -> SafetyMsg:
    return SafetyMsg(stamp=stamp, moving=status.moving, code=status.code, reason=status.reason, estop=status.estop)
