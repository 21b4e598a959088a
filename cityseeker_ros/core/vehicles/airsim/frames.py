"""AirSim NED/FRD <-> ROS ENU/FLU (REP 103), and the three yaw conventions the stack meets.

AirSim's world frame is NED (x north, y east, z down) with FRD bodies (forward, right, down);
ROS is ENU (x east, y north, z up) with FLU bodies (forward, left, up). Yaw conventions:

- AirSim yaw: radians, clockwise from north (about the down axis);
- ROS yaw: radians, counter-clockwise from east (about the up axis);
- compass heading: degrees clockwise from north in [0, 360), as views and walkable headings use.

Every swap here is its own inverse, so each pair of functions shares one implementation: the
names say which way the caller means, so call sites read right.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


class Quaternion(NamedTuple):
    """A unit quaternion, scalar first; named fields because AirSim (w_val...) and ROS (x, y, z, w)
    disagree on order."""

    w: float
    x: float
    y: float
    z: float


IDENTITY = Quaternion(1.0, 0.0, 0.0, 0.0)
_H = math.sqrt(0.5)
# The world swap NED <-> ENU is a proper rotation: 180 degrees about the (north + east) axis.
_Q_WORLD = Quaternion(0.0, _H, _H, 0.0)
# The body swap FRD <-> FLU: 180 degrees about the forward axis.
_Q_BODY = Quaternion(0.0, 1.0, 0.0, 0.0)


def wrap_pi(angle_rad: float) -> float:
    """Map an angle to [-pi, pi)."""
    return (float(angle_rad) + math.pi) % (2.0 * math.pi) - math.pi


# -- vectors -----------------------------------------------------------------------------------

def ned_to_enu(v) -> np.ndarray:
    """Positions or velocities, shape (..., 3): (n, e, d) -> (e, n, -d)."""
    v = np.asarray(v, dtype=float)
    return np.stack([v[..., 1], v[..., 0], -v[..., 2]], axis=-1)


enu_to_ned = ned_to_enu  # (e, n, u) -> (n, e, -u): the same swap


def frd_to_flu(v) -> np.ndarray:
    """Body-frame vectors, shape (..., 3): (f, r, d) -> (f, -r, -d)."""
    v = np.asarray(v, dtype=float)
    return np.stack([v[..., 0], -v[..., 1], -v[..., 2]], axis=-1)


flu_to_frd = frd_to_flu


# -- quaternions -------------------------------------------------------------------------------

def quat_multiply(a: Quaternion, b: Quaternion) -> Quaternion:
    """Hamilton product a * b (apply b first, then a)."""
    return Quaternion(
        a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
        a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
        a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
        a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
    )


def quat_normalize(q: Quaternion) -> Quaternion:
    """Unit length with w >= 0, so equal rotations compare equal."""
    n = math.sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z)
    if n == 0.0:
        raise ValueError("zero quaternion has no rotation")
    s = (1.0 if q.w >= 0.0 else -1.0) / n
    return Quaternion(q.w * s, q.x * s, q.y * s, q.z * s)


def quat_to_matrix(q: Quaternion) -> np.ndarray:
    """The 3x3 rotation matrix taking body vectors into the world frame."""
    w, x, y, z = quat_normalize(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def quat_from_yaw(yaw_rad: float) -> Quaternion:
    """A level attitude rotated yaw_rad about the world z axis (down in NED, up in ENU)."""
    return Quaternion(math.cos(yaw_rad / 2.0), 0.0, 0.0, math.sin(yaw_rad / 2.0))


def yaw_from_quat(q: Quaternion) -> float:
    """Yaw (Z-Y-X Euler) about the world z axis, in the quaternion's own frame convention."""
    w, x, y, z = q
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def ned_frd_to_enu_flu(q: Quaternion) -> Quaternion:
    """AirSim attitude (FRD body in NED world) -> ROS attitude (FLU body in ENU world).

    R_enu_flu = T_world * R_ned_frd * T_body, both swaps being 180-degree rotations."""
    return quat_normalize(quat_multiply(quat_multiply(_Q_WORLD, q), _Q_BODY))


enu_flu_to_ned_frd = ned_frd_to_enu_flu  # both swaps are their own inverses


# -- yaw and compass heading --------------------------------------------------------------------

def ned_yaw_to_enu_yaw(yaw_ned_rad: float) -> float:
    """Clockwise-from-north -> counter-clockwise-from-east: pi/2 - yaw, wrapped to [-pi, pi)."""
    return wrap_pi(math.pi / 2.0 - yaw_ned_rad)


enu_yaw_to_ned_yaw = ned_yaw_to_enu_yaw  # the reflection is its own inverse


def compass_to_ned_yaw(heading_deg: float) -> float:
    """Compass degrees -> AirSim (NED) yaw radians in [-pi, pi); same sense, same zero."""
    return wrap_pi(math.radians(heading_deg))


def ned_yaw_to_compass(yaw_ned_rad: float) -> float:
    """AirSim (NED) yaw radians -> compass degrees in [0, 360)."""
    h = math.degrees(yaw_ned_rad) % 360.0
    return 0.0 if h >= 360.0 else h


def compass_to_enu_yaw(heading_deg: float) -> float:
    return ned_yaw_to_enu_yaw(compass_to_ned_yaw(heading_deg))


def enu_yaw_to_compass(yaw_enu_rad: float) -> float:
    return ned_yaw_to_compass(enu_yaw_to_ned_yaw(yaw_enu_rad))
