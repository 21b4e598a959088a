"""Compatibility path for nodes/airsim_bridge.py until it becomes the generic `vehicle_bridge` node:
`AirSimBridge` keeps the old control-step API (`step()`, `kinematics()`, `grab()`) over the generic
bridge (core/vehicles/bridge.py) and the AirSim vehicle link (core/vehicles/airsim/link.py). All
safety (gate, motion door, e-stop, watchdog, hold on link loss, hold first) lives in the generic
bridge, on its own threads; `step()` only runs one safety tick now and returns the status.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any, Optional

from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.client import CameraFrame, Kinematics
from cityseeker_ros.core.vehicles.airsim.link import AirSimVehicleLink, BridgeLink, enu_velocity_to_airsim
from cityseeker_ros.core.vehicles.bridge import (
    LINK_ERROR,
    UNSUPPORTED,
    BridgeStatus,
    VehicleBridge,
    status_level,
)
from cityseeker_ros.core.vehicles.link import LinkError
from cityseeker_ros.core.vehicles.safety.codes import Check
from cityseeker_ros.core.vehicles.safety.commands import Command
from cityseeker_ros.core.vehicles.safety.config import SafetyConfig
from cityseeker_ros.core.vehicles.safety.gate import SafetyGate, Verdict
from cityseeker_ros.core.vehicles.safety.geofence import Unfenced

__all__ = ["LINK_ERROR", "UNSUPPORTED", "AirSimBridge", "BridgeLink", "BridgeStatus", "Unfenced",
           "enu_velocity_to_airsim", "status_level", "unguarded_config"]

Clock = Callable[[], float]
LinkFactory = Callable[[str], BridgeLink]  # role "control" or "motion" -> a connected link


class AirSimBridge:
    """The generic bridge over an AirSim vehicle link, with the old node-facing API."""

    def __init__(self, gate: SafetyGate, anchor: Anchor, link_factory: LinkFactory,
                 motion: str = "teleport", motion_params: Optional[Mapping[str, Any]] = None,
                 velocity_period_s: float = 0.5, reconnect_period_s: float = 2.0,
                 state_from_pose: bool = False, clock: Clock = time.monotonic, **bridge: Any) -> None:
        self.anchor, self.motion_name = anchor, motion
        self.link = AirSimVehicleLink(anchor, link_factory, motion, motion_params, velocity_period_s, state_from_pose)
        self.bridge = VehicleBridge(self.link, gate, velocity_period_s=velocity_period_s,
                                    reconnect_period_s=reconnect_period_s, clock=clock, **bridge)
        self.gate = gate

    @property
    def holds(self) -> int:
        return self.bridge.holds

    @property
    def connected(self) -> bool:
        return self.bridge.connected

    @property
    def altitude_m(self) -> Optional[float]:
        state = self.bridge.state
        return None if state is None else state.alt_m

    def step(self, now: Optional[float] = None) -> BridgeStatus:
        """One safety tick now (the safety thread ticks on its own too), after the first connect try."""
        self.bridge.connect_tried.wait(self.bridge.connect_timeout_s + 2.0)
        return self.bridge.tick(now)

    def command(self, command: Command, now: Optional[float] = None) -> Verdict:
        return self.bridge.command(command, now)

    def heartbeat(self, now: Optional[float] = None) -> None:
        self.bridge.heartbeat(now)

    def trip_estop(self, source: str, reason: str = "", held: bool = False) -> None:
        self.bridge.trip_estop(source, reason, held)

    def release_estop(self, source: str) -> None:
        self.bridge.release_estop(source)

    def reset_estop(self) -> Check:
        return self.bridge.reset_estop()

    def kinematics(self) -> Optional[Kinematics]:
        """The vehicle's state read now on the caller's own connection; None while the link is down."""
        self.bridge.connect_tried.wait(self.bridge.connect_timeout_s + 2.0)
        if not self.bridge.connected:
            return None
        try:
            self.link.state()
        except LinkError:
            return None
        return self.link.kinematics

    def grab(self, camera: str, depth: bool = False) -> Optional[CameraFrame]:
        """One camera frame, None while the link is down; a failed grab raises AirSimError."""
        if not self.bridge.connected:
            return None
        return self.link.grab(camera, depth=depth)

    def close(self) -> None:
        self.bridge.close()


def unguarded_config() -> SafetyConfig:
    """Teleport without a safety config: no fence, no ceiling, no heartbeat, no decision watchdog
    (a teleported vehicle does not move between decisions); the e-stop still latches."""
    return SafetyConfig(geofence=Unfenced(), decision_timeout_s=math.inf, heartbeat_timeout_s=None,
                        max_speed_m_s=math.inf, max_vertical_speed_m_s=math.inf, max_altitude_m=math.inf,
                        max_yaw_rate_deg_s=math.inf, min_altitude_m=-math.inf)
