"""Vehicle messages <-> core types, as pure functions: a link's VehicleState to NavSatFix/Odometry
(REP 103), camera frames to Image, core commands stamped into a CommandMsg and back. The bridge
status (core BridgeStatus) is the safety message itself: ros/typed.py converts it. Nothing here
knows which link the state came from.

Message classes are plain Python (no rclpy, no running graph), so unit tests call these directly.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional

import numpy as np
from nav_msgs.msg import Odometry
from sensor_msgs.msg import CompressedImage, Image, NavSatFix, NavSatStatus
from std_msgs.msg import Header

from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.streets.geodesy import LocalFrame
from cityseeker_ros.core.vehicles.bridge import BridgeStatus
from cityseeker_ros.core.vehicles.link import VehicleState
from cityseeker_ros.core.vehicles.safety.commands import Command, Goal, Hold, Velocity
from cityseeker_ros.ros.convert import image_to_msg, stamp_to_msg
from cityseeker_ros.ros.schema import CommandMsg

Origin = tuple[float, float, float]  # lat, lon, alt of the odometry frame's (0, 0, 0)


def header(stamp: Stamp, frame_id: str) -> Header:
    return Header(stamp=stamp_to_msg(stamp), frame_id=frame_id)


def fix_from_state(state: VehicleState, stamp: Stamp, frame_id: str = "base_link",
                   datum_alt_m: float = 0.0) -> Optional[NavSatFix]:
    """WGS84 position of the vehicle; altitude `datum_alt_m` (home's) plus the height above home,
    covariance unknown (nothing here claims a sensor model). None before the vehicle has a position."""
    if state.lat is None or state.lon is None:
        return None
    alt = math.nan if state.alt_m is None else float(datum_alt_m) + float(state.alt_m)
    return NavSatFix(header=header(stamp, frame_id),
                     status=NavSatStatus(status=NavSatStatus.STATUS_FIX, service=NavSatStatus.SERVICE_GPS),
                     latitude=float(state.lat), longitude=float(state.lon), altitude=alt,
                     position_covariance_type=NavSatFix.COVARIANCE_TYPE_UNKNOWN)


def rotation_enu(roll_deg: float, pitch_deg: float, yaw_deg: float) -> np.ndarray:
    """Body (FLU) -> ENU rotation, yaw counter-clockwise from east (REP 103), Z-Y-X order."""
    r, p, y = (math.radians(a) for a in (roll_deg, pitch_deg, yaw_deg))
    cz, sz, cy, sy, cx, sx = math.cos(y), math.sin(y), math.cos(p), math.sin(p), math.cos(r), math.sin(r)
    return np.array([[cz * cy, cz * sy * sx - sz * cx, cz * sy * cx + sz * sx],
                     [sz * cy, sz * sy * sx + cz * cx, sz * sy * cx - cz * sx],
                     [-sy, cy * sx, cy * cx]])


def quaternion_enu(roll_deg: float, pitch_deg: float, yaw_deg: float) -> tuple[float, float, float, float]:
    """(w, x, y, z) of rotation_enu."""
    r, p, y = (math.radians(a) / 2.0 for a in (roll_deg, pitch_deg, yaw_deg))
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return (cr * cp * cy + sr * sp * sy, sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy)


def odometry_from_state(state: VehicleState, origin: Origin, stamp: Stamp, frame_id: str = "map",
                        child_frame_id: str = "base_link", frame: Optional[LocalFrame] = None) -> Optional[Odometry]:
    """Pose in ENU metres about `origin` (the project's azimuthal-equidistant plane, z the height
    above home plus home's height above the origin, taken as 0), FLU body; the twist is in the body
    frame, as nav_msgs/Odometry defines it. None before the vehicle has a position."""
    if not state.position_known:
        return None
    frame = frame or LocalFrame(origin[0], origin[1])
    east, north = (float(c) for c in frame.to_xy(state.lat, state.lon))
    msg = Odometry(header=header(stamp, frame_id), child_frame_id=child_frame_id)
    p = msg.pose.pose.position
    p.x, p.y, p.z = east, north, float(state.alt_m)
    roll, pitch = state.roll_deg or 0.0, state.pitch_deg or 0.0
    yaw = state.yaw_deg if state.yaw_deg is not None else (
        90.0 - state.heading_deg if state.heading_deg is not None else 0.0)
    o = msg.pose.pose.orientation
    o.w, o.x, o.y, o.z = quaternion_enu(roll, pitch, yaw)
    body = rotation_enu(roll, pitch, yaw).T @ np.asarray(state.velocity_enu, dtype=float)
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
