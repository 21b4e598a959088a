"""The AirSim bridge's core: frames, geographic anchor, client link, motion modes, view source.

No rclpy here, and no AirSim client library until a link is made. The "airsim" view source
registers when `cityseeker_ros.core.sensing.views` is imported.
"""
from __future__ import annotations

from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.client import AirSimLink, CameraFrame, Kinematics
from cityseeker_ros.core.vehicles.airsim.errors import AirSimError
from cityseeker_ros.core.vehicles.airsim.link import AirSimVehicleLink  # registers the "airsim" link
from cityseeker_ros.core.vehicles.airsim.motion import (
    MOTION_MODES,
    FlyMotion,
    GeoPose,
    MotionMode,
    TeleportMotion,
    make_motion_mode,
)

__all__ = ["MOTION_MODES", "AirSimError", "AirSimLink", "AirSimVehicleLink", "Anchor", "CameraFrame", "FlyMotion",
           "GeoPose", "Kinematics",
           "MotionMode", "TeleportMotion", "make_motion_mode"]
